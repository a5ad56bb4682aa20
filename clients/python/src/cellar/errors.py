"""Exceptions raised by the client, one per gRPC status a caller can act on."""

from __future__ import annotations

import re
from typing import Dict, Optional, Type

import grpc


class Error(Exception):
    """Base class of every error the Cellar client raises.

    ``code`` is the gRPC status code of the failed call (``None`` for errors found by the
    client itself), ``details`` the server's message.
    """

    def __init__(self, details: str, code: Optional[grpc.StatusCode] = None) -> None:
        super().__init__(details)
        self.details = details
        self.code = code


class NotFound(Error):
    """A table (or another named object) does not exist."""


class AlreadyExists(Error):
    """A table to create exists already."""


class InvalidArgument(Error):
    """The request was malformed: an unknown family, a bad filter, an empty row key..."""


class Unauthenticated(Error):
    """The server wants a bearer token and got none or a wrong one."""


class PermissionDenied(Error):
    """The token is valid but not allowed to do this."""


class Unavailable(Error):
    """The server cannot be reached or is shutting down; the call may be retried."""


class ResourceExhausted(Error):
    """A request or reply was over a server limit (size, scanners, connections)."""


class DeadlineExceeded(Error):
    """The call took longer than the connection's ``timeout``."""


class FailedPrecondition(Error):
    """The table is in a state that refuses the call (e.g. disabled)."""


class HqlError(Error):
    """An HQL statement failed.

    ``line`` is the 1-based line of the failed statement when the server's message names
    it, ``output`` the output of the statements that ran before it.
    """

    def __init__(self, details: str, output: str = "", line: Optional[int] = None) -> None:
        super().__init__(details)
        self.output = output
        self.line = line


_BY_CODE: Dict[grpc.StatusCode, Type[Error]] = {
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgument,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
}


def from_rpc_error(err: grpc.RpcError) -> Error:
    """The client exception for a failed gRPC call."""
    code: Optional[grpc.StatusCode] = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else None
    message = details or (code.name if code is not None else str(err))
    cls = _BY_CODE.get(code, Error) if code is not None else Error
    return cls(message, code)


_LINE = re.compile(r"\bline (\d+)")


def hql_error(message: str, output: str) -> HqlError:
    """An :class:`HqlError` for the shell's error message, with the line it names."""
    found = _LINE.search(message)
    return HqlError(message, output=output, line=int(found.group(1)) if found else None)
