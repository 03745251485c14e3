"""Client: the CLI's verbs for notebooks and scripts (DESIGN §3).

    import tupa
    c = tupa.Client()                      # TUPA_SCHEDULER, TUPA_TOKEN, TUPA_TLS_*
    job = c.submit("job.yaml", gpus=2, env={"LR": "0.01"})
    for line in c.logs(job.id):            # follows until the job ends
        print(line)
    job = c.wait(job.id, timeout=3600)
    sweep = c.submit_array({"command": ["train.sh", "--lr-index", "{{index}}"]},
                           "0-99%10")       # 100 tasks, at most 10 running
    tasks = c.wait_array(sweep.id)

Every call has a deadline; UNAVAILABLE is retried for `retry_for` seconds
(a submit keeps one idempotency key across its retries, so it never makes
two jobs). Failures raise tupa.TupaError subclasses carrying the gRPC code
and the field named. Thread-safe as grpc channels are.
"""

import datetime
import os
import time
import uuid

import grpc
from google.protobuf import timestamp_pb2

from tupa import errors, spec as specs
from tupa.job import Job, JobArray, TERMINAL
from tupa.v1 import job_pb2, job_service_pb2, job_service_pb2_grpc

DEFAULT_SCHEDULER = "localhost:50051"
_RETRYABLE = (grpc.StatusCode.UNAVAILABLE,)
_ARRAY_LIMIT = 10000  # the scheduler's largest array
_SINCE = {"h": 3600, "d": 86400, "w": 7 * 86400}


def _read(path, what):
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise errors.invalid(what, f"cannot read {path}: {e.strerror}") from None


class Client:
    """A connection to one scheduler.

    scheduler: host:port (default $TUPA_SCHEDULER, else localhost:50051).
    token: bearer token (default $TUPA_TOKEN).
    tls_ca, tls_cert, tls_key: PEM file paths (default $TUPA_TLS_CA,
      $TUPA_TLS_CERT, $TUPA_TLS_KEY); TLS when any is given, mTLS with a
      certificate and key, as the CLI.
    timeout: seconds each call may take; retry_for: seconds UNAVAILABLE is
      retried.
    """

    def __init__(self, scheduler=None, token=None, tls_ca=None, tls_cert=None,
                 tls_key=None, timeout=30.0, retry_for=10.0):
        env = os.environ
        self.target = scheduler or env.get("TUPA_SCHEDULER") or DEFAULT_SCHEDULER
        self.token = token if token is not None else env.get("TUPA_TOKEN", "")
        if self.token and any(c.isspace() or not c.isprintable() or ord(c) > 126
                              for c in self.token):
            raise errors.invalid("TUPA_TOKEN", "contains a space, control or non-ASCII character")
        ca = _read(tls_ca or env.get("TUPA_TLS_CA"), "tls_ca")
        cert = _read(tls_cert or env.get("TUPA_TLS_CERT"), "tls_cert")
        key = _read(tls_key or env.get("TUPA_TLS_KEY"), "tls_key")
        if bool(cert) != bool(key):
            raise errors.invalid("tls_cert", "give the certificate and its key together")
        self.timeout = timeout
        self.retry_for = retry_for
        options = [("grpc.max_receive_message_length", 64 << 20),
                   ("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 2000),
                   ("grpc.enable_retries", 0)]
        if ca or cert:
            creds = grpc.ssl_channel_credentials(
                root_certificates=ca, private_key=key, certificate_chain=cert)
            self._channel = grpc.secure_channel(self.target, creds, options)
        else:
            self._channel = grpc.insecure_channel(self.target, options)
        self._jobs = job_service_pb2_grpc.JobServiceStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ plumbing
    def _metadata(self):
        return [("authorization", f"Bearer {self.token}")] if self.token else None

    def _call(self, method, request):
        give_up = time.monotonic() + self.retry_for
        backoff = 0.1
        while True:
            try:
                return method(request, timeout=self.timeout, metadata=self._metadata())
            except grpc.RpcError as e:
                if e.code() not in _RETRYABLE or time.monotonic() + backoff > give_up:
                    raise errors.from_rpc_error(e, self.target) from None
            time.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    # ------------------------------------------------------------ verbs
    def submit(self, spec, idempotency_key=None, **overrides):
        """Submits a job; returns it as committed (a Job).

        spec: a dict shaped like the YAML spec, a path to a YAML file, or
          YAML text. overrides: the CLI's flags as keywords (name, team,
          priority, gpus, nodes, gpu_type, cpu, memory, max_runtime,
          max_cost, retries, launch, command, env (merged), ...).
        Raises InvalidArgument naming the field for a bad spec.
        """
        job_spec = specs.build(spec, overrides)
        request = job_service_pb2.SubmitJobRequest(
            spec=job_spec, idempotency_key=idempotency_key or f"py-{uuid.uuid4()}")
        return Job(self._call(self._jobs.SubmitJob, request).job)

    def submit_array(self, spec, array, idempotency_key=None, **overrides):
        """Submits a job array: one task per index, committed together or
        not at all; returns a JobArray (id, size, first task).

        array: Slurm's syntax, e.g. "0-99", "0-99%10" (at most 10 running
          at once), "1,3,8-16:4". Each task's `{{index}}` in the command,
          env values and name is replaced by its index, and the task gets
          TUPA_ARRAY_JOB_ID and TUPA_ARRAY_INDEX.
        spec and overrides as for submit(). A spec given as YAML (a path or
        text) with no overrides is sent as text and `{{index}}` may stand
        anywhere in it (e.g. `seed: {{index}}`); the scheduler substitutes
        before parsing. Raises InvalidArgument naming "array" for a bad
        expression.
        """
        if not isinstance(array, str) or not array.strip():
            raise errors.invalid("array", "give the indexes as text, e.g. \"0-99%10\"")
        request = job_service_pb2.SubmitJobRequest(
            array=array.strip(), idempotency_key=idempotency_key or f"py-{uuid.uuid4()}")
        text = None if overrides else specs.yaml_text(spec)
        if text is not None:
            request.spec_yaml = text
        else:
            request.spec.CopyFrom(specs.build(spec, overrides))
        response = self._call(self._jobs.SubmitJob, request)
        return JobArray(response.array_id, response.array_size, Job(response.job))

    def get(self, job_id):
        """The job (a Job); NotFound when there is none."""
        return Job(self._call(self._jobs.GetJob, job_service_pb2.GetJobRequest(id=int(job_id))))

    def list(self, state=None, user=None, team=None, limit=0, array_id=0):
        """Jobs, newest first; state: a name ("RUNNING") or a list of them;
        array_id: only that job array's tasks (every one, each a Job)."""
        states = [state] if isinstance(state, str) else list(state or [])
        request = job_service_pb2.ListJobsRequest(
            states=[_state_value(s) for s in states], user=user or "", team=team or "",
            limit=limit, array_id=int(array_id))
        return [Job(j) for j in self._call(self._jobs.ListJobs, request).jobs]

    def tasks(self, array_id, state=None):
        """The tasks of a job array, in index order; NotFound when there is
        no such array."""
        size = _ARRAY_LIMIT
        jobs = self.list(state=state, array_id=array_id, limit=size)
        if not jobs and state is None:
            raise errors.NotFound(f"job array {array_id} not found",
                                  code=grpc.StatusCode.NOT_FOUND)
        return sorted(jobs, key=lambda j: j.proto.spec.array.index)

    def cancel_array(self, array_id, reason=""):
        """Cancels every task of the array that has not ended; returns how
        many this call ended."""
        request = job_service_pb2.CancelArrayRequest(array_id=int(array_id), reason=reason)
        return self._call(self._jobs.CancelArray, request).cancelled

    def wait_array(self, array_id, timeout=None, poll=1.0):
        """Blocks until every task of the array has ended; returns the tasks
        in index order (check each state). Raises WaitTimeout after
        `timeout` seconds, carrying the tasks as last seen in `job`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            tasks = self.tasks(array_id)
            if all(t.done for t in tasks):
                return tasks
            if deadline is not None and time.monotonic() >= deadline:
                left = sum(1 for t in tasks if not t.done)
                raise errors.WaitTimeout(
                    f"job array {array_id}: {left} of {len(tasks)} tasks not ended "
                    f"after {timeout}s", job=tasks)
            time.sleep(poll if deadline is None else
                       max(0.0, min(poll, deadline - time.monotonic())))

    def cancel(self, job_id, reason=""):
        """Cancels a job; returns it."""
        request = job_service_pb2.CancelJobRequest(id=int(job_id), reason=reason)
        return Job(self._call(self._jobs.CancelJob, request))

    def wait(self, job_id, timeout=None):
        """Blocks until the job ends; returns it (check job.state).

        Raises WaitTimeout (a TimeoutError) after `timeout` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        last = None
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise errors.WaitTimeout(
                    f"job {job_id} still {last.state if last else 'unknown'} after {timeout}s",
                    job=last)
            stream = self._jobs.WatchJob(job_service_pb2.GetJobRequest(id=int(job_id)),
                                         timeout=left, metadata=self._metadata())
            try:
                for update in stream:
                    last = Job(update)
                    if last.state in TERMINAL:
                        return last
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    continue  # the loop's check raises WaitTimeout
                if e.code() not in _RETRYABLE:
                    raise errors.from_rpc_error(e, self.target) from None
                time.sleep(0.5)  # scheduler restarting: watch again

    def logs(self, job_id, follow=True, rank=-1, attempt=0, with_rank=False):
        """Iterates over the lines the job's ranks write (str, no newline).

        follow: keep going until the job ends. rank: one rank, or -1 for
        all. with_rank: yield (rank, line) pairs instead.
        """
        request = job_service_pb2.StreamLogsRequest(
            id=int(job_id), follow=follow, rank=rank, attempt=attempt)
        partial = {}
        try:
            for chunk in self._jobs.StreamLogs(request, metadata=self._metadata(),
                                               timeout=None if follow else self.timeout):
                text = partial.pop(chunk.rank, "") + chunk.data.decode("utf-8", "replace")
                *lines, rest = text.split("\n")
                if rest:
                    partial[chunk.rank] = rest
                for line in lines:
                    yield (chunk.rank, line) if with_rank else line
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e, self.target) from None
        for r, rest in sorted(partial.items()):
            yield (r, rest) if with_rank else rest

    def why(self, job_id):
        """Why a job is pending: WhyJobResponse (reason_code, message,
        jobs_ahead, estimated_start)."""
        return self._call(self._jobs.WhyJob, job_service_pb2.GetJobRequest(id=int(job_id)))

    def estimate(self, spec, **overrides):
        """Cost and finish time per GPU type and region before submitting
        (EstimateJobResponse, cheapest first)."""
        request = job_service_pb2.EstimateJobRequest(spec=specs.build(spec, overrides))
        return self._call(self._jobs.EstimateJob, request)

    def cost(self, by="team", since="7d", until=None):
        """The cost report (CostReport: currency, rows, total, idle_cost).

        by: team, user, gpu-type, region, day, job or array. since: "7d", "24h",
        "2w" or a datetime; until: a datetime (default now).
        """
        request = job_service_pb2.CostReportRequest(group_by=by)
        if since is not None:
            request.since.CopyFrom(_timestamp(since, "since"))
        if until is not None:
            request.until.CopyFrom(_timestamp(until, "until"))
        return self._call(self._jobs.GetCostReport, request)


def _state_value(name):
    key = str(name).upper()
    if not key.startswith("JOB_STATE_"):
        key = "JOB_STATE_" + key
    try:
        return job_pb2.JobState.Value(key)
    except ValueError:
        raise errors.invalid("state", f"unknown state \"{name}\" (PENDING, ASSIGNED, "
                                      "RUNNING, SUCCEEDED, FAILED, CANCELLED)") from None


def _timestamp(value, field):
    ts = timestamp_pb2.Timestamp()
    if isinstance(value, datetime.datetime):
        ts.FromDatetime(value.astimezone(datetime.timezone.utc))
        return ts
    text = str(value)
    unit = text[-1:]
    try:
        amount = float(text[:-1])
    except ValueError:
        amount = None
    if unit not in _SINCE or amount is None or amount < 0:
        raise errors.invalid(field, f"bad age \"{text}\" (expected e.g. 24h, 7d, 2w)")
    ts.FromSeconds(int(time.time() - amount * _SINCE[unit]))
    return ts
