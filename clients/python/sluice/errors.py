"""Errors of the Sluice client.

Every failure of a Sluice call -- from the server, from the network, or a
request the client refuses to send -- is raised as a :class:`SluiceError`
(only arguments of the wrong type raise ``TypeError`` instead)
whose :attr:`~SluiceError.code` is the gRPC status code name (for example
``"NOT_FOUND"``) and whose :attr:`~SluiceError.message` is the server's
message, without the decoration pyarrow adds around it.

The subclasses follow the error table of the wire protocol
(docs/PROTOCOL.md, section 12)::

    try:
        reader = client.changes("demo.orders", from_snapshot=42)
    except sluice.NotFound as e:
        ...                      # unknown table or snapshot
    except sluice.FailedPrecondition as e:
        ...                      # resync required: re-read the table
    except sluice.SluiceError as e:
        print(e.code, e.message)

pyarrow maps gRPC status codes onto its own exception types, several codes
onto one type (``INVALID_ARGUMENT``, ``FAILED_PRECONDITION`` and
``RESOURCE_EXHAUSTED`` all become ``pyarrow.ArrowInvalid``). The mapping here
takes the exception type first and uses the text of the exception only to
tell such codes apart and to recover the server's message.
"""

from __future__ import annotations

import contextlib
import re
from typing import Dict, Iterator, Optional, Tuple, Type

import pyarrow as pa
import pyarrow.flight as flight

__all__ = [
    "SluiceError",
    "InvalidArgument",
    "NotFound",
    "FailedPrecondition",
    "Unauthenticated",
    "PermissionDenied",
    "ResourceExhausted",
    "Unavailable",
    "Unimplemented",
    "Internal",
    "Cancelled",
    "DeadlineExceeded",
    "error_for_code",
    "from_exception",
]


class SluiceError(Exception):
    """A failed Sluice call.

    Attributes:
        code: The gRPC status code name, e.g. ``"NOT_FOUND"``; ``"UNKNOWN"``
            when the cause carries no code.
        message: The server's message (or the client's, for a request that
            was refused before it was sent), without pyarrow's decoration.
    """

    #: The code of errors of this class; SluiceError itself takes any code.
    default_code = "UNKNOWN"

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        """Create an error with a message and a gRPC code name.

        Args:
            message: The human-readable message.
            code: The gRPC code name; defaults to the class's code.
        """
        self.code: str = code or self.default_code
        self.message: str = message
        super().__init__(message)

    def __str__(self) -> str:
        """Return ``"<CODE>: <message>"``."""
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        """Return the class, code and message."""
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"

    def __reduce__(self) -> Tuple[Type["SluiceError"], Tuple[str, str]]:  # keep code and message through pickling
        """Support pickling (for multiprocessing and friends)."""
        return (type(self), (self.message, self.code))


class InvalidArgument(SluiceError, ValueError):
    """A malformed request: unknown column, bad filter, a window whose start
    is not an ancestor of its end, a bad option value. Also a ``ValueError``."""

    default_code = "INVALID_ARGUMENT"


class NotFound(SluiceError):
    """An unknown table or snapshot."""

    default_code = "NOT_FOUND"


class FailedPrecondition(SluiceError):
    """The request cannot be served in the table's current state: a snapshot
    expired or its files are gone (resync required), an unsupported table
    feature, or a call on a closed client."""

    default_code = "FAILED_PRECONDITION"


class Unauthenticated(SluiceError):
    """No or bad credentials."""

    default_code = "UNAUTHENTICATED"


class PermissionDenied(SluiceError):
    """The caller may not read this table."""

    default_code = "PERMISSION_DENIED"


class ResourceExhausted(SluiceError):
    """A server limit was reached (or a message exceeded a size limit)."""

    default_code = "RESOURCE_EXHAUSTED"


class Unavailable(SluiceError):
    """The server, or its catalog or storage, cannot be reached."""

    default_code = "UNAVAILABLE"


class Unimplemented(SluiceError, NotImplementedError):
    """A feature this server does not offer (yet). Also a
    ``NotImplementedError``."""

    default_code = "UNIMPLEMENTED"


class Internal(SluiceError):
    """A server bug or an inconsistent response."""

    default_code = "INTERNAL"


class Cancelled(SluiceError):
    """The call was cancelled."""

    default_code = "CANCELLED"


class DeadlineExceeded(SluiceError):
    """The call did not finish within its timeout."""

    default_code = "DEADLINE_EXCEEDED"


_CLASSES: Dict[str, Type[SluiceError]] = {
    cls.default_code: cls
    for cls in (
        InvalidArgument,
        NotFound,
        FailedPrecondition,
        Unauthenticated,
        PermissionDenied,
        ResourceExhausted,
        Unavailable,
        Unimplemented,
        Internal,
        Cancelled,
        DeadlineExceeded,
    )
}

#: Every gRPC status code name but OK.
CODES = (
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)


def error_for_code(code: str, message: str) -> SluiceError:
    """Return the error of the class that matches a gRPC code name.

    Codes without a class of their own (``ALREADY_EXISTS``, ``ABORTED``,
    ``OUT_OF_RANGE``, ``DATA_LOSS``, ``UNKNOWN``) give a plain
    :class:`SluiceError` carrying the code.

    Args:
        code: A gRPC code name such as ``"NOT_FOUND"``.
        message: The message.
    """
    return _CLASSES.get(code, SluiceError)(message, code)


# How pyarrow words each gRPC code in the text of the exception it raises:
# "Flight returned not found error, with message: ...",
# "gRPC returned precondition failed error, with message: ...".
_KINDS = {
    "invalid argument": "INVALID_ARGUMENT",
    "not found": "NOT_FOUND",
    "already exists": "ALREADY_EXISTS",
    "unauthorized": "PERMISSION_DENIED",
    "unauthenticated": "UNAUTHENTICATED",
    "resource exhausted": "RESOURCE_EXHAUSTED",
    "precondition failed": "FAILED_PRECONDITION",
    "aborted": "ABORTED",
    "out-of-range": "OUT_OF_RANGE",
    "unimplemented": "UNIMPLEMENTED",
    "internal": "INTERNAL",
    "unavailable": "UNAVAILABLE",
    "data loss": "DATA_LOSS",
    "timeout": "DEADLINE_EXCEEDED",
    "unknown": "UNKNOWN",
}

_PREFIX = re.compile(
    r"(?:Flight|gRPC) (?:returned (?P<kind>[a-z][a-z -]*?) error,|(?P<cancelled>cancelled call),|"
    r"(?P<failed>RPC failed)) with message: "
)
# gRPC's own rendering of the status, appended by pyarrow to stream errors:
# "... gRPC client debug context: NOT_FOUND:<message>. Client context: ...".
_DEBUG = re.compile(r"\.? ?gRPC client debug context: (?P<code>[A-Z_]+):")
_DETAIL = re.compile(r"\. Detail: .*\Z", re.S)
# Older gRPC (pyarrow < 26) renders the status in the debug context as the
# peer's error: "Error received from peer ipv4:... {grpc_message:"...",
# grpc_status:14, created_time:"..."}".
_PEER = re.compile(r"Error received from peer [^{]*\{(?P<body>.*)\}", re.S)
_PEER_STATUS = re.compile(r"grpc_status:(?P<n>\d+)")
_PEER_MESSAGE = re.compile(r'grpc_message:"(?P<m>(?:[^"\\]|\\.)*)"')
_STATUS_NAMES = (
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
)
# The status-code word Arrow puts in front of some messages ("Invalid: ...").
_ARROW_STATUS = re.compile(r"^(?:Unknown error|Unknown|Invalid|IOError|Key error|NotImplemented|Cancelled): ")

# The codes an exception type can stand for, the first being its default.
# pyarrow folds several gRPC codes into one exception type; the text then
# tells which one it was.
_TYPE_CODES: Tuple[Tuple[type, Tuple[str, ...]], ...] = (
    (flight.FlightUnauthenticatedError, ("UNAUTHENTICATED",)),
    (flight.FlightUnauthorizedError, ("PERMISSION_DENIED",)),
    (flight.FlightUnavailableError, ("UNAVAILABLE",)),
    (flight.FlightTimedOutError, ("DEADLINE_EXCEEDED",)),
    (flight.FlightCancelledError, ("CANCELLED",)),
    (flight.FlightInternalError, ("INTERNAL", "ABORTED", "DATA_LOSS")),
    (flight.FlightServerError, ("UNKNOWN",)),
    (pa.ArrowKeyError, ("NOT_FOUND", "ALREADY_EXISTS")),
    (pa.ArrowNotImplementedError, ("UNIMPLEMENTED",)),
    (pa.ArrowInvalid, ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "OUT_OF_RANGE")),
    (pa.ArrowCancelled, ("CANCELLED",)),
)


def _parse(text: str) -> Tuple[Optional[str], str]:
    """Split pyarrow's rendering of a status into its code and message."""
    code: Optional[str] = None
    message = text
    m = _PREFIX.search(text)
    if m:
        if m.group("cancelled"):
            code = "CANCELLED"
        elif m.group("failed"):
            code = "UNKNOWN"
        else:
            code = _KINDS.get(m.group("kind"))
        message = text[m.end():]
    d = _DEBUG.search(message)
    if d:
        if d.group("code") in CODES:
            code = d.group("code")
        if m:
            message = message[: d.start()]
        else:
            # No prefix: the debug context holds the only clean message.
            rest = message[d.end():]
            cut = rest.find(". Client context:")
            message = rest if cut < 0 else rest[:cut]
            peer = _PEER.match(message)
            if peer:
                # Older gRPC: the status's own fields.
                st, msg = _PEER_STATUS.search(peer.group("body")), _PEER_MESSAGE.search(peer.group("body"))
                if st and int(st.group("n")) < len(_STATUS_NAMES):
                    code = _STATUS_NAMES[int(st.group("n"))]
                if msg:
                    message = msg.group("m").replace('\\"', '"').replace("\\\\", "\\")
    message = _DETAIL.sub("", message)
    if not m:
        message = _ARROW_STATUS.sub("", message)
    return code, message.strip()


def from_exception(exc: BaseException) -> SluiceError:
    """Map an exception raised by pyarrow.flight to a :class:`SluiceError`.

    The exception type gives the code; where pyarrow uses one type for
    several codes the text of the exception picks among them. The text also
    gives the server's message, stripped of pyarrow's prefix and of the
    gRPC debug context. A :class:`SluiceError` is returned as is.

    Args:
        exc: The exception pyarrow raised.

    Returns:
        The error to raise in its place (the caller chains ``exc`` to it).
    """
    if isinstance(exc, SluiceError):
        return exc
    text_code, message = _parse(str(exc))
    code = None
    for typ, codes in _TYPE_CODES:
        if isinstance(exc, typ):
            code = text_code if text_code in codes else codes[0]
            break
    if code is None:
        # A generic type (OSError from a stream, ArrowException): only the
        # text can tell.
        code = text_code or "UNKNOWN"
    if not message:
        message = type(exc).__name__
    return error_for_code(code, message)


#: The exceptions that :func:`translated` maps: those pyarrow.flight raises.
PYARROW_ERRORS = (pa.ArrowException, flight.FlightError, OSError)


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Context manager that re-raises pyarrow errors as SluiceErrors."""
    try:
        yield
    except SluiceError:
        raise
    except PYARROW_ERRORS as exc:
        raise from_exception(exc) from exc
