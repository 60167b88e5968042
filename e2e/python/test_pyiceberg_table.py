"""A table that pyiceberg writes, through its SqlCatalog on a SQLite file, is
served by pointing flightd at that file and warehouse, with no conversion."""

import time
from datetime import datetime, timezone

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import StringType

from conftest import read_chunks, request

BATCHES = [
    [(1, "anvil", 12.5, datetime(2026, 1, 1, 8, 0, tzinfo=timezone.utc))],
    [(2, "bolt", 0.25, datetime(2026, 1, 2, 9, 30, tzinfo=timezone.utc)), (3, None, 7.0, None)],
    [(4, "crate", 99.0, datetime(2026, 1, 3, 10, 15, tzinfo=timezone.utc)), (5, "drum", 3.5, None),
     (6, "easel", 41.0, datetime(2026, 1, 4, 11, 45, tzinfo=timezone.utc))],
]
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("label", pa.string()),
        pa.field("price", pa.float64()),
        pa.field("sold_at", pa.timestamp("us", tz="UTC")),
    ]
)


def write_items(tmp_path, catalog_name):
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    db = warehouse / "pyiceberg.db"
    cat = SqlCatalog(catalog_name, uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")
    cat.create_namespace("py")
    tbl = cat.create_table("py.items", schema=SCHEMA)
    for rows in BATCHES:
        cols = list(zip(*rows))
        tbl.append(pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, SCHEMA)], schema=SCHEMA))
    return warehouse, db, tbl


def as_rows(table):
    return sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.mark.parametrize("catalog_name", ["sluice", "lake"])
def test_pyiceberg_table_is_served_as_written(tmp_path, start_flightd, catalog_name):
    warehouse, db, tbl = write_items(tmp_path, catalog_name)
    args = ["--warehouse", warehouse, "--catalog-uri", f"file://{db}"]
    if catalog_name != "sluice":
        args += ["--catalog-name", catalog_name]
    srv = start_flightd(*args)
    import pyarrow.flight as flight

    client = flight.connect(srv.uri)
    try:
        snapshots = [s for s in tbl.metadata.snapshots]
        assert len(snapshots) == len(BATCHES)
        for i, snap in enumerate(snapshots):
            # What pyiceberg itself reads: the rows in the snapshot but not in
            # its parent.
            now = as_rows(tbl.scan(snapshot_id=snap.snapshot_id).to_arrow())
            before = as_rows(tbl.scan(snapshot_id=snap.parent_snapshot_id).to_arrow()) if i else []
            added = list(now)
            for r in before:
                added.remove(r)
            req = request(
                table="py.items",
                from_snapshot=str(snap.parent_snapshot_id) if snap.parent_snapshot_id else None,
                to_snapshot=str(snap.snapshot_id),
            )
            table, metas = read_chunks(client, req)
            got = sorted(tuple(r.values()) for r in table.column("after").to_pylist())
            assert got == added, f"snapshot {snap.snapshot_id}"
            assert set(table.column("op").to_pylist()) == {"insert"}
            assert set(table.column("snapshot").to_pylist()) == {snap.snapshot_id}
            assert metas[-1]["snapshot_complete"] and metas[-1]["commit_seq"] == snap.sequence_number
        whole, _ = read_chunks(client, request(table="py.items"))
        assert sorted(tuple(r.values()) for r in whole.column("after").to_pylist()) == as_rows(tbl.scan().to_arrow())
    finally:
        client.close()


def test_subscription_follows_a_schema_change(tmp_path, start_flightd):
    """A follow stream ends when the table's schema changes (an Arrow stream
    has one schema); a subscription with reconnect=True opens the next one
    at once, right after the last snapshot it delivered, and goes on in the
    new schema: no change lost, none repeated."""
    import sluice

    warehouse, db, tbl = write_items(tmp_path, "sluice")
    srv = start_flightd("--warehouse", warehouse, "--catalog-uri", f"file://{db}", "--poll-interval", "100ms")
    client = sluice.connect(srv.uri)
    try:
        sub = client.subscribe("py.items", start="latest-full", reconnect=True, max_backoff=0.5)
        seen = []  # (id, color or None, has the color field)

        def read_until(n):
            deadline = time.time() + 60
            while len(seen) < n:
                assert time.time() < deadline, f"only {len(seen)} of {n} rows came: {seen}"
                b = next(sub)
                assert not b.redelivered
                for after in b.batch.column("after").to_pylist():
                    seen.append((after["id"], after.get("color"), "color" in after))

        read_until(6)  # the full state of the three appends
        with tbl.update_schema() as upd:
            upd.add_column("color", StringType())
        tbl = tbl.refresh()
        wide = tbl.schema().as_arrow()
        tbl.append(pa.Table.from_pylist([{"id": 7, "label": "fife", "price": 5.0, "sold_at": None,
                                          "color": "red"}], schema=wide))
        read_until(7)
        assert sorted(i for i, _, _ in seen) == [1, 2, 3, 4, 5, 6, 7]
        assert seen[-1] == (7, "red", True)
        assert not any(has for _, _, has in seen[:6])
        assert sub.reconnects == 1 and sub.redelivered_batches == 0
        sub.close()
    finally:
        client.close()
