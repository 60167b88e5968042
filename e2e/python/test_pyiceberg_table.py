"""A table that pyiceberg writes, through its SqlCatalog on a SQLite file, is
served by pointing flightd at that file and warehouse, with no conversion."""

from datetime import datetime, timezone

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

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
