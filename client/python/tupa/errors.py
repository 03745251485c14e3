"""Errors of the tupa client: every failed call raises a TupaError.

`code` is the gRPC status code (grpc.StatusCode) and `field` the spec
field or setting the scheduler named (e.g. "resources.gpus"), or None.
Subclasses follow the code, so callers catch what they can act on:

    try:
        client.get(42)
    except tupa.NotFound:
        ...
"""

import re

import grpc

# "resources.gpus: must be between 0 and 1024", "env.A B: ...",
# "train.model.layers[2]: ...": the scheduler's messages start with the field.
_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]*(?:\[\d+\])*(?:\.[^:\s]+)*): ")


class TupaError(Exception):
    """A failed call: message, gRPC code and the field named, if any."""

    code = grpc.StatusCode.UNKNOWN

    def __init__(self, message, code=None, field=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.field = field

    def __str__(self):
        return self.message


class InvalidArgument(TupaError):
    """Bad input: a spec or an argument (`field` names which)."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(TupaError):
    code = grpc.StatusCode.NOT_FOUND


class PermissionDenied(TupaError):
    code = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(TupaError):
    code = grpc.StatusCode.UNAUTHENTICATED


class FailedPrecondition(TupaError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Unavailable(TupaError):
    """The scheduler did not answer (after the client's retries)."""

    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceeded(TupaError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class WaitTimeout(TupaError, TimeoutError):
    """Client.wait ran out of time; the job is still running."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED

    def __init__(self, message, job=None):
        super().__init__(message)
        self.job = job


_BY_CODE = {cls.code: cls for cls in (
    InvalidArgument, NotFound, PermissionDenied, Unauthenticated,
    FailedPrecondition, Unavailable, DeadlineExceeded)}


def field_of(message):
    """The field a scheduler message starts with ("resources.gpus"), or None."""
    m = _FIELD.match(message or "")
    return m.group(1) if m else None


def from_rpc_error(err, target=None):
    """The TupaError for a grpc.RpcError."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    message = (err.details() if hasattr(err, "details") else None) or str(err)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and target:
        message = f"scheduler at {target} unreachable: {message}"
    cls = _BY_CODE.get(code, TupaError)
    field = field_of(message) if code == grpc.StatusCode.INVALID_ARGUMENT else None
    return cls(message, code=code, field=field)


def invalid(field, what):
    """InvalidArgument "FIELD: WHAT" raised before anything is sent."""
    return InvalidArgument(f"{field}: {what}", field=field)
