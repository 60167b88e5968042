"""Writes a table through a REST catalog onto S3 with pyiceberg, and prints
what pyiceberg itself reads at every snapshot: the oracle of the object
storage end-to-end tests (e2e/objstore_test.go, test_s3_rest.py).

    s3_writer.py STEP --table ns.name --oracle OUT.json

STEP is "init" (create the table, then appends, an overwrite, a delete, a
schema change and an append: several snapshots), "small" (create the
table, two appends) or "more" (one append of rows that no earlier step
wrote, numbered by --seq). The catalog comes from
the environment: SLUICE_REST_URI, SLUICE_WAREHOUSE, SLUICE_S3_ENDPOINT,
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN (the writer's
S3 key), and, for a catalog that requires OAuth2, SLUICE_REST_CREDENTIAL
(client_id:client_secret), SLUICE_REST_OAUTH2_URI and SLUICE_REST_SCOPE.

The oracle (JSON): columns (the current schema's), and per snapshot in
lineage order its id, parent, sequence number, commit time and rows: the
table as pyiceberg scans it at that snapshot, each row a list in the order
of columns (a column the snapshot's schema lacks is null).
"""

import argparse
import json
import os

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual, LessThan
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "v", DoubleType(), required=False),
)


def catalog():
    props = {
        "uri": os.environ["SLUICE_REST_URI"],
        "warehouse": os.environ["SLUICE_WAREHOUSE"],
        "s3.endpoint": os.environ["SLUICE_S3_ENDPOINT"],
        "s3.region": "us-east-1",
        "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
        "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
    }
    if os.environ.get("AWS_SESSION_TOKEN"):
        props["s3.session-token"] = os.environ["AWS_SESSION_TOKEN"]
    if os.environ.get("SLUICE_REST_CREDENTIAL"):
        props["credential"] = os.environ["SLUICE_REST_CREDENTIAL"]
        if os.environ.get("SLUICE_REST_OAUTH2_URI"):
            props["oauth2-server-uri"] = os.environ["SLUICE_REST_OAUTH2_URI"]
        if os.environ.get("SLUICE_REST_SCOPE"):
            props["scope"] = os.environ["SLUICE_REST_SCOPE"]
    return load_catalog("rest", **{"type": "rest", **props})


def rows(tbl, ids, name, v, tag=None):
    """An Arrow table in tbl's current schema: ids with name{id} and v."""
    data = {"id": ids, "name": [f"{name}{i}" for i in ids], "v": [v * i for i in ids]}
    if tag is not None:
        data["tag"] = [f"{tag}{i % 3}" for i in ids]
    return pa.Table.from_pydict(data, schema=tbl.schema().as_arrow())


def init(cat, name):
    ns = name.split(".")[0]
    if ns not in [n[0] for n in cat.list_namespaces()]:
        cat.create_namespace(ns)
    tbl = cat.create_table(name, schema=SCHEMA)
    tbl.append(rows(tbl, list(range(1, 21)), "a", 1.5))
    tbl.append(rows(tbl, list(range(21, 36)), "b", 0.25))
    # Rows 1-9 replaced by new images (a delete and an append).
    tbl.overwrite(rows(tbl, list(range(1, 10)), "c", 2.0), overwrite_filter=LessThan("id", 10))
    tbl.delete(delete_filter=GreaterThanOrEqual("id", 30))
    tbl.delete(delete_filter=EqualTo("name", "a15"))
    with tbl.update_schema() as upd:
        upd.add_column("tag", StringType())
    tbl = cat.load_table(name)
    tbl.append(rows(tbl, list(range(40, 46)), "d", 3.0, tag="t"))
    return tbl


def small(cat, name):
    ns = name.split(".")[0]
    if ns not in [n[0] for n in cat.list_namespaces()]:
        cat.create_namespace(ns)
    tbl = cat.create_table(name, schema=SCHEMA)
    tbl.append(rows(tbl, list(range(1, 6)), "s", 1.0))
    tbl.append(rows(tbl, list(range(6, 9)), "t", 2.0))
    return cat.load_table(name)


def more(cat, name, seq):
    tbl = cat.load_table(name)
    base = 1000 * seq
    tbl.append(rows(tbl, list(range(base, base + 5)), f"m{seq}-", 1.0, tag="m"))
    return cat.load_table(name)


def oracle(tbl):
    columns = [f.name for f in tbl.schema().fields]
    snaps = []
    # The lineage of the current snapshot, oldest first.
    chain = []
    snap = tbl.current_snapshot()
    while snap is not None:
        chain.append(snap)
        snap = tbl.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id else None
    for snap in reversed(chain):
        got = tbl.scan(snapshot_id=snap.snapshot_id).to_arrow().to_pylist()
        snaps.append({
            "id": snap.snapshot_id,
            "parent": snap.parent_snapshot_id,
            "seq": snap.sequence_number,
            "timestamp_ms": snap.timestamp_ms,
            "operation": snap.summary.operation.value if snap.summary else None,
            "rows": [[r.get(c) for c in columns] for r in got],
        })
    return {"columns": columns, "snapshots": snaps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=["init", "small", "more"])
    ap.add_argument("--table", required=True)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--seq", type=int, default=1)
    args = ap.parse_args()
    cat = catalog()
    if args.step == "init":
        tbl = init(cat, args.table)
    elif args.step == "small":
        tbl = small(cat, args.table)
    else:
        tbl = more(cat, args.table, args.seq)
    with open(args.oracle, "w") as f:
        json.dump(oracle(tbl), f)


if __name__ == "__main__":
    main()
