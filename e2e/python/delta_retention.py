"""Writes a Delta table with short retentions with delta-rs (deltalake), and
runs delta-rs's own maintenance on it: the e2e test of the Delta retention
watch (e2e/protect_delta_test.go).

    delta_retention.py write TABLE_DIR --retention SECONDS
    delta_retention.py clean TABLE_DIR

"write" creates the table with delta.logRetentionDuration and
delta.deletedFileRetentionDuration of SECONDS seconds and commits versions
0-3: an append of ids 1-3, an append of 4-6, a delete of id 2 (a file
rewritten: one removed), an append of 7. "clean" commits an append of 8
(version 4), writes a checkpoint there, runs cleanup_metadata (log entries
older than the log retention and before the checkpoint go), then a full
vacuum (every data file the table no longer references; retention 0, not
enforced: the short retention is in seconds, vacuum's in hours).
Both print JSON: the table's versions as delta-rs reads them (history), and
for "clean" the log files and data files vacuum deleted.
"""

import argparse
import json
import os

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake


def rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids])})


def log_files(path):
    return sorted(os.listdir(os.path.join(path, "_delta_log")))


def write(path, seconds):
    conf = {"delta.logRetentionDuration": f"interval {seconds} seconds",
            "delta.deletedFileRetentionDuration": f"interval {seconds} seconds"}
    write_deltalake(path, rows([1, 2, 3]), configuration=conf)
    write_deltalake(path, rows([4, 5, 6]), mode="append")
    DeltaTable(path).delete("id = 2")
    write_deltalake(path, rows([7]), mode="append")
    dt = DeltaTable(path)
    return {"version": dt.version(), "log": log_files(path)}


def clean(path):
    write_deltalake(path, rows([8]), mode="append")
    dt = DeltaTable(path)
    dt.create_checkpoint()
    before = log_files(path)
    dt.cleanup_metadata()
    # full: every file the table does not reference (the checkpoint has
    # dropped the remove actions older than the retention).
    vacuumed = dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, full=True)
    return {"version": dt.version(), "log_before": before, "log": log_files(path), "vacuumed": vacuumed}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=["write", "clean"])
    ap.add_argument("table")
    ap.add_argument("--retention", type=int, default=4)
    args = ap.parse_args()
    out = write(args.table, args.retention) if args.step == "write" else clean(args.table)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
