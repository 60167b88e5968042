"""Writes Delta tables onto S3 with delta-rs (deltalake), and prints what
delta-rs itself reads of them: the oracle of the Delta object storage
end-to-end test (e2e/delta_s3_test.go).

    delta_s3_writer.py --root s3://bucket/prefix --expected OUT.json
    delta_s3_writer.py --append s3://bucket/prefix/table --ids 100,101

It writes two tables under the root: "orders", with the change data feed
on (create, append, delete, update, merge: change data files for the last
three), and "plain", with it off (create, append, delete, update: removes
and adds only). The S3 endpoint and key come from the environment:
SLUICE_S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY.

The oracle is JSON, one entry per table in the form of the Delta fixtures'
EXPECTED.json (internal/testkit/deltafx reads it): a query per window
[start_version, end_version] of the table's versions, with its rows. For
"orders" the rows are delta-rs's load_cdf; for "plain", whose feed delta-rs
cannot read, the difference of delta-rs's reads of consecutive versions
(rows of version v not in v-1 are inserts, the others deletes), as
multisets.

With --append it appends the rows of the given ids to a table (a commit
for a follow stream to see) and prints nothing.
"""

import argparse
import collections
import json
import os
import sys

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

COLUMNS = ["id", "name", "qty"]


def storage_options():
    return {
        "AWS_ENDPOINT_URL": os.environ["SLUICE_S3_ENDPOINT"],
        "AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
        "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
    }


def batch(ids, tag):
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"{tag}-{i}" for i in ids], pa.string()),
        "qty": pa.array([i * 10 for i in ids], pa.int64()),
    })


def write(uri, cdf):
    so = storage_options()
    config = {"delta.enableChangeDataFeed": "true"} if cdf else None
    write_deltalake(uri, batch([1, 2, 3, 4, 5, 6], "a"), storage_options=so, configuration=config)
    write_deltalake(uri, batch([7, 8, 9], "b"), mode="append", storage_options=so)
    dt = DeltaTable(uri, storage_options=so)
    dt.delete("id = 2 OR id = 8")
    dt = DeltaTable(uri, storage_options=so)
    dt.update(predicate="id >= 4 AND id <= 5", updates={"qty": "qty + 1", "name": "'u'"})
    if cdf:
        dt = DeltaTable(uri, storage_options=so)
        source = batch([1, 10], "m")
        (dt.merge(source, predicate="t.id = s.id", source_alias="s", target_alias="t")
           .when_matched_update_all()
           .when_not_matched_insert_all()
           .execute())
    return DeltaTable(uri, storage_options=so).version()


def cdf_rows(uri, start, end):
    dt = DeltaTable(uri, storage_options=storage_options())
    tbl = pa.table(dt.load_cdf(starting_version=start, ending_version=end).read_all())
    out = []
    for r in tbl.to_pylist():
        row = {c: r[c] for c in COLUMNS}
        row["_change_type"] = r["_change_type"]
        row["_commit_version"] = r["_commit_version"]
        out.append(row)
    return out


def state(uri, version):
    dt = DeltaTable(uri, storage_options=storage_options(), version=version)
    rows = dt.to_pyarrow_table(columns=COLUMNS).to_pylist()
    return collections.Counter(tuple(r[c] for c in COLUMNS) for r in rows)


def diff_rows(uri, start, end):
    out = []
    for v in range(start, end + 1):
        after = state(uri, v)
        before = state(uri, v - 1) if v > 0 else collections.Counter()
        for kind, rows in (("insert", after - before), ("delete", before - after)):
            for row, n in rows.items():
                for _ in range(n):
                    out.append({**dict(zip(COLUMNS, row)), "_change_type": kind, "_commit_version": v})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root")
    ap.add_argument("--expected")
    ap.add_argument("--append")
    ap.add_argument("--ids")
    args = ap.parse_args()
    if args.append:
        ids = [int(i) for i in args.ids.split(",")]
        write_deltalake(args.append, batch(ids, "f"), mode="append", storage_options=storage_options())
        return
    if not args.root or not args.expected:
        ap.error("--root and --expected are required")
    root = args.root.rstrip("/")
    out = {}
    for name, cdf in (("orders", True), ("plain", False)):
        uri = f"{root}/{name}"
        latest = write(uri, cdf)
        queries = []
        for start in range(0, latest + 1):
            for end in range(start, latest + 1):
                rows = cdf_rows(uri, start, end) if cdf else diff_rows(uri, start, end)
                queries.append({
                    "id": f"{name}:{start}-{end}",
                    "request": {"start_version": start, "end_version": end},
                    "columns": COLUMNS + ["_change_type", "_commit_version"],
                    "rows": rows,
                })
        out[name] = {"table": name, "latest": latest, "queries": queries}
    with open(args.expected, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
    # Skip the interpreter's teardown: a native library's threads, torn
    # down at exit, once aborted the process ("terminate called without an
    # active exception") after it had written everything.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
