"""A tiny in-process Flight server that plays Sluice for the unit tests.

It is not Sluice: it answers with canned data and raises the errors a test
asks for, so that the client's seam to pyarrow.flight can be tested without
the real server.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any, Callable, Dict, List, Optional, Set

import pyarrow as pa
import pyarrow.flight as flight
import pytest

DATA = pa.struct([("id", pa.int64()), ("name", pa.string())])
SCHEMA = pa.schema([
    pa.field("op", pa.string(), nullable=False),
    pa.field("before", DATA),
    pa.field("after", DATA),
    pa.field("snapshot", pa.int64()),
    pa.field("ts", pa.timestamp("us", tz="UTC")),
])

# The exceptions a request for table "error.<key>" makes the server raise.
ERRORS = {
    "invalid": lambda: pa.ArrowInvalid("feed: unknown column: zz"),
    "notfound": lambda: KeyError("catalog: table not found: a.b"),
    "unauthenticated": lambda: flight.FlightUnauthenticatedError("missing bearer token"),
    "denied": lambda: flight.FlightUnauthorizedError("not allowed to read a.b"),
    "unavailable": lambda: flight.FlightUnavailableError("catalog unreachable"),
    "internal": lambda: flight.FlightInternalError("a bug"),
    "unimplemented": lambda: NotImplementedError("follow mode is not available"),
    "cancelled": lambda: flight.FlightCancelledError("gone"),
    "timeout": lambda: flight.FlightTimedOutError("too slow"),
}


def change_batch(ids: List[int], snapshot: int) -> pa.RecordBatch:
    """A batch of inserts of the given ids."""
    n = len(ids)
    after = pa.array([{"id": i, "name": f"n{i}"} for i in ids], type=DATA)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(["insert"] * n),
            pa.nulls(n, type=DATA),
            after,
            pa.array([snapshot] * n, type=pa.int64()),
            pa.array([1_700_000_000_000_000 + snapshot] * n, type=pa.timestamp("us", tz="UTC")),
        ],
        schema=SCHEMA,
    )


# Ids a float64 cannot hold: above 2**53, and the largest int64.
BIG_IDS = [2**53 + 1, 2**53 + 3, 2**63 - 1]


def big_id_changes() -> pa.RecordBatch:
    """Net changes of BIG_IDS as flightd sends them: an insert (before null),
    an update and a delete (after null), the fields of a null image null
    too, the way Arrow builders write them."""
    def image(ids: List[Any], valid: List[bool]) -> pa.StructArray:
        return pa.StructArray.from_arrays(
            [pa.array(ids, pa.int64()), pa.array([None if i is None else f"n{i}" for i in ids])],
            names=["id", "name"], mask=pa.array([not v for v in valid]))

    a, b, c = BIG_IDS
    return pa.RecordBatch.from_arrays(
        [
            pa.array(["insert", "update", "delete"]),
            image([None, b, c], [False, True, True]),
            image([a, b, None], [True, True, False]),
            pa.array([7, 7, 7], type=pa.int64()),
            pa.array([1_700_000_000_000_007] * 3, type=pa.timestamp("us", tz="UTC")),
        ],
        schema=SCHEMA,
    )


def meta(snapshot: int, complete: bool, rows: int, **extra: Any) -> bytes:
    return json.dumps({"snapshot": snapshot, "commit_seq": snapshot, "snapshot_complete": complete,
                       "timestamp_ms": 1_700_000_000_000 + snapshot, "rows": rows, **extra}).encode()


class RecordHeaders(flight.ServerMiddlewareFactory):
    """Records the headers of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: List[Dict[str, Any]] = []
        self._lock = threading.Lock()

    def start_call(self, info, headers):
        with self._lock:
            self.calls.append({"method": info.method, "headers": headers})
        return None


USER, PASSWORD = "alice", "correct horse battery staple"


class BearerHeader(flight.ServerMiddleware):
    """Sends the token a Handshake issued back as its response header."""

    def __init__(self, token: str) -> None:
        self.token = token

    def sending_headers(self):
        return {"authorization": f"Bearer {self.token}"}


class BasicAuth(flight.ServerMiddlewareFactory):
    """The basic-auth Handshake and the bearer tokens it issues, as flightd
    in mode basic without --auth-secret-file: restart() draws a new secret,
    and every token issued before is refused. Methods in ``refuse`` are
    refused even with a valid token."""

    def __init__(self) -> None:
        super().__init__()
        self.secret = 0
        self.handshakes = 0
        self.refuse: Set[Any] = set()
        self._lock = threading.Lock()

    def restart(self) -> None:
        with self._lock:
            self.secret += 1

    def start_call(self, info, headers):
        auth = (headers.get("authorization") or [""])[0]
        with self._lock:
            if info.method == flight.FlightMethod.HANDSHAKE:
                want = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
                if auth != want:
                    raise flight.FlightUnauthenticatedError("wrong user name or password")
                self.handshakes += 1
                return BearerHeader(f"tok-{self.secret}-{self.handshakes}")
            if not auth.startswith(f"Bearer tok-{self.secret}-"):
                raise flight.FlightUnauthenticatedError("unknown bearer token")
            if info.method in self.refuse:
                raise flight.FlightUnauthenticatedError("refused by the test")
        return None


class NoAuthHandler(flight.ServerAuthHandler):
    """Lets the Handshake through to the middleware (pyarrow needs an auth
    handler to serve it)."""

    def authenticate(self, outgoing, incoming):
        pass

    def is_valid(self, token):
        return ""


class FakeSluice(flight.FlightServerBase):
    """Plays Sluice with two endpoints per window. With basic=True it also
    plays mode basic (see BasicAuth, as self.basic)."""

    def __init__(self, basic: bool = False, **kwargs: Any) -> None:
        self.headers = RecordHeaders()
        middleware: Dict[str, flight.ServerMiddlewareFactory] = {"headers": self.headers}
        self.basic: Optional[BasicAuth] = None
        if basic:
            self.basic = BasicAuth()
            middleware["auth"] = self.basic
            kwargs["auth_handler"] = NoAuthHandler()
        super().__init__("grpc://127.0.0.1:0", middleware=middleware, **kwargs)
        self.commands: List[Dict[str, Any]] = []
        self.actions: List[Any] = []
        self.streams: List[Dict[str, Any]] = []  # stream requests, in order
        # Called when follow.flaky breaks off (a restart, say).
        self.on_break: Callable[[], None] = lambda: None
        # The number of acks still to refuse with UNAVAILABLE.
        self.acks_unavailable = 0

    def _request(self, raw: bytes) -> Dict[str, Any]:
        req = json.loads(raw)
        self.commands.append(req)
        table = req["table"]
        if table.startswith("error."):
            raise ERRORS[table[len("error."):]]()
        return req

    def get_flight_info(self, context, descriptor):
        req = self._request(descriptor.command)
        if req["table"] == "bad.metadata":
            tickets = [b"bad-metadata"]
        elif req["table"] == "fail.midstream":
            tickets = [b"part1", b"fail"]
        elif req["table"] == "big.ids":
            tickets = [b"big-ids"]
        elif req["table"] == "other.schema":
            tickets = [b"part1", b"other-schema"]
        else:
            tickets = [b"part1", b"part2"]
        endpoints = [flight.FlightEndpoint(t, []) for t in tickets]
        return flight.FlightInfo(SCHEMA, descriptor, endpoints, -1, -1)

    def get_schema(self, context, descriptor):
        self._request(descriptor.command)
        return flight.SchemaResult(SCHEMA)

    def _follow(self, req):
        """A stream request: snapshot 1 (complete), a heartbeat, snapshot 2
        (in two batches), the stream starting after from_snapshot when it
        is set; table follow.flaky fails the first stream with UNAVAILABLE
        in the middle of snapshot 2, and other tables end (a bounded
        stream). Table follow.fullflaky streams the full state of snapshot
        1 in two batches, failing the first stream between them, then
        snapshot 2 (from_snapshot with start from-snapshot-full: the full
        state of that snapshot). Table follow.bigids streams
        big_id_changes() as snapshot 7."""
        self.streams.append(req)
        if req["table"].startswith("error."):
            raise ERRORS[req["table"][len("error."):]]()
        first = len([r for r in self.streams if r["table"] == req["table"]]) == 1
        after = int(req.get("from_snapshot", 0))

        def gen():
            if req["table"] == "follow.bigids":
                yield big_id_changes(), meta(7, True, 3)
                return
            if req["table"] == "follow.fullflaky":
                if req.get("start", "latest-full") == "latest-full" or (
                        req["start"] == "from-snapshot-full" and after == 1):
                    yield change_batch([1], 1), meta(1, False, 1, full_state=True)
                    if first:
                        raise flight.FlightUnavailableError("server shutting down")
                    yield change_batch([2], 1), meta(1, True, 1, full_state=True)
                yield change_batch([3], 2), meta(2, True, 1)
                return
            if after < 1:
                yield change_batch([1, 2], 1), meta(1, True, 2)
                yield change_batch([], 1), meta(1, False, 0, heartbeat=True)
            if after < 2:
                yield change_batch([3], 2), meta(2, False, 1)
                if req["table"] == "follow.flaky" and first:
                    self.on_break()
                    raise flight.FlightUnavailableError("server shutting down")
                yield change_batch([4], 2), meta(2, True, 1)
        return flight.GeneratorStream(SCHEMA, gen())

    def do_get(self, context, ticket):
        t = ticket.ticket
        if t.startswith(b"{"):
            return self._follow(json.loads(t))
        if t == b"part1":
            return flight.GeneratorStream(SCHEMA, iter([
                (change_batch([1, 2], 1), meta(1, False, 2)),
                (change_batch([3], 1), meta(1, True, 1)),
            ]))
        if t == b"part2":
            return flight.GeneratorStream(SCHEMA, iter([
                (change_batch([], 2), meta(2, False, 0)),
                (change_batch([4, 5], 2), meta(2, True, 2)),
            ]))
        if t == b"fail":
            def gen():
                yield change_batch([9], 3), meta(3, False, 1)
                raise flight.FlightUnavailableError("storage went away")
            return flight.GeneratorStream(SCHEMA, gen())
        if t == b"big-ids":
            return flight.GeneratorStream(SCHEMA, iter([(big_id_changes(), meta(7, True, 3))]))
        if t == b"bad-metadata":
            return flight.GeneratorStream(SCHEMA, iter([(change_batch([1], 1), b"not json")]))
        if t == b"other-schema":
            other = pa.schema([("x", pa.int64())])
            return flight.GeneratorStream(other, iter([pa.record_batch([pa.array([1])], schema=other)]))
        raise KeyError(f"unknown ticket {t!r}")

    def do_action(self, context, action):
        body = action.body.to_pybytes()
        self.actions.append((action.type, json.loads(body)))
        if action.type == "commit_seq":
            req = json.loads(body)
            if req["table"].startswith("error."):
                raise ERRORS[req["table"][len("error."):]]()
            return [json.dumps({"table": req["table"], "commit_seq": 7, "snapshot": 1 << 62,
                                "timestamp_ms": 1_700_000_000_000}).encode()]
        if action.type == "list_tables":
            return [b'{"tables":[{"name":"a.b","format":"iceberg","format_version":2,'
                    b'"current_snapshot":5,"commit_seq":3}]}']
        if action.type == "list_snapshots":
            return [b'{"table":"a.b","snapshots":[{"snapshot":1,"sequence_number":1,"commit_seq":1,'
                    b'"timestamp_ms":1,"operation":"append","schema_id":0},{"snapshot":2,"parent":1,'
                    b'"sequence_number":2,"commit_seq":2,"timestamp_ms":2,"operation":"append","schema_id":0}]}']
        if action.type == "explain":
            return [json.dumps({"table": "a.b", "request": json.loads(body), "snapshots": []}).encode()]
        if action.type == "ack":
            if self.acks_unavailable > 0:
                self.acks_unavailable -= 1
                raise flight.FlightUnavailableError("server shutting down")
            req = json.loads(body)
            return [json.dumps({**req, "commit_seq": req["snapshot"], "lag_commits": 0}).encode()]
        if action.type == "consumer_progress":
            req = json.loads(body)
            if req["consumer"] == "nobody":
                raise KeyError("progress: no progress: consumer nobody")
            return [json.dumps({**req, "snapshot": 2, "lag_commits": 1}).encode()]
        if action.type == "list_consumers":
            return [b'{"table":"a.b","consumers":[{"consumer":"c1","snapshot":2,"lag_commits":1}]}']
        if action.type == "reset_consumer":
            return [json.dumps({**json.loads(body), "removed": True}).encode()]
        if action.type == "watch_commits":
            return [json.dumps({"table": "a.b", "commit_seq": i, "snapshot": 10 + i, "timestamp_ms": i}).encode()
                    for i in (1, 2, 3)]
        if action.type == "two_results":
            return [b"{}", b"{}"]
        raise pa.ArrowInvalid(f"unknown action {action.type!r}")


@pytest.fixture
def server():
    srv = FakeSluice()
    try:
        yield srv
    finally:
        srv.shutdown()


@pytest.fixture
def basic_server():
    srv = FakeSluice(basic=True)
    try:
        yield srv
    finally:
        srv.shutdown()


@pytest.fixture
def client(server):
    import sluice

    c = sluice.connect(f"127.0.0.1:{server.port}", token="s3cret", timeout=10)
    try:
        yield c
    finally:
        c.close()
