"""A window split into several endpoints (max_endpoints), read by pyarrow.

Three flightd replicas serve one warehouse, each started with --advertise
and --peers by e2e/split_test.go, which passes their addresses in
SLUICE_REPLICAS. GetFlightInfo on one of them returns endpoints whose first
locations spread over the three; each endpoint's ticket is read from its
first location in a thread of its own, and the tables concatenated in
endpoint order must equal the single-stream read of the same window, row
for row, in order.
"""

import json
import os
import random
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from conftest import read_chunks, request

TABLES = ["e2e.events", "gen.events"]


pytestmark = pytest.mark.skipif(not os.environ.get("SLUICE_REPLICAS"),
                                reason="run by e2e/split_test.go (TestSplitWindows), against its replicas")


@pytest.fixture(scope="module")
def replicas():
    return os.environ["SLUICE_REPLICAS"].split(",")


def snapshots(client, table):
    res = list(client.do_action(flight.Action("list_snapshots", json.dumps({"table": table}).encode())))
    return [s["snapshot"] for s in json.loads(res[0].body.to_pybytes())["snapshots"]]


def uri(loc):
    u = loc.uri
    return u.decode() if isinstance(u, bytes) else u


def read_endpoint(ep):
    client = flight.connect(ep.locations[0])
    try:
        table, metas = read_chunks(client, ep.ticket.ticket)
        return table, metas
    finally:
        client.close()


def test_split_equals_single_read(replicas):
    rng = random.Random(12)
    client = flight.connect(replicas[1])
    windows = parts = file_parts = 0
    firsts = set()
    try:
        for table in TABLES:
            snaps = snapshots(client, table)
            for k in range(8 + len(snaps)):
                i, j = sorted(rng.sample(range(len(snaps) + 1), 2))
                if k >= 8:
                    i, j = k - 8, k - 7  # each snapshot alone: a large one splits by files
                frm = str(snaps[i - 1]) if i > 0 else None
                req = dict(table=table, from_snapshot=frm, to_snapshot=str(snaps[j - 1]))
                if table == "gen.events" and rng.random() < 0.5:
                    req["identity"] = ["id"]
                    req["fold_updates"] = rng.random() < 0.5
                n = rng.randint(2, 8)
                info = client.get_flight_info(flight.FlightDescriptor.for_command(request(**req, max_endpoints=n)))
                meta = json.loads(info.app_metadata)
                assert 1 <= len(info.endpoints) <= n and meta["endpoints"] == len(info.endpoints)
                with ThreadPoolExecutor(max_workers=len(info.endpoints)) as pool:
                    results = list(pool.map(read_endpoint, info.endpoints))
                union = pa.concat_tables([t for t, _ in results])
                single, single_metas = read_chunks(client, request(**req))
                assert union.schema == single.schema == info.schema
                assert union.equals(single), f"window {req} in {len(info.endpoints)} endpoints differs"
                # Each endpoint ends with a complete batch; the snapshots
                # come in the window's order.
                dedup = lambda ids: [s for k, s in enumerate(ids) if k == 0 or ids[k - 1] != s]  # noqa: E731
                assert dedup([m["snapshot"] for _, ms in results for m in ms]) == \
                    dedup([m["snapshot"] for m in single_metas])
                # The batches that complete snapshots are those of the
                # single read: a part ending inside a snapshot's files
                # leaves it to the part with its last file.
                assert [m["snapshot"] for _, ms in results for m in ms if m["snapshot_complete"]] == \
                    [m["snapshot"] for m in single_metas if m["snapshot_complete"]]
                for ep in info.endpoints:
                    assert sorted(uri(loc) for loc in ep.locations) == sorted(replicas)
                    firsts.add(uri(ep.locations[0]))
                windows += 1
                parts += len(info.endpoints)
                # A snapshot split by files runs on from one endpoint into
                # the next.
                snaps_of = [[m["snapshot"] for m in ms] for _, ms in results]
                file_parts += sum(1 for a, b in zip(snaps_of, snaps_of[1:]) if a and b and a[-1] == b[0])
    finally:
        client.close()
    assert windows >= 16 and parts > windows and file_parts > 0, (windows, parts, file_parts)
    assert len(firsts) == 3, f"the endpoints' first locations did not spread over the replicas: {firsts}"


def test_split_refused_for_net_changes(replicas):
    client = flight.connect(replicas[0])
    try:
        with pytest.raises(pa.ArrowInvalid, match="net_changes"):
            client.get_flight_info(flight.FlightDescriptor.for_command(
                request(table="e2e.events", net_changes=True, max_endpoints=4)))
    finally:
        client.close()
