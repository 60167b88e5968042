"""Follow streams through a real flightd with the plain pyarrow client and
the Sluice client: start modes, heartbeats at the configured interval, the
error status a follow stream ends with when the server shuts down, consumer
progress and the watch_commits action stream."""

import json
import time

import pyarrow as pa
import pyarrow.flight as flight
import pytest

import sluice
from conftest import read_chunks, request

TABLE = "e2e.events"


def total_rows(fixture, after=None):
    snaps = fixture["snapshots"]
    if after is not None:
        snaps = snaps[[s["snapshot"] for s in snaps].index(after) + 1:]
    return sum(len(s["rows"]) for s in snaps)


def test_start_modes_bounded(fclient, fixture):
    snaps = fixture["snapshots"]
    feed, metas = read_chunks(fclient, request(table=TABLE, start="latest-full"))
    assert feed.num_rows == total_rows(fixture)
    assert all(m.get("full_state") for m in metas) and metas[-1]["snapshot_complete"]
    assert metas[-1]["snapshot"] == snaps[-1]["snapshot"]
    assert sorted(r["id"] for r in feed.column("after").to_pylist()) == sorted(
        r["id"] for s in snaps for r in s["rows"])

    feed, _ = read_chunks(fclient, request(table=TABLE, start="latest"))
    assert feed.num_rows == 0

    first = snaps[1]["snapshot"]
    feed, metas = read_chunks(fclient, request(table=TABLE, start="from-snapshot", from_snapshot=str(first)))
    assert feed.num_rows == total_rows(fixture, first)
    assert not any(m.get("full_state") for m in metas)

    feed, metas = read_chunks(fclient, request(table=TABLE, start="from-snapshot-full", from_snapshot=str(first)))
    assert feed.num_rows == len(snaps[0]["rows"]) + len(snaps[1]["rows"]) + total_rows(fixture, first)

    ts = snaps[2]["timestamp_ms"]
    feed, metas = read_chunks(fclient, request(table=TABLE, start="from-timestamp", from_timestamp_ms=str(ts)))
    assert feed.num_rows == total_rows(fixture, snaps[1]["snapshot"])

    with pytest.raises(pa.ArrowKeyError, match="12345"):
        read_chunks(fclient, request(table=TABLE, follow=True, from_snapshot="12345"))


def test_heartbeats_and_shutdown(start_flightd, fixture):
    srv = start_flightd("--warehouse", fixture["warehouse"], "--heartbeat-interval", "400ms",
                        "--poll-interval", "50ms")
    client = flight.connect(srv.uri)
    reader = client.do_get(flight.Ticket(request(table=TABLE, follow=True, start="latest")))
    arrivals = []
    for _ in range(5):
        chunk = reader.read_chunk()
        assert chunk.data is not None and chunk.data.num_rows == 0
        meta = json.loads(chunk.app_metadata.to_pybytes())
        assert meta["heartbeat"] and not meta["snapshot_complete"]
        assert meta["snapshot"] == fixture["snapshots"][-1]["snapshot"]
        arrivals.append(time.monotonic())
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    print("heartbeat gaps (configured 0.4s):", [round(g, 3) for g in gaps])
    assert all(0.35 < g < 0.6 for g in gaps), gaps

    # SIGTERM: the follow stream ends with an error status, not a clean end,
    # and flightd still exits 0.
    srv.proc.terminate()
    with pytest.raises(flight.FlightUnavailableError, match="server shutting down"):
        while True:
            reader.read_chunk()
    assert srv.proc.wait(timeout=30) == 0
    client.close()


def test_subscribe_and_consumer_progress(addr, fixture):
    snaps = fixture["snapshots"]
    with sluice.connect(addr) as client:
        client.reset_consumer("e2e-sub", TABLE)
        sub = client.subscribe(TABLE, consumer="e2e-sub", columns=["id", "name"])
        rows = 0
        for b in sub:
            assert b.full_state
            rows += b.num_rows
            if b.snapshot_complete:
                progress = b.ack()
                break
        sub.close()
        assert rows == total_rows(fixture)
        assert progress["snapshot"] == snaps[-1]["snapshot"] and progress["lag_commits"] == 0
        assert client.consumer_progress("e2e-sub", TABLE)["commit_seq"] == snaps[-1]["commit_seq"]
        assert "e2e-sub" in [c["consumer"] for c in client.list_consumers(TABLE)]

        # Acknowledge an earlier snapshot: the consumer resumes after it.
        client.ack("e2e-sub", TABLE, snaps[2]["snapshot"])
        got = list(client.subscribe(TABLE, consumer="e2e-sub", follow=False))
        assert sum(b.num_rows for b in got) == total_rows(fixture, snaps[2]["snapshot"])
        with pytest.raises(sluice.InvalidArgument, match="lineage"):
            client.ack("e2e-sub", TABLE, 12345)
        assert client.reset_consumer("e2e-sub", TABLE)
        with pytest.raises(sluice.NotFound):
            client.consumer_progress("e2e-sub", TABLE)


def test_watch_commits_action_stream(fclient, fixture):
    results = fclient.do_action(flight.Action("watch_commits", json.dumps({"table": TABLE}).encode()))
    first = json.loads(next(iter(results)).body.to_pybytes())
    assert first["commit_seq"] == fixture["snapshots"][-1]["commit_seq"]
    assert first["snapshot"] == fixture["snapshots"][-1]["snapshot"]
