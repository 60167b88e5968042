"""sluice.parallel: plans split into parts, and a part read from its
locations in turn, resuming after the rows already read."""

from __future__ import annotations

import json
import pickle
from typing import Any, Dict, List, Optional

import pyarrow as pa
import pyarrow.flight as flight
import pytest

import sluice
from sluice.parallel import Connection, Part, plan, read_part

from conftest import SCHEMA, change_batch, meta


class Replica(flight.FlightServerBase):
    """Serves every ticket as ``batches`` batches of 3 rows; after
    ``fail_after`` batches it breaks the stream with ``error``; with
    ``refuse`` it refuses every DoGet with that error; ``rows`` cuts the
    stream short."""

    def __init__(self, batches: int = 5, fail_after: Optional[int] = None, error: Any = None,
                 refuse: Any = None, rows: Optional[int] = None) -> None:
        super().__init__("grpc://127.0.0.1:0")
        self.uri = f"grpc://127.0.0.1:{self.port}"
        self.batches, self.fail_after, self.error, self.refuse, self.rows = batches, fail_after, error, refuse, rows
        self.gets = 0
        self.endpoints: List[flight.FlightEndpoint] = []

    def get_flight_info(self, context, descriptor):
        req = json.loads(descriptor.command)
        self.request = req
        return flight.FlightInfo(SCHEMA, descriptor, self.endpoints, -1, -1,
                                 app_metadata=json.dumps({"endpoints": len(self.endpoints)}).encode())

    def do_get(self, context, ticket):
        self.gets += 1
        if self.refuse is not None:
            raise self.refuse
        all_batches = [change_batch([3 * i, 3 * i + 1, 3 * i + 2], i) for i in range(self.batches)]
        if self.rows is not None:
            t = pa.Table.from_batches(all_batches).slice(0, self.rows)
            all_batches = t.to_batches()

        def gen():
            for i, b in enumerate(all_batches):
                if self.fail_after is not None and i == self.fail_after:
                    raise self.error
                yield b, meta(i, True, b.num_rows)

        return flight.GeneratorStream(SCHEMA, gen())


@pytest.fixture
def replicas(request):
    started: List[Replica] = []

    def start(**kwargs: Any) -> Replica:
        r = Replica(**kwargs)
        started.append(r)
        return r

    yield start
    for r in started:
        r.shutdown()


def want_rows(n: int = 5) -> pa.Table:
    return pa.Table.from_batches([change_batch([3 * i, 3 * i + 1, 3 * i + 2], i) for i in range(n)])


def read(conn: Connection, part: Part) -> pa.Table:
    return pa.Table.from_batches(list(read_part(conn, part, SCHEMA)), schema=SCHEMA)


def test_plan_returns_parts_with_their_locations(replicas):
    a, b = replicas(), replicas()
    a.endpoints = [
        flight.FlightEndpoint(b"t0", [a.uri, b.uri]),
        flight.FlightEndpoint(b"t1", [b.uri, a.uri]),
        flight.FlightEndpoint(b"t2", ["arrow-flight-reuse-connection://?"]),
    ]
    p = plan(Connection(a.uri), "demo.orders", max_endpoints=3, columns=["id"], layout="flat")
    assert a.request == {"table": "demo.orders", "columns": ["id"], "layout": "flat", "max_endpoints": 3}
    assert [(x.index, x.ticket, x.locations) for x in p.parts] == [
        (0, b"t0", (a.uri, b.uri)), (1, b"t1", (b.uri, a.uri)), (2, b"t2", ())]
    assert p.schema == SCHEMA and p.metadata == {"endpoints": 3}
    # A part and a connection go to workers by pickle.
    assert pickle.loads(pickle.dumps(p.parts[1])) == p.parts[1]
    # A part without locations is read from the server that planned it.
    assert read(Connection(a.uri), p.parts[2]).equals(want_rows())


@pytest.mark.parametrize("error", [flight.FlightUnavailableError("replica gone"),
                                   flight.FlightInternalError("stream reset"),
                                   flight.FlightCancelledError("cancelled")])
def test_a_part_resumes_on_the_next_location_after_the_rows_read(replicas, error):
    broken = replicas(fail_after=2, error=error)
    live = replicas()
    got = read(Connection(broken.uri), Part(0, b"t", (broken.uri, live.uri)))
    assert got.equals(want_rows())  # the first 6 rows once, from the broken one; the rest from the live one
    assert (broken.gets, live.gets) == (1, 1)


def test_a_refused_request_is_not_retried_elsewhere(replicas):
    bad = replicas(refuse=pa.ArrowInvalid("feed: unknown column: zz"))
    live = replicas()
    with pytest.raises(sluice.InvalidArgument, match="unknown column"):
        read(Connection(bad.uri), Part(0, b"t", (bad.uri, live.uri)))
    assert live.gets == 0


def test_every_location_failing_names_each(replicas):
    a = replicas(refuse=flight.FlightUnavailableError("down for maintenance"))
    b = replicas(fail_after=1, error=flight.FlightUnavailableError("gone too"))
    with pytest.raises(sluice.Unavailable) as e:
        read(Connection(a.uri), Part(4, b"t", (a.uri, b.uri)))
    assert "part 4: every location failed" in e.value.message
    assert a.uri in e.value.message and "down for maintenance" in e.value.message
    assert b.uri in e.value.message and "gone too" in e.value.message


def test_a_location_with_fewer_rows_than_were_read_is_a_failure(replicas):
    broken = replicas(fail_after=3, error=flight.FlightUnavailableError("gone"))
    short = replicas(rows=4)
    with pytest.raises(sluice.Unavailable, match="streamed fewer rows than the 9"):
        read(Connection(broken.uri), Part(0, b"t", (broken.uri, short.uri)))


def test_connection_options():
    c = Connection("127.0.0.1:1", token="t")
    assert c.uri == "grpc://127.0.0.1:1"
    assert pickle.loads(pickle.dumps(c)) == c
    assert "secret" not in repr(Connection("h:1", user="u", password="secret"))
    with pytest.raises(sluice.InvalidArgument, match="together"):
        Connection("h:1", cert_chain=b"x")
    with pytest.raises(sluice.InvalidArgument):
        Connection(" ")


def test_max_endpoints_is_checked():
    from sluice.request import change_request

    assert change_request("a.b", max_endpoints=1) == {"table": "a.b"}
    assert change_request("a.b", max_endpoints=4)["max_endpoints"] == 4
    with pytest.raises(sluice.InvalidArgument, match="max_endpoints 0"):
        change_request("a.b", max_endpoints=0)
    with pytest.raises(TypeError):
        change_request("a.b", max_endpoints="4")  # type: ignore[arg-type]
