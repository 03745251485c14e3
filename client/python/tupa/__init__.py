"""tupa: the Python client of the tupa GPU training scheduler.

    import tupa
    client = tupa.Client()
    job = client.submit({"name": "hello", "command": ["echo", "hi"]})
    print(client.wait(job.id).state)

See client/python/README.md.
"""

from tupa import spec
from tupa.client import Client
from tupa.errors import (DeadlineExceeded, FailedPrecondition, InvalidArgument,
                         NotFound, PermissionDenied, TupaError, Unauthenticated,
                         Unavailable, WaitTimeout)
from tupa.job import TERMINAL, Job, JobArray

__all__ = ["Client", "Job", "JobArray", "TERMINAL", "TupaError", "InvalidArgument", "NotFound",
           "PermissionDenied", "Unauthenticated", "FailedPrecondition",
           "Unavailable", "DeadlineExceeded", "WaitTimeout"]
