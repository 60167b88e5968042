#!/usr/bin/env python3
"""Writes the pypaimon-written Paimon fixtures of testdata/paimon.

Each table gets a randomized history (seeded, see SEED) written through
pypaimon's own batch writer, and after every commit the expected state as
pypaimon's own batch read returns it at that snapshot, plus the snapshot's
changes as pypaimon's stream read plans them (delta files, or the changelog
files with changelog-producer=input). See testdata/paimon/README.md.

Usage: pypaimon_fixtures.py OUT_DIR   (OUT_DIR gets warehouse/ and expected/)
"""

import datetime
import decimal
import os
import random
import shutil
import sys

import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from expected import Recorder  # noqa: E402

SEED = 21
DB = "py"
BASE_TIME = datetime.datetime(2026, 1, 1, 0, 0, 0)


def rand_name(rng):
    return rng.choice(["ann", "bo", "cy", "dee", "ed", "fay", "gus", "a longer name than seven"])


# --- append table: partitioned by dt, unaware bucket, nested columns ------

APPEND_SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("name", pa.string()),
    ("amount", pa.decimal128(10, 2)),
    ("score", pa.float64()),
    ("flag", pa.bool_()),
    ("day", pa.date32()),
    ("ts", pa.timestamp("us")),
    ("tags", pa.list_(pa.string())),
    ("attrs", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ("dt", pa.string()),
])


def append_rows(rng, next_id, n, dts, schema, extra=None):
    rows = {f.name: [] for f in schema}
    for i in range(n):
        rows["id"].append(next_id + i)
        rows["name"].append(None if rng.random() < 0.1 else rand_name(rng))
        rows["amount"].append(decimal.Decimal(rng.randint(-99999, 99999)) / 100)
        rows["score"].append(round(rng.uniform(-100, 100), 3))
        rows["flag"].append(rng.random() < 0.5)
        rows["day"].append(datetime.date(2026, 1, 1) + datetime.timedelta(days=rng.randint(0, 300)))
        rows["ts"].append(BASE_TIME + datetime.timedelta(microseconds=rng.randint(0, 10**12)))
        rows["tags"].append([rand_name(rng) for _ in range(rng.randint(0, 3))])
        rows["attrs"].append(None if rng.random() < 0.1 else {"a": rng.randint(0, 9), "b": rand_name(rng)})
        rows["dt"].append(rng.choice(dts))
        if extra:
            rows[extra].append(None if rng.random() < 0.3 else rng.randint(0, 1000))
    return pa.Table.from_pydict(rows, schema=schema)


def write(table, data, overwrite=None):
    wb = table.new_batch_write_builder()
    if overwrite is not None:
        wb = wb.overwrite(overwrite)
    w = wb.new_write()
    c = wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def gen_append(catalog, rec, rng):
    name = "append_log"
    schema = Schema.from_pyarrow_schema(APPEND_SCHEMA, partition_keys=["dt"],
                                        options={"bucket": "-1", "file.format": "parquet"})
    catalog.create_table(f"{DB}.{name}", schema, False)
    dts = ["2026-01-01", "2026-01-02", "2026-01-03"]
    next_id = 0
    pa_schema = APPEND_SCHEMA
    extra = None
    for step in range(10):
        table = catalog.get_table(f"{DB}.{name}")
        if step == 6:
            catalog.alter_table(f"{DB}.{name}", [SchemaChange.add_column("qty", AtomicType("INT"))], False)
            pa_schema = APPEND_SCHEMA.append(pa.field("qty", pa.int32()))
            extra = "qty"
            table = catalog.get_table(f"{DB}.{name}")
        n = rng.randint(5, 25)
        if step in (4, 8):
            dt = rng.choice(dts)
            data = append_rows(rng, next_id, n, [dt], pa_schema, extra)
            write(table, data, overwrite={"dt": dt})
        else:
            data = append_rows(rng, next_id, n, dts, pa_schema, extra)
            write(table, data)
        next_id += n
        rec.snapshot(catalog.get_table(f"{DB}.{name}"))
    rec.finish(catalog.get_table(f"{DB}.{name}"))


# --- primary-key tables ----------------------------------------------------

PK_SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int32(), nullable=False),
    ("v", pa.string()),
    ("n", pa.int64()),
    ("op", pa.string()),
])


def pk_rows(rng, live, n, dts, schema, delete_share, extra=None):
    """Random upserts (new keys and updates of live ones) and deletes of live keys."""
    rows = {f.name: [] for f in schema}
    seen = set()
    for _ in range(n):
        kinds = ["+I"]
        if live:
            kinds.append("-D")
        kind = "-D" if rng.random() < delete_share and live else "+I"
        if kind == "-D":
            key = rng.choice(sorted(live))
        elif live and rng.random() < 0.5:
            key = rng.choice(sorted(live))
        else:
            key = (rng.choice(dts), rng.randint(0, 199))
        if key in seen:
            continue
        seen.add(key)
        rows["dt"].append(key[0])
        rows["id"].append(key[1])
        rows["v"].append(None if rng.random() < 0.1 else rand_name(rng))
        rows["n"].append(rng.randint(-10**12, 10**12))
        rows["op"].append(kind)
        if extra:
            rows[extra].append(rng.uniform(0, 1))
        if kind == "-D":
            live.discard(key)
        else:
            live.add(key)
    return pa.Table.from_pydict(rows, schema=schema)


def gen_pk(catalog, rec, rng, name, options, partitioned, steps):
    keys = ["dt", "id"]
    opts = {"bucket": "2", "rowkind.field": "op", "merge-engine": "deduplicate", "file.format": "parquet"}
    opts.update(options)
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"] if partitioned else None,
                                        primary_keys=keys, options=opts)
    catalog.create_table(f"{DB}.{name}", schema, False)
    dts = ["2026-01-01", "2026-01-02"] if partitioned else ["2026-01-01"]
    live = set()
    pa_schema = PK_SCHEMA
    extra = None
    for step in range(steps):
        table = catalog.get_table(f"{DB}.{name}")
        if step == steps // 2:
            catalog.alter_table(f"{DB}.{name}", [SchemaChange.add_column("w", AtomicType("DOUBLE"))], False)
            pa_schema = PK_SCHEMA.append(pa.field("w", pa.float64()))
            extra = "w"
            table = catalog.get_table(f"{DB}.{name}")
        if partitioned and step in (steps // 3, steps - 2):
            dt = rng.choice(dts)
            survivors = {k for k in live if k[0] != dt}
            fresh = set()
            data = pk_rows(rng, fresh, rng.randint(5, 20), [dt], pa_schema, 0.0, extra)
            live.clear()
            live.update(survivors | fresh)
            write(table, data, overwrite={"dt": dt})
        else:
            data = pk_rows(rng, live, rng.randint(5, 30), dts, pa_schema, 0.25 if step > 1 else 0.0, extra)
            write(table, data)
        rec.snapshot(catalog.get_table(f"{DB}.{name}"))
    rec.finish(catalog.get_table(f"{DB}.{name}"))


def main():
    out = os.path.abspath(sys.argv[1])
    warehouse = os.path.join(out, "warehouse")
    if os.path.exists(os.path.join(warehouse, f"{DB}.db")):
        shutil.rmtree(os.path.join(warehouse, f"{DB}.db"))
    os.makedirs(warehouse, exist_ok=True)
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database(DB, False)
    rng = random.Random(SEED)
    expected = os.path.join(out, "expected", DB)

    gen_append(catalog, Recorder(expected, "append_log", "pypaimon"), rng)
    gen_pk(catalog, Recorder(expected, "pk_dedup", "pypaimon"), rng, "pk_dedup", {}, True, 12)
    gen_pk(catalog, Recorder(expected, "pk_input_changelog", "pypaimon"), rng, "pk_input_changelog",
           {"changelog-producer": "input", "bucket": "1"}, False, 10)


if __name__ == "__main__":
    main()
