"""History expired by pyiceberg is detected: every window or stream that
would start before the retained history is FailedPrecondition "resync
required", never NotFound and never a silent jump to the oldest kept
snapshot. A stream says so first with a 0-row resync batch, and with
on_gap="resync" streams the current full state instead of failing.

pyiceberg 0.12's expire_snapshots() drops parent-snapshot-id from the
oldest snapshot it keeps, so the parent link alone no longer tells that
history expired: the sequence numbers still do.
"""

import time

import pyarrow as pa
import pyarrow.flight as flight
import pytest
from pyiceberg.catalog.sql import SqlCatalog

import sluice
from conftest import read_chunks, request

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("label", pa.string())])


def rows(ids):
    return pa.Table.from_pydict({"id": ids, "label": [f"row-{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def expired_table(tmp_path):
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    db = warehouse / "pyiceberg.db"
    cat = SqlCatalog("lake", uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")
    cat.create_namespace("py")
    tbl = cat.create_table("py.events", schema=SCHEMA)
    for batch in ([1, 2], [3, 4], [5], [6, 7]):
        tbl.append(rows(batch))
        time.sleep(0.01)
    tbl.delete("id = 3")
    snaps = [s.snapshot_id for s in tbl.metadata.snapshots]
    expired = snaps[:2]
    tbl.maintenance.expire_snapshots().by_ids(expired).commit()
    tbl = cat.load_table("py.events")
    kept = tbl.metadata.snapshots
    assert [s.snapshot_id for s in kept] == snaps[2:]
    return warehouse, db, tbl, expired, kept


def test_pyiceberg_expiry_is_resync_required(expired_table, start_flightd):
    warehouse, db, tbl, expired, kept = expired_table
    # What pyiceberg left: the oldest kept snapshot lost its parent link.
    assert kept[0].parent_snapshot_id is None, "pyiceberg kept the parent link: this test no longer shows the case"
    assert kept[0].sequence_number > 1
    srv = start_flightd("--warehouse", warehouse, "--catalog-uri", f"file://{db}", "--catalog-name", "lake")
    client = flight.connect(srv.uri)
    try:
        for name, req in [
            ("from an expired snapshot", request(table="py.events", from_snapshot=str(expired[0]))),
            ("from the expired parent of the oldest kept", request(table="py.events", from_snapshot=str(expired[1]))),
            ("from a time before the retained history", request(table="py.events", from_timestamp_ms="1")),
            ("from the start of the history", request(table="py.events")),
        ]:
            with pytest.raises(pa.ArrowInvalid, match="resync required") as exc:
                read_chunks(client, req)
            assert str(kept[0].snapshot_id) in str(exc.value), name

        # From the oldest kept snapshot on, the feed is exact: pyiceberg's own reads.
        table, _ = read_chunks(client, request(table="py.events", from_snapshot=str(kept[0].snapshot_id)))
        ops = sorted(zip(table.column("op").to_pylist(),
                         [(r or {}).get("id") for r in table.column("before").to_pylist()],
                         [(r or {}).get("id") for r in table.column("after").to_pylist()]))
        assert ops == [("delete", 3, None), ("insert", None, 6), ("insert", None, 7)]
    finally:
        client.close()

    with sluice.connect(srv.uri) as sc:
        with pytest.raises(sluice.FailedPrecondition, match="resync required"):
            for _ in sc.subscribe("py.events", start="from-timestamp", from_timestamp_ms=1, follow=False):
                pass
        seen = []
        with pytest.raises(sluice.FailedPrecondition, match="resync required"):
            for b in sc.subscribe("py.events", start="from-snapshot", from_snapshot=expired[0], follow=False):
                seen.append(b)
        # The explicit gap event came first: a 0-row resync batch naming
        # the lost snapshot and where a stream can start now.
        assert [b.resync for b in seen] == [True] and seen[0].num_rows == 0, seen
        assert seen[0].snapshot == expired[0] and seen[0].current_snapshot == tbl.current_snapshot().snapshot_id

        # on_gap="resync": the event, then the current full state (as
        # pyiceberg scans it), and the stream goes on.
        batches = list(sc.subscribe("py.events", start="from-snapshot", from_snapshot=expired[0], follow=False,
                                    on_gap="resync"))
        assert batches[0].resync and all(b.full_state for b in batches[1:]) and batches[-1].snapshot_complete
        ids = sorted(r["id"] for b in batches[1:] for r in b.batch.column("after").to_pylist())
        assert ids == sorted(tbl.scan().to_arrow().column("id").to_pylist())
        with pytest.raises(sluice.InvalidArgument, match="on_gap"):
            sc.subscribe("py.events", follow=False, on_gap="skip")
