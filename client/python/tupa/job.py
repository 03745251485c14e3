"""Job: a read-only view of a tupa.v1.Job with Python names.

`state` is the state's short name ("RUNNING"); every other attribute is the
protobuf message's (id, spec, attempt, message, exit_code, progress, cost,
currency, ...). `proto` is the message itself.
"""

from tupa.v1 import job_pb2

TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


class Job:
    __slots__ = ("proto",)

    def __init__(self, proto):
        self.proto = proto

    @property
    def state(self):
        return job_pb2.JobState.Name(self.proto.state).replace("JOB_STATE_", "")

    @property
    def done(self):
        return self.state in TERMINAL

    def __getattr__(self, name):
        return getattr(self.proto, name)

    def __repr__(self):
        return f"Job(id={self.proto.id}, name={self.proto.spec.name!r}, state={self.state})"


class JobArray:
    """A submitted job array: `id` (for list/tasks/cancel_array/wait_array
    and cost(by="array")), `size` (tasks) and `first` (its first task, a
    Job). Each task is a Job whose spec.array holds array_id and index."""

    __slots__ = ("id", "size", "first")

    def __init__(self, array_id, size, first):
        self.id = array_id
        self.size = size
        self.first = first

    def __repr__(self):
        return f"JobArray(id={self.id}, size={self.size}, first={self.first.id})"
