"""Live follow of a Delta table that delta-rs (the deltalake package, the
version testdata/delta/gen/README.md names) writes while flightd serves it
from --delta-root: appends, DELETE and UPDATE arrive on an open follow
stream as inserts, deletes and update pairs; a durable consumer that acked
a version resumes with exactly the commits after it; the state the feed
builds is delta-rs's own; a table created after flightd started is listed.
"""

import pyarrow as pa
import pytest

import sluice

try:
    import deltalake
except ImportError:  # reported by the fixture below, as a failure
    deltalake = None

TABLE = "delta.live"
SCHEMA = pa.schema([("id", pa.int64()), ("grp", pa.string()), ("val", pa.int64())])
# Each wait for a commit to arrive gives up after this many heartbeats.
MAX_HEARTBEATS = 50


@pytest.fixture(scope="module", autouse=True)
def need_deltalake():
    if deltalake is None:
        pytest.fail("deltalake is not installed in this venv: these tests write Delta tables with delta-rs; "
                    "add deltalake==1.6.6 to PY_TEST_PACKAGES in the Makefile and run `make venv`", pytrace=False)


def rows(*items):
    return pa.Table.from_pylist([{"id": i, "grp": g, "val": v} for i, g, v in items], schema=SCHEMA)


def changes(batches):
    """[(op, commit_seq, before, after)] of the batches' rows, images as
    (id, grp, val) tuples or None."""
    out = []
    for b in batches:
        for r in b.batch.to_pylist():
            img = [None if r[k] is None else (r[k]["id"], r[k]["grp"], r[k]["val"]) for k in ("before", "after")]
            out.append((r["op"], b.commit_seq, *img))
    return out


def until(stream, seq):
    """The data batches of stream up to and including the one that
    completes commit_seq seq (every batch of the commits between). The
    stream must send heartbeats: too many in a row without the commit
    fail the test, rather than wait forever."""
    got, idle = [], 0
    for b in stream:
        if b.heartbeat:
            idle += 1
            assert idle < MAX_HEARTBEATS, f"commit_seq {seq} did not arrive; got {changes(got)}"
            continue
        idle = 0
        assert b.commit_seq <= seq, f"commit_seq {b.commit_seq} arrived while waiting for {seq}"
        assert b.snapshot == b.commit_seq, "a Delta version is both the snapshot and the commit_seq"
        got.append(b)
        if b.snapshot_complete and b.commit_seq == seq:
            return got
    pytest.fail(f"the stream ended before commit_seq {seq}: {changes(got)}")


def ready(stream, version):
    """Waits for the first heartbeat: the stream stands at version."""
    b = next(stream)
    assert b.heartbeat and b.snapshot == version, (b.heartbeat, b.snapshot, b.num_rows)


def version_times(path):
    """{version: commit time in ms} as delta-rs reports them."""
    return {h["version"]: h["timestamp"] for h in deltalake.DeltaTable(path).history()}


@pytest.fixture
def served(tmp_path, start_flightd):
    root, warehouse = tmp_path / "root", tmp_path / "warehouse"
    root.mkdir()
    warehouse.mkdir()

    def serve():
        return start_flightd("--warehouse", warehouse, "--delta-root", root, "--poll-interval", "50ms",
                             "--heartbeat-interval", "200ms")

    return root, serve


@pytest.mark.parametrize("cdf", [True, False], ids=["cdf", "no-cdf"])
def test_follow_delta_rs_writes(served, cdf):
    root, serve = served
    path = str(root / "live")
    config = {"delta.enableChangeDataFeed": "true"} if cdf else None
    deltalake.write_deltalake(path, rows((1, "a", 10), (2, "b", 20), (3, "c", 30)), configuration=config)
    srv = serve()
    # Without change data files, updates are paired by the identity.
    identity = None if cdf else ["id"]
    with sluice.connect(srv.uri) as client:
        sub = client.subscribe(TABLE, consumer="mirror", start="latest", identity=identity, heartbeats=True)
        stream = iter(sub)
        ready(stream, 0)

        deltalake.write_deltalake(path, rows((4, "d", 40), (5, "e", 50)), mode="append")
        got = until(stream, 1)
        assert sorted(changes(got)) == [("insert", 1, None, (4, "d", 40)), ("insert", 1, None, (5, "e", 50))]
        assert got[-1].timestamp_ms == version_times(path)[1]

        dt = deltalake.DeltaTable(path)
        dt.delete("id = 2")
        assert changes(until(stream, 2)) == [("delete", 2, (2, "b", 20), None)]

        dt = deltalake.DeltaTable(path)
        dt.update(updates={"val": "val + 100"}, predicate="id = 3")
        got = until(stream, 3)
        assert changes(got) == [("update_before", 3, (3, "c", 30), None), ("update_after", 3, None, (3, "c", 130))]
        progress = got[-1].ack()
        assert progress["commit_seq"] == 3 and progress["lag_commits"] == 0
        sub.close()
        assert client.consumer_progress("mirror", TABLE)["commit_seq"] == 3

        # Commits while the consumer is away: the resumed stream delivers
        # exactly them, from the one after the acknowledged version.
        deltalake.write_deltalake(path, rows((6, "f", 60)), mode="append")
        deltalake.DeltaTable(path).delete("id = 1")
        sub = client.subscribe(TABLE, consumer="mirror", identity=identity, heartbeats=True)
        stream = iter(sub)
        got = until(stream, 5)
        assert got[0].commit_seq == 4 and not any(b.full_state for b in got)
        assert changes(got) == [("insert", 4, None, (6, "f", 60)), ("delete", 5, (1, "a", 10), None)]
        # Caught up: the next message is a heartbeat at version 5.
        ready(stream, 5)
        sub.close()

        # The full state the feed gives is the one delta-rs reads.
        state = client.subscribe(TABLE, start="latest-full", follow=False)
        mine = sorted(after for op, _, _, after in changes(state) if op == "insert")
        theirs = sorted((r["id"], r["grp"], r["val"])
                        for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist())
        assert mine == theirs == [(3, "c", 130), (4, "d", 40), (5, "e", 50), (6, "f", 60)]


def test_table_created_after_start(served):
    root, serve = served
    deltalake.write_deltalake(str(root / "first"), rows((1, "a", 1)))
    srv = serve()
    with sluice.connect(srv.uri) as client:
        assert [t["name"] for t in client.list_tables()] == ["delta.first"]
        deltalake.write_deltalake(str(root / "later"), rows((7, "g", 70), (8, "h", 80)))
        listed = {t["name"]: t for t in client.list_tables()}
        assert sorted(listed) == ["delta.first", "delta.later"]
        later = listed["delta.later"]
        assert later["format"] == "delta" and later["current_snapshot"] == later["commit_seq"] == 0
        feed = client.changes_table("delta.later")
        assert sorted(r["id"] for r in feed.column("after").to_pylist()) == [7, 8]
        assert set(feed.column("op").to_pylist()) == {"insert"}
