"""Mapping of pyarrow.flight exceptions to SluiceErrors (no server)."""

import pickle

import pyarrow as pa
import pyarrow.flight as flight
import pytest

import sluice
from sluice.errors import error_for_code, from_exception, translated

# What pyarrow 26 raises for each gRPC status a Go Flight server returns,
# captured from a Go server returning status.Error(code, "boom"): the type,
# and the text for a unary call.
UNARY = [
    (flight.FlightCancelledError, "Flight cancelled call, with message: boom", "CANCELLED", sluice.Cancelled),
    (flight.FlightServerError, "Flight RPC failed with message: boom", "UNKNOWN", sluice.SluiceError),
    (pa.ArrowInvalid, "Flight returned invalid argument error, with message: boom", "INVALID_ARGUMENT",
     sluice.InvalidArgument),
    (flight.FlightTimedOutError, "Flight returned timeout error, with message: boom", "DEADLINE_EXCEEDED",
     sluice.DeadlineExceeded),
    (pa.ArrowKeyError, "Flight returned not found error, with message: boom", "NOT_FOUND", sluice.NotFound),
    (pa.ArrowException, "Unknown: Flight returned already exists error, with message: boom", "ALREADY_EXISTS",
     sluice.SluiceError),
    (flight.FlightUnauthorizedError, "Flight returned unauthorized error, with message: boom", "PERMISSION_DENIED",
     sluice.PermissionDenied),
    (pa.ArrowInvalid, "gRPC returned resource exhausted error, with message: boom", "RESOURCE_EXHAUSTED",
     sluice.ResourceExhausted),
    (pa.ArrowInvalid, "gRPC returned precondition failed error, with message: boom", "FAILED_PRECONDITION",
     sluice.FailedPrecondition),
    (flight.FlightInternalError, "gRPC returned aborted error, with message: boom", "ABORTED", sluice.SluiceError),
    (pa.ArrowInvalid, "gRPC returned out-of-range error, with message: boom", "OUT_OF_RANGE", sluice.SluiceError),
    (pa.ArrowNotImplementedError, "Flight returned unimplemented error, with message: boom", "UNIMPLEMENTED",
     sluice.Unimplemented),
    (flight.FlightInternalError, "Flight returned internal error, with message: boom", "INTERNAL", sluice.Internal),
    (flight.FlightUnavailableError, "Flight returned unavailable error, with message: boom", "UNAVAILABLE",
     sluice.Unavailable),
    (flight.FlightInternalError, "gRPC returned data loss error, with message: boom", "DATA_LOSS",
     sluice.SluiceError),
    (flight.FlightUnauthenticatedError, "Flight returned unauthenticated error, with message: boom",
     "UNAUTHENTICATED", sluice.Unauthenticated),
]


def make(typ, text):
    if issubclass(typ, flight.FlightError):
        return typ(text, b"")
    return typ(text)


@pytest.mark.parametrize("typ, text, code, cls", UNARY, ids=[u[2] for u in UNARY])
def test_unary_errors(typ, text, code, cls):
    err = from_exception(make(typ, text))
    assert type(err) is cls
    assert err.code == code
    assert err.message == "boom"
    assert str(err) == f"{code}: boom"


@pytest.mark.parametrize("typ, text, code, cls", UNARY, ids=[u[2] for u in UNARY])
def test_stream_errors_drop_the_debug_context(typ, text, code, cls):
    # A failed stream: pyarrow appends gRPC's debug context to the text.
    text = f"{text}: it's broken. really. gRPC client debug context: {code}:boom: it's broken. really. " \
           "Client context: OK"
    err = from_exception(make(typ, text))
    assert type(err) is cls
    assert err.code == code
    assert err.message == "boom: it's broken. really"


def test_real_server_messages_are_kept_whole():
    # Captured from flightd.
    exc = pa.ArrowInvalid(
        "Flight returned invalid argument error, with message: feed: invalid filter: at position 5: expected a "
        "literal (a 'string', a number, TRUE, FALSE, TIMESTAMP '...' or DATE '...'), found \"=\"")
    err = from_exception(exc)
    assert isinstance(err, sluice.InvalidArgument)
    assert err.message == ("feed: invalid filter: at position 5: expected a literal (a 'string', a number, TRUE, "
                           "FALSE, TIMESTAMP '...' or DATE '...'), found \"=\"")


def test_stream_error_through_a_record_batch_reader_is_an_oserror():
    # pyarrow's FlightStreamReader.to_reader() turns a failed stream into a
    # plain OSError; only the text tells the code.
    exc = OSError("Flight returned internal error, with message: midstream failure. gRPC client debug context: "
                  "INTERNAL:midstream failure. Client context: OK. Detail: Internal")
    err = from_exception(exc)
    assert isinstance(err, sluice.Internal)
    assert err.message == "midstream failure"


def test_do_get_error_before_any_data():
    exc = pa.ArrowInvalid(
        "Flight returned invalid argument error, with message: server: bad request: malformed JSON ChangeRequest: "
        "proto: syntax error (line 1:2): invalid value bad. gRPC client debug context: INVALID_ARGUMENT:server: bad "
        "request: malformed JSON ChangeRequest: proto: syntax error (line 1:2): invalid value bad. Client context: "
        "IOError: Server never sent a data message. Detail: Internal")
    err = from_exception(exc)
    assert err.code == "INVALID_ARGUMENT"
    assert err.message == ("server: bad request: malformed JSON ChangeRequest: proto: syntax error (line 1:2): "
                           "invalid value bad")


def test_the_type_wins_over_a_text_that_disagrees():
    # A server message that itself quotes another error must not change the
    # code that the exception type gives.
    exc = flight.FlightUnavailableError(
        "Flight returned unavailable error, with message: upstream said: Flight returned not found error, "
        "with message: x", b"")
    err = from_exception(exc)
    assert isinstance(err, sluice.Unavailable)


def test_a_message_from_a_python_server_loses_its_traceback():
    exc = pa.ArrowInvalid("bad column x. Detail: Python exception: Traceback (most recent call last):\n"
                          "  File \"server.py\", line 9, in get_flight_info\npyarrow.lib.ArrowInvalid: bad column x\n")
    err = from_exception(exc)
    assert err.code == "INVALID_ARGUMENT"
    assert err.message == "bad column x"


def test_untyped_text_without_code_is_unknown():
    err = from_exception(pa.ArrowException("something odd"))
    assert type(err) is sluice.SluiceError
    assert err.code == "UNKNOWN"
    assert err.message == "something odd"


def test_sluice_errors_pass_through():
    e = sluice.NotFound("x")
    assert from_exception(e) is e


def test_error_for_code():
    assert isinstance(error_for_code("NOT_FOUND", "m"), sluice.NotFound)
    e = error_for_code("ABORTED", "m")
    assert type(e) is sluice.SluiceError and e.code == "ABORTED"


def test_hierarchy():
    for cls in [sluice.InvalidArgument, sluice.NotFound, sluice.FailedPrecondition, sluice.Unauthenticated,
                sluice.PermissionDenied, sluice.ResourceExhausted, sluice.Unavailable, sluice.Unimplemented,
                sluice.Internal, sluice.Cancelled, sluice.DeadlineExceeded]:
        assert issubclass(cls, sluice.SluiceError)
        assert cls("m").code == cls.default_code
    assert issubclass(sluice.InvalidArgument, ValueError)
    assert issubclass(sluice.Unimplemented, NotImplementedError)


def test_errors_pickle():
    e = pickle.loads(pickle.dumps(sluice.NotFound("gone")))
    assert type(e) is sluice.NotFound and e.code == "NOT_FOUND" and e.message == "gone"


def test_translated_chains_the_cause():
    with pytest.raises(sluice.NotFound) as info:
        with translated():
            raise pa.ArrowKeyError("Flight returned not found error, with message: gone")
    assert isinstance(info.value.__cause__, pa.ArrowKeyError)


def test_translated_leaves_other_exceptions_alone():
    with pytest.raises(ZeroDivisionError):
        with translated():
            1 / 0


# One seam end to end: a Flight server in this process raises, the client
# maps what pyarrow hands it.
SERVER_ERRORS = [
    ("invalid", sluice.InvalidArgument, "feed: unknown column: zz"),
    ("notfound", sluice.NotFound, "'catalog: table not found: a.b'"),
    ("unauthenticated", sluice.Unauthenticated, "missing bearer token"),
    ("denied", sluice.PermissionDenied, "not allowed to read a.b"),
    ("unavailable", sluice.Unavailable, "catalog unreachable"),
    ("internal", sluice.Internal, "a bug"),
    ("unimplemented", sluice.Unimplemented, "follow mode is not available"),
    ("cancelled", sluice.Cancelled, "gone"),
    ("timeout", sluice.DeadlineExceeded, "too slow"),
]


@pytest.mark.parametrize("key, cls, message", SERVER_ERRORS, ids=[s[0] for s in SERVER_ERRORS])
def test_errors_from_a_flight_server(client, key, cls, message):
    calls = [lambda: client.changes(f"error.{key}"), lambda: client.commit_seq(f"error.{key}")]
    if key in ("invalid", "notfound", "unimplemented"):
        # pyarrow's Python server sends FlightErrors raised in get_schema
        # as UNKNOWN, so only plain errors go through GetSchema here.
        calls.append(lambda: client.schema(f"error.{key}"))
    for call in calls:
        with pytest.raises(cls) as info:
            call()
        assert info.value.message == message
        assert info.value.code == cls.default_code


def test_older_grpc_renders_the_status_as_the_peers_error():
    # Captured from pyarrow 21 (its gRPC renders the status in the debug
    # context as "Error received from peer ... {grpc_message, grpc_status}").
    exc = OSError(
        'storage went away. Detail: Unavailable. gRPC client debug context: UNKNOWN:Error received from peer '
        'ipv4:127.0.0.1:34055 {grpc_message:"storage went away. Detail: Unavailable", grpc_status:14, '
        'created_time:"2026-12-02T03:04:19.488342452+00:00"}. Client context: OK')
    err = from_exception(exc)
    assert isinstance(err, sluice.Unavailable)
    assert err.code == "UNAVAILABLE"
    assert err.message == "storage went away"
    quoted = OSError(
        'x. gRPC client debug context: UNKNOWN:Error received from peer ipv4:127.0.0.1:1 {created_time:"t", '
        'grpc_status:5, grpc_message:"table \\"a.b\\" not found"}. Client context: OK')
    err = from_exception(quoted)
    assert isinstance(err, sluice.NotFound)
    assert err.message == 'table "a.b" not found'
