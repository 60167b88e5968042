#!/usr/bin/env python3
"""Reads the delta-rs-written tables again with Spark + Delta and records
where Spark agrees with what delta-rs read (its EXPECTED.json).

For every table directory given (default: testdata/delta/written/deltars_seed*)
the table is copied into scratch (Spark only reads, but the committed copy
stays untouched whatever it does), and for every version that delta-rs could
still read at the end of its run, Spark reads the full state
(SELECT * FROM delta.`path` VERSION AS OF v) and, for tables with the change
data feed on, the change feed of that one version. The result goes to
SPARK_CROSSCHECK.json beside EXPECTED.json: per version whether the rows and
the change feed agree (as multisets; _commit_timestamp left out of the
comparison), and Spark's rows where they do not or where delta-rs gave no
answer. EXPECTED.json itself is not changed: it stays the writer's own
reading.

Usage, from the repository root:
    .tmp/deltagen-spark-venv/bin/python testdata/delta/gen/spark_crosscheck.py [DIR ...]
"""

import glob
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import spark_delta_fixtures as sdf  # noqa: E402  (sets TZ=UTC, SPARK_LOCAL_IP)


def canon(rows, drop=(), keep=None):
    return sorted(json.dumps({k: v for k, v in r.items() if k not in drop and (keep is None or k in keep)},
                             sort_keys=True) for r in rows)


def compare(entry, key, spark_rows, theirs, drop=()):
    """Sets entry[key] (exact agreement as multisets); when the two differ
    only in columns one of them lacks, says so: Spark reads a version's
    change feed with the table's newest schema."""
    entry[key] = canon(spark_rows, drop) == canon(theirs, drop)
    if entry[key]:
        return False
    cols_s = set().union(*[r.keys() for r in spark_rows]) if spark_rows else set()
    cols_t = set().union(*[r.keys() for r in theirs]) if theirs else set()
    common = cols_s & cols_t
    if cols_s != cols_t and len(spark_rows) == len(theirs) and \
            canon(spark_rows, drop, common) == canon(theirs, drop, common):
        entry[key + "_on_common_columns"] = True
        entry["spark_only_columns"] = sorted(cols_s - cols_t)
        entry["delta_rs_only_columns"] = sorted(cols_t - cols_s)
        return False
    return True


def crosscheck(spark, table_dir, scratch):
    with open(os.path.join(table_dir, "EXPECTED.json")) as f:
        exp = json.load(f)
    name = os.path.basename(os.path.normpath(table_dir))
    work = os.path.join(scratch, name)
    if os.path.exists(work):
        shutil.rmtree(work)
    shutil.copytree(table_dir, work, ignore=shutil.ignore_patterns("EXPECTED.json", "SPARK_CROSSCHECK.json"))
    ident = f"delta.`{work}`"
    cdf_by_v = {c["version"]: c for c in exp.get("cdf_reads", [])}
    out = []
    for snap in exp["snapshots"]:
        v = snap["version"]
        if not snap.get("readable"):
            continue
        entry = {"version": v, "operation": snap["operation"]}
        try:
            rows = sdf.rows_of(spark.sql(f"SELECT * FROM {ident} VERSION AS OF {v}"))
            if compare(entry, "rows_agree", rows, snap["rows"]):
                entry["spark_rows"] = sorted(rows, key=sdf.sort_key)
        except Exception as e:
            entry["spark_error"] = " ".join(str(e).replace(work, "<table>").split())[:400]
        if snap.get("cdf_enabled"):
            try:
                df = (spark.read.format("delta").option("readChangeFeed", "true")
                      .option("startingVersion", v).option("endingVersion", v).load(work))
                crow = sdf.rows_of(df)
                crow.sort(key=lambda r: (r["_change_type"], sdf.sort_key(r)))
                theirs = cdf_by_v.get(v, {})
                if "rows" in theirs:
                    if compare(entry, "cdf_agree", crow, theirs["rows"], drop=("_commit_timestamp",)):
                        entry["spark_cdf"] = crow
                else:
                    entry["cdf_agree"] = None
                    entry["delta_rs_cdf_error"] = theirs.get("error")
                    entry["spark_cdf"] = crow
            except Exception as e:
                entry["spark_cdf_error"] = " ".join(str(e).replace(work, "<table>").split())[:400]
        out.append(entry)
        flags = {k: entry[k] for k in ("rows_agree", "cdf_agree", "spark_error", "spark_cdf_error") if k in entry}
        print(f"[{name}] v{v} {snap['operation']}: {flags}", flush=True)
    result = {
        "reader": f"Spark {spark.version}, delta-spark {sdf.delta_version()}",
        "writer": exp["writer"],
        "compared": "full state per version (multiset of rows); change feed of each one version, "
                    "_commit_timestamp left out",
        "rows_disagree": [e["version"] for e in out if e.get("rows_agree") is False
                          and not e.get("rows_agree_on_common_columns")],
        "rows_differ_only_in_columns": [e["version"] for e in out if e.get("rows_agree_on_common_columns")],
        "spark_refused": [e["version"] for e in out if "spark_error" in e],
        "cdf_disagree": [e["version"] for e in out if e.get("cdf_agree") is False
                         and not e.get("cdf_agree_on_common_columns")],
        "cdf_differ_only_in_columns": [e["version"] for e in out if e.get("cdf_agree_on_common_columns")],
        "cdf_only_spark_answered": [e["version"] for e in out if "cdf_agree" in e and e["cdf_agree"] is None],
        "cdf_spark_refused": [e["version"] for e in out if "spark_cdf_error" in e],
        "versions": out,
    }
    with open(os.path.join(table_dir, "SPARK_CROSSCHECK.json"), "w") as f:
        f.write(sdf.dump_json(result) + "\n")
    return result


def main():
    dirs = sys.argv[1:] or sorted(glob.glob(os.path.join(sdf.REPO, "testdata", "delta", "written", "deltars_seed*")))
    scratch = os.path.join(sdf.REPO, ".tmp", "deltagen-spark-scratch")
    t0 = time.time()
    spark = sdf.spark_session(scratch)
    spark.sparkContext.setLogLevel("WARN")
    try:
        for d in dirs:
            t = time.time()
            r = crosscheck(spark, os.path.abspath(d), os.path.join(scratch, "crosscheck"))
            summary = {k: v for k, v in r.items() if k not in ("versions", "reader", "writer", "compared") and v}
            print(f"[{os.path.basename(d)}] {summary or 'all agree'} ({time.time() - t:.1f}s)", flush=True)
    finally:
        spark.stop()
    print(f"total {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
