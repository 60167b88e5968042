#!/usr/bin/env python3
"""Writes the Spark-written Delta fixtures under testdata/delta/written/.

Tables are written by Spark 3.5 with Delta Lake's Spark connector
(delta-spark 3.3; local mode bound to 127.0.0.1, UI off, one core, one
shuffle partition, adaptive execution off), each into a scratch directory,
then copied into testdata/delta/written/<name>/ (without Hadoop's hidden
.crc side files; Delta's own _delta_log/<version>.crc checksum files are
kept) with an EXPECTED.json that holds, per version, the operation (DESCRIBE
HISTORY), the commit's log actions, and the full table state as Spark reads
it (SELECT * FROM delta.`path` VERSION AS OF v); for tables with the change
data feed on also Spark's change feed of that one version
(readChangeFeed, startingVersion = endingVersion = v).

These tables exercise what delta-rs does not write: deletion vectors, column
mapping with renames and drops, classic / multi-part / V2 checkpoints, type
widening, TIMESTAMP_NTZ.

Usage (see README.md beside this file), from the repository root:
    .tmp/deltagen-spark-venv/bin/python testdata/delta/gen/spark_delta_fixtures.py [--only NAME ...]
"""

import argparse
import datetime as dt
import decimal
import json
import os
import shutil
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
# DELTA_SPARK_JARS, when set, is a file listing the Delta jars one per line
# (the Spark Connect 4.2 install's .tmp/spark-connect-4.2/jars): Spark loads
# them (spark.jars) instead of resolving the package, and no delta-spark
# wheel is needed.
DELTA_JARS = os.environ.get("DELTA_SPARK_JARS")


def _delta_package():
    """The Delta jar matching the installed delta-spark wheel: Scala 2.12
    for Spark 3.5 (delta-spark 3.x), 2.13 for Spark 4 (delta-spark 4.x)."""
    from importlib.metadata import version
    if DELTA_JARS:
        with open(DELTA_JARS) as f:
            jar = next(os.path.basename(j.strip()) for j in f if "delta-spark_" in j)
        # io.delta_delta-spark_4.2_2.13-4.4.0.jar
        art, v = jar.removesuffix(".jar").removeprefix("io.delta_").rsplit("-", 1)
        return f"io.delta:{art}:{v}"
    v = version("delta-spark")
    if v.startswith("3.") or v.startswith("4.0."):
        return f"io.delta:delta-spark_{'2.12' if v.startswith('3.') else '2.13'}:{v}"
    # From 4.1 on the artifact names the Spark release too (as
    # delta.pip_utils does): io.delta:delta-spark_4.2_2.13:4.4.1.
    spark = ".".join(version("pyspark").split(".")[:2])
    return f"io.delta:delta-spark_{spark}_2.13:{v}"


DELTA_PACKAGE = _delta_package()
DELTA_MAJOR = int(DELTA_PACKAGE.rsplit(":", 1)[1].split(".")[0])

VALUE_ENCODING = ("long/int/short/byte: JSON integers; double/float: JSON numbers; string; bool; "
                  "date: YYYY-MM-DD; timestamp (Spark TIMESTAMP, Delta 'timestamp'): ISO-8601 UTC with "
                  "microseconds and Z; timestamp without zone (TIMESTAMP_NTZ): ISO-8601 with microseconds, "
                  "no zone; decimal: string; null: null")


def spark_session(scratch):
    from pyspark.sql import SparkSession

    os.makedirs(scratch, exist_ok=True)
    b = SparkSession.builder.master("local[1]").appName("sluice-delta-fixtures")
    if DELTA_JARS:
        with open(DELTA_JARS) as f:
            b = b.config("spark.jars", ",".join(j.strip() for j in f if j.strip()))
    else:
        b = (b.config("spark.jars.packages", DELTA_PACKAGE)
             .config("spark.jars.ivy", os.path.join(REPO, ".tmp", "deltagen-ivy")))
    return (b
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.local.dir", os.path.join(scratch, "local"))
            .config("spark.sql.warehouse.dir", os.path.join(scratch, "spark-warehouse"))
            # C1 only and the serial collector: these runs are short, and the
            # JIT's own threads would otherwise compete for the two cores.
            .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 "
                    "-XX:+UseSerialGC -Dderby.system.home=" + scratch)
            .config("spark.sql.codegen.wholeStage", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.default.parallelism", "1")
            .config("spark.sql.adaptive.enabled", "false")
            # Delta's log replay runs as a Spark job with 50 partitions by
            # default: one is plenty for these tables, and much faster.
            .config("spark.databricks.delta.snapshotPartitions", "1")
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            .getOrCreate())


def jsonable(v, utc=False):
    """Row values as JSON. PySpark hands TIMESTAMP and TIMESTAMP_NTZ values
    over as naive datetimes (TIMESTAMP in the process's zone, pinned to
    UTC here): TIMESTAMP gets a Z, TIMESTAMP_NTZ none."""
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return v.isoformat(timespec="microseconds") + ("Z" if utc else "")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    return v


def utc_columns(df):
    from pyspark.sql.types import TimestampType
    return {f.name for f in df.schema.fields if isinstance(f.dataType, TimestampType)}


def rows_of(df):
    cols, utc = df.columns, utc_columns(df)
    return [{c: jsonable(r[c], c in utc) for c in cols} for r in df.collect()]


def sort_key(r):
    i = r.get("id")
    return (i is None, i if isinstance(i, (int, float)) else 0, json.dumps(r, sort_keys=True))


class Fixture:
    def __init__(self, spark, name, work, cdf=False):
        self.spark, self.name, self.cdf = spark, name, cdf
        self.path = os.path.join(work, name)
        if os.path.exists(self.path):
            shutil.rmtree(self.path)
        self.ident = f"delta.`{self.path}`"
        self.statements = []
        self.snapshots = []
        self.cdf_reads = []
        self.notes = []
        # lineage: record each row's row id and row commit version as Spark
        # reads them (_metadata.row_id, _metadata.row_commit_version).
        self.lineage = False

    def sql(self, q):
        return self.spark.sql(q)

    def version(self):
        d = os.path.join(self.path, "_delta_log")
        if not os.path.isdir(d):
            return -1
        vs = [int(f[:20]) for f in os.listdir(d) if f.endswith(".json") and f[:20].isdigit() and len(f) == 25]
        return max(vs, default=-1)

    def step(self, label, q, conf=None):
        """Runs one statement and records the versions it committed, each
        read back the way Spark reads it. conf: session settings for this
        statement only."""
        before = self.version()
        old = {}
        for k, v in (conf or {}).items():
            old[k] = self.spark.conf.get(k, None)
            self.spark.conf.set(k, v)
        try:
            out = self.sql(q).collect()
        finally:
            for k, v in old.items():
                if v is None:
                    self.spark.conf.unset(k)
                else:
                    self.spark.conf.set(k, v)
        after = self.version()
        versions = list(range(before + 1, after + 1))
        st = {"label": label, "sql": " ".join(q.replace(self.path, "<table>").split()),
              "version": versions[-1] if versions else None}
        if len(versions) > 1:
            st["versions"] = versions
        if conf:
            st["session_conf"] = conf
        if out and len(out) <= 4:
            res = json.dumps([{k: jsonable(v) for k, v in r.asDict(recursive=True).items()} for r in out], default=str)
            st["result"] = json.loads(res.replace("file:" + self.path, "<table>").replace(self.path, "<table>"))
        self.statements.append(st)
        print(f"[{self.name}] {label}: versions {versions}", flush=True)
        for v in versions:
            self.record(v)
        return out

    def try_step(self, label, q):
        """A statement this release may refuse: the refusal is recorded."""
        try:
            self.step(label, q)
        except Exception as e:
            msg = " ".join(str(e).replace(self.path, "<table>").split())[:300]
            self.statements.append({"label": label, "sql": " ".join(q.replace(self.path, "<table>").split()),
                                    "version": None, "error": msg})
            self.notes.append(f"delta-spark {delta_version()} refuses {label}: {msg}")
            print(f"[{self.name}] {label} refused: {msg[:200]}", flush=True)

    def commit_info(self, v):
        """The commit's commitInfo (what DESCRIBE HISTORY shows), read from
        the log file rather than with one more Spark job per version."""
        p = os.path.join(self.path, "_delta_log", "%020d.json" % v)
        with open(p) as f:
            for line in f:
                a = json.loads(line)
                if "commitInfo" in a:
                    return a["commitInfo"]
        return {}

    def log_actions(self, v):
        p = os.path.join(self.path, "_delta_log", "%020d.json" % v)
        out = {"add": [], "remove": [], "cdc": [], "other": []}
        with open(p) as f:
            for line in f:
                a = json.loads(line)
                (k, body), = a.items()
                if k in ("add", "remove", "cdc"):
                    e = {"path": body["path"], "dataChange": body.get("dataChange"),
                         "partitionValues": body.get("partitionValues")}
                    if body.get("deletionVector"):
                        e["deletionVector"] = body["deletionVector"]
                    if k == "add" and body.get("stats"):
                        e["numRecords"] = json.loads(body["stats"]).get("numRecords")
                    out[k].append(e)
                elif k == "metaData":
                    out["other"].append({"metaData": {"schemaString": json.loads(body["schemaString"]),
                                                      "partitionColumns": body.get("partitionColumns"),
                                                      "configuration": body.get("configuration")}})
                elif k == "protocol":
                    out["other"].append({"protocol": body})
                elif k != "commitInfo":
                    out["other"].append(k)
        return out

    def record(self, v):
        h = self.commit_info(v)
        df = self.sql(f"SELECT * FROM {self.ident} VERSION AS OF {v}")
        rows = sorted(rows_of(df), key=sort_key)
        params = h.get("operationParameters") or {}
        snap = {
            "version": v,
            "operation": h.get("operation"),
            "operation_parameters": {k: val.replace(self.path, "<table>") if isinstance(val, str) else val
                                     for k, val in params.items()},
            "operation_metrics": dict(h.get("operationMetrics") or {}),
            "readable": True,
            "columns": [[f.name, f.dataType.simpleString()] for f in df.schema.fields],
            "actions": self.log_actions(v),
            "rows": rows,
        }
        if self.lineage:
            ldf = self.sql(f"SELECT id, _metadata.row_id AS _row_id, _metadata.row_commit_version AS "
                           f"_row_commit_version FROM {self.ident} VERSION AS OF {v}")
            snap["lineage"] = sorted((r.asDict() for r in ldf.collect()), key=lambda r: r["id"])
        for k in [k for k in snap["operation_metrics"] if k.endswith("TimeMs")]:
            del snap["operation_metrics"][k]
        self.snapshots.append(snap)
        if self.cdf:
            try:
                cdf = (self.spark.read.format("delta").option("readChangeFeed", "true")
                       .option("startingVersion", v).option("endingVersion", v).load(self.path))
                crow = rows_of(cdf)
                crow.sort(key=lambda r: (r["_change_type"], sort_key(r)))
                self.cdf_reads.append({"version": v, "rows": crow})
            except Exception as e:
                msg = " ".join(str(e).replace(self.path, "<table>").split())[:400]
                self.cdf_reads.append({"version": v, "error": msg})
        a = snap["actions"]
        print(f"[{self.name}] v{v} {snap['operation']}: {len(rows)} rows, +{len(a['add'])} -{len(a['remove'])} "
              f"cdc {len(a['cdc'])} dv {sum(1 for x in a['add'] if 'deletionVector' in x)}", flush=True)

    def write(self, out_dir, what):
        dest = os.path.join(out_dir, self.name)
        if os.path.exists(dest):
            shutil.rmtree(dest)
        # Hadoop's local file system writes a hidden .<file>.crc beside every
        # file: not part of the table. Delta's own <version>.crc are kept.
        shutil.copytree(self.path, dest, ignore=lambda d, fs: [f for f in fs if f.startswith(".") and f.endswith(".crc")])
        meta = self.sql(f"DESCRIBE DETAIL {self.ident}").collect()[0]
        expected = {
            "fixture": self.name,
            "writer": f"Spark {self.spark.version}, delta-spark {delta_version()}",
            "what": what,
            "configuration": dict(meta["properties"] or {}),
            "partition_by": list(meta["partitionColumns"] or []),
            "protocol": {"minReaderVersion": meta["minReaderVersion"], "minWriterVersion": meta["minWriterVersion"],
                         "tableFeatures": sorted(meta["tableFeatures"] or [])}
            if "tableFeatures" in meta.asDict() else None,
            "cdf": self.cdf,
            "versions": [s["version"] for s in self.snapshots],
            "value_encoding": VALUE_ENCODING,
            "notes": self.notes,
            "statements": self.statements,
            "snapshots": self.snapshots,
        }
        if self.cdf:
            expected["cdf_reads"] = self.cdf_reads
        with open(os.path.join(dest, "EXPECTED.json"), "w") as f:
            f.write(dump_json(expected) + "\n")
        leaks = [os.path.join(d, fn) for d, _, fs in os.walk(dest) for fn in fs
                 if self.path.lstrip("/").encode() in open(os.path.join(d, fn), "rb").read()]
        if leaks:
            sys.exit(f"the scratch path {self.path} leaked into {leaks}")


def dump_json(v, ind=""):
    """JSON with one line per row: objects and lists of scalars only are
    written on one line, everything else indented by one space a level."""
    def flat(x):
        return not isinstance(x, (dict, list)) or (
            isinstance(x, dict) and all(not isinstance(y, (dict, list)) or y == [] or y == {} for y in x.values())) or (
            isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x))
    if flat(v):
        return json.dumps(v, ensure_ascii=False)
    nxt = ind + " "
    if isinstance(v, dict):
        items = [f"{nxt}{json.dumps(k)}: {dump_json(x, nxt)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + ind + "}"
    items = [nxt + dump_json(x, nxt) for x in v]
    return "[\n" + ",\n".join(items) + "\n" + ind + "]"


def delta_version():
    return DELTA_PACKAGE.rsplit(":", 1)[1]


# ---- the tables -----------------------------------------------------------

def vals(ids, day_base=1):
    """VALUES rows (id, name, amount, day, ts) with nulls sprinkled in."""
    out = []
    for i in ids:
        name = "NULL" if i % 7 == 3 else repr("n%02d" % i)
        amount = "NULL" if i % 5 == 4 else f"{i * 1.25}"
        day = "NULL" if i % 6 == 5 else f"DATE'2024-02-{(i % 28) + day_base:02d}'"
        ts = "NULL" if i % 8 == 6 else f"TIMESTAMP'2024-02-{(i % 28) + 1:02d} {i % 24:02d}:{i % 60:02d}:00.{i * 1111 % 1000000:06d}'"
        out.append(f"({i}, {name}, {amount}, {day}, {ts})")
    return ", ".join(out)


def build_dv(spark, work, cdf):
    name = "spark_dv_cdf" if cdf else "spark_dv"
    fx = Fixture(spark, name, work, cdf=cdf)
    props = "'delta.enableDeletionVectors' = 'true'"
    if cdf:
        props += ", 'delta.enableChangeDataFeed' = 'true'"
    fx.step("create", f"CREATE TABLE {fx.ident} (id BIGINT NOT NULL, name STRING, amount DOUBLE, day DATE, "
                      f"ts TIMESTAMP) USING delta TBLPROPERTIES ({props})")
    fx.step("insert 1-12 (file A)", f"INSERT INTO {fx.ident} VALUES {vals(range(1, 13))}")
    fx.step("insert 13-20 (file B)", f"INSERT INTO {fx.ident} VALUES {vals(range(13, 21))}")
    fx.step("delete 2, 5 (a DV on file A)", f"DELETE FROM {fx.ident} WHERE id IN (2, 5)")
    fx.step("update 3, 14 (DVs on A and B, updated rows in a new file)",
            f"UPDATE {fx.ident} SET name = concat(coalesce(name, 'null'), '-u'), amount = -1.5 WHERE id IN (3, 14)")
    fx.step("merge: update 6, delete 15, insert 21, 22", f"""
        MERGE INTO {fx.ident} t
        USING (SELECT * FROM VALUES (6L, 'm06', 'u'), (15L, NULL, 'd'), (21L, 'm21', 'i'), (22L, NULL, 'i')
               AS s(id, name, op)) s
        ON t.id = s.id
        WHEN MATCHED AND s.op = 'd' THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.name = s.name, t.amount = t.amount + 100
        WHEN NOT MATCHED THEN INSERT (id, name, amount, day, ts)
            VALUES (s.id, s.name, 21.5, DATE'2024-03-21', TIMESTAMP'2024-03-21 21:21:21.212121')""")
    fx.step("delete 7, 9 (file A again: its DV replaced by one with 2, 3, 5, 6, 7, 9)",
            f"DELETE FROM {fx.ident} WHERE id IN (7, 9)")
    fx.step("OPTIMIZE (compaction, dataChange=false; DVs applied)", f"OPTIMIZE {fx.ident}")
    fx.step("insert 23-26", f"INSERT INTO {fx.ident} VALUES {vals(range(23, 27))}")
    fx.step("delete 1, 24 (new DVs after compaction)", f"DELETE FROM {fx.ident} WHERE id IN (1, 24)")
    fx.step("REORG TABLE ... APPLY (PURGE) (rewrites files with DVs, dataChange=false)",
            f"REORG TABLE {fx.ident} APPLY (PURGE)")
    fx.step("delete where amount is null (DVs again, a whole-file delete if any)",
            f"DELETE FROM {fx.ident} WHERE amount IS NULL")
    return fx, ("deletion vectors" + (" with the change data feed" if cdf else "") +
                ": two inserts, DELETE (a DV), UPDATE (DVs on two files + a new file), MERGE (DVs + a new file), "
                "a second DELETE on the same file (the DV replaced: remove with the old DV, add of the same path "
                "with the new one), OPTIMIZE, insert, DELETE, REORG TABLE APPLY (PURGE), DELETE of null amounts")


def build_row_tracking(spark, work):
    """Row tracking (delta.enableRowTracking) without the change data feed:
    copy-on-write UPDATE, MERGE and DELETE (rewritten files materialize the
    row ids and commit versions of the rows they keep), an UPDATE of the
    column that looks like a key, then deletion vectors, OPTIMIZE."""
    fx = Fixture(spark, "spark4_row_tracking", work)
    fx.lineage = True
    fx.step("create", f"CREATE TABLE {fx.ident} (id BIGINT NOT NULL, name STRING, amount DOUBLE, day DATE, "
                      f"ts TIMESTAMP) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
                      f"'delta.enableDeletionVectors' = 'false')")
    fx.step("insert 1-10 (file A)", f"INSERT INTO {fx.ident} VALUES {vals(range(1, 11))}")
    fx.step("insert 11-16 (file B)", f"INSERT INTO {fx.ident} VALUES {vals(range(11, 17))}")
    fx.step("update 2, 12 (rewrites A and B)",
            f"UPDATE {fx.ident} SET name = concat(coalesce(name, 'null'), '-u'), amount = -1.5 WHERE id IN (2, 12)")
    fx.step("merge: update 3, delete 13, insert 17, 18", f"""
        MERGE INTO {fx.ident} t
        USING (SELECT * FROM VALUES (3L, 'm03', 'u'), (13L, NULL, 'd'), (17L, 'm17', 'i'), (18L, NULL, 'i')
               AS s(id, name, op)) s
        ON t.id = s.id
        WHEN MATCHED AND s.op = 'd' THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.name = s.name, t.amount = coalesce(t.amount, 0) + 100
        WHEN NOT MATCHED THEN INSERT (id, name, amount, day, ts)
            VALUES (s.id, s.name, 17.5, DATE'2024-03-17', TIMESTAMP'2024-03-17 17:17:17.171717')""")
    fx.step("delete 5", f"DELETE FROM {fx.ident} WHERE id = 5")
    fx.step("update amount = amount for 4 (every value unchanged)", f"UPDATE {fx.ident} SET amount = amount WHERE id = 4")
    fx.step("update of id: 8 becomes 80", f"UPDATE {fx.ident} SET id = 80 WHERE id = 8")
    fx.step("enable deletion vectors", f"ALTER TABLE {fx.ident} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    fx.step("update 6, 16 (deletion vectors)", f"UPDATE {fx.ident} SET name = 'dv' WHERE id IN (6, 16)")
    fx.step("delete 9 (a deletion vector)", f"DELETE FROM {fx.ident} WHERE id = 9")
    fx.step("OPTIMIZE (compaction, dataChange=false)", f"OPTIMIZE {fx.ident}")
    fx.step("update 7 after compaction", f"UPDATE {fx.ident} SET amount = 7.77 WHERE id = 7")
    return fx, ("row tracking, CDF off: two inserts, copy-on-write UPDATE, MERGE, DELETE, a no-op UPDATE, an UPDATE "
                "of id, then deletion vectors: UPDATE, DELETE, OPTIMIZE, UPDATE; lineage holds Spark's "
                "_metadata.row_id and row_commit_version per version")


def build_colmap_name(spark, work):
    fx = Fixture(spark, "spark_colmap_name", work)
    fx.step("create (partitioned by `the region`, a column with a space)", f"""
        CREATE TABLE {fx.ident} (id BIGINT NOT NULL, name STRING, amount DOUBLE, flag BOOLEAN,
            `the region` STRING) USING delta PARTITIONED BY (`the region`)
        TBLPROPERTIES ('delta.columnMapping.mode' = 'name')""")
    fx.step("insert 1-8 (partition values with a space, a slash, a percent sign, '=' and null)", f"""
        INSERT INTO {fx.ident} VALUES
        (1, 'a', 1.5, true, 'north'), (2, 'b', NULL, false, 'south east'), (3, NULL, 3.5, NULL, 'a/b%c'),
        (4, 'd', 4.5, true, NULL), (5, 'e', 5.5, false, 'north'), (6, 'f', 6.5, true, 'k=v'),
        (7, 'g', NULL, NULL, 'south east'), (8, 'h', 8.5, false, 'été')""")
    fx.step("rename name to label", f"ALTER TABLE {fx.ident} RENAME COLUMN name TO label")
    fx.step("insert 9-11 (after the rename)", f"""
        INSERT INTO {fx.ident} (id, label, amount, flag, `the region`) VALUES
        (9, 'i', 9.5, true, 'north'), (10, NULL, 10.5, NULL, 'a/b%c'), (11, 'k', 11.5, false, NULL)""")
    fx.step("drop column flag", f"ALTER TABLE {fx.ident} DROP COLUMN flag")
    fx.step("add column note", f"ALTER TABLE {fx.ident} ADD COLUMNS (note STRING)")
    fx.step("add column `amount` again? no: add `flag` (a new column reusing a dropped name)",
            f"ALTER TABLE {fx.ident} ADD COLUMNS (flag INT)")
    fx.step("insert 12-13", f"""
        INSERT INTO {fx.ident} (id, label, amount, `the region`, note, flag) VALUES
        (12, 'l', 12.5, 'north', 'n12', 12), (13, 'm', NULL, 'k=v', NULL, NULL)""")
    fx.step("update (rows in three partitions)", f"""
        UPDATE {fx.ident} SET label = concat(coalesce(label, 'null'), '-u'), note = 'upd'
        WHERE id IN (1, 3, 9, 12)""")
    fx.step("delete 2, 6, 13", f"DELETE FROM {fx.ident} WHERE id IN (2, 6, 13)")
    fx.step("rename the partition column `the region` to `region:x`",
            f"ALTER TABLE {fx.ident} RENAME COLUMN `the region` TO `region:x`")
    fx.step("insert 14", f"INSERT INTO {fx.ident} (id, label, amount, `region:x`, note, flag) "
                         f"VALUES (14, 'n', 14.5, 'north', 'n14', 14)")
    return fx, ("column mapping, name mode: partitioned by a column named `the region` (later renamed to "
                "`region:x`), partition values with a space, slash, percent, '=', non-ASCII and null; "
                "RENAME COLUMN, DROP COLUMN, ADD COLUMN (incl. one reusing the dropped name), UPDATE, DELETE")


def build_colmap_id(spark, work):
    fx = Fixture(spark, "spark_colmap_id", work)
    fx.step("create", f"""
        CREATE TABLE {fx.ident} (id BIGINT NOT NULL, name STRING, amount DOUBLE, day DATE, ts TIMESTAMP)
        USING delta TBLPROPERTIES ('delta.columnMapping.mode' = 'id')""")
    fx.step("insert 1-6", f"INSERT INTO {fx.ident} VALUES {vals(range(1, 7))}")
    fx.step("rename amount to total", f"ALTER TABLE {fx.ident} RENAME COLUMN amount TO total")
    fx.step("insert 7-9", f"INSERT INTO {fx.ident} VALUES {vals(range(7, 10))}")
    fx.step("rename name to label, then drop day", f"ALTER TABLE {fx.ident} RENAME COLUMN name TO label")
    fx.step("drop day", f"ALTER TABLE {fx.ident} DROP COLUMN day")
    fx.step("update 2, 8", f"UPDATE {fx.ident} SET total = coalesce(total, 0) + 1000 WHERE id IN (2, 8)")
    fx.step("delete 4", f"DELETE FROM {fx.ident} WHERE id = 4")
    return fx, ("column mapping, id mode (parquet field ids): inserts, RENAME COLUMN twice, DROP COLUMN, "
                "UPDATE, DELETE")


def build_checkpoint(spark, work):
    fx = Fixture(spark, "spark_checkpoint", work)
    fx.step("create (checkpoint every 2 commits)", f"""
        CREATE TABLE {fx.ident} (id BIGINT NOT NULL, name STRING, amount DOUBLE, day DATE, ts TIMESTAMP)
        USING delta TBLPROPERTIES ('delta.checkpointInterval' = '2')""")
    for k in range(4):
        lo = 1 + 4 * k
        fx.step(f"insert {lo}-{lo + 3}", f"INSERT INTO {fx.ident} VALUES {vals(range(lo, lo + 4))}")
    fx.step("delete 2, 7 (removes in the next checkpoint)", f"DELETE FROM {fx.ident} WHERE id IN (2, 7)")
    small = {"spark.databricks.delta.checkpoint.partSize": "3"}
    fx.step("insert 17-20 (partSize 3: this and later checkpoints multi-part)",
            f"INSERT INTO {fx.ident} VALUES {vals(range(17, 21))}", conf=small)
    fx.step("update 1, 18", f"UPDATE {fx.ident} SET amount = -amount, name = 'u' WHERE id IN (1, 18)", conf=small)
    fx.step("insert 21-24", f"INSERT INTO {fx.ident} VALUES {vals(range(21, 25))}", conf=small)
    fx.step("delete 21", f"DELETE FROM {fx.ident} WHERE id = 21", conf=small)
    fx.step("insert 25-26", f"INSERT INTO {fx.ident} VALUES {vals(range(25, 27))}")
    return fx, ("classic checkpoints (delta.checkpointInterval=2): single-file parquet checkpoints at "
                "the early even versions, then with spark.databricks.delta.checkpoint.partSize=3 multi-part "
                "checkpoints (<v>.checkpoint.<part>.<parts>.parquet); removes (tombstones) in checkpoints; "
                "a last commit after the newest checkpoint")


def build_v2checkpoint(spark, work):
    fx = Fixture(spark, "spark_v2checkpoint", work)
    fx.step("create (V2 checkpoints every 2 commits)", f"""
        CREATE TABLE {fx.ident} (id BIGINT NOT NULL, name STRING, amount DOUBLE, day DATE, ts TIMESTAMP)
        USING delta TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')""")
    parquet_top = {"spark.databricks.delta.checkpointV2.topLevelFileFormat": "parquet"}
    fx.step("insert 1-4 (top-level checkpoint files as parquet for now)",
            f"INSERT INTO {fx.ident} VALUES {vals(range(1, 5))}", conf=parquet_top)
    fx.step("insert 5-8", f"INSERT INTO {fx.ident} VALUES {vals(range(5, 9))}", conf=parquet_top)
    fx.step("delete 3", f"DELETE FROM {fx.ident} WHERE id = 3", conf=parquet_top)
    fx.step("insert 9-12 (this release's default from here: JSON top-level checkpoint files)",
            f"INSERT INTO {fx.ident} VALUES {vals(range(9, 13))}")
    fx.step("update 5", f"UPDATE {fx.ident} SET name = 'u5' WHERE id = 5")
    fx.step("insert 13-14", f"INSERT INTO {fx.ident} VALUES {vals(range(13, 15))}")
    return fx, ("V2 checkpoints (delta.checkpointPolicy=v2, the v2Checkpoint table feature): a UUID-named "
                "top-level checkpoint <v>.checkpoint.<uuid>.parquet at version 2, <v>.checkpoint.<uuid>.json "
                "(this release's default) at 4 and 6, each with checkpointMetadata and a sidecar file in "
                "_delta_log/_sidecars/")


def build_type_widening(spark, work, name="spark_type_widening"):
    fx = Fixture(spark, name, work)
    fx.step("create (type widening on)", f"""
        CREATE TABLE {fx.ident} (id BIGINT NOT NULL, qty INT, small SMALLINT, tiny TINYINT, ratio FLOAT,
            price DECIMAL(5, 2), day DATE) USING delta TBLPROPERTIES ('delta.enableTypeWidening' = 'true')""")
    fx.step("insert 1-4", f"""INSERT INTO {fx.ident} VALUES
        (1, 10, 100, 1, 1.5, 1.25, DATE'2024-05-01'), (2, NULL, -100, NULL, NULL, NULL, DATE'2024-05-02'),
        (3, 2147483647, 32767, 127, 3.25, 999.99, NULL), (4, -2147483648, NULL, -128, -0.5, -0.01, DATE'2024-05-04')""")
    fx.try_step("tiny TINYINT -> SMALLINT", f"ALTER TABLE {fx.ident} ALTER COLUMN tiny TYPE SMALLINT")
    fx.try_step("small SMALLINT -> INT", f"ALTER TABLE {fx.ident} ALTER COLUMN small TYPE INT")
    fx.step("insert 5-6 (tiny and small beyond their old types)", f"""INSERT INTO {fx.ident} VALUES
        (5, 5, 100000, 1000, 5.5, 5.5, DATE'2024-05-05'), (6, NULL, -2147483648, -32768, NULL, NULL, NULL)""")
    for label, col, typ in [("qty INT -> BIGINT", "qty", "BIGINT"),
                            ("ratio FLOAT -> DOUBLE", "ratio", "DOUBLE"),
                            ("price DECIMAL(5,2) -> DECIMAL(10,4)", "price", "DECIMAL(10, 4)"),
                            ("day DATE -> TIMESTAMP_NTZ", "day", "TIMESTAMP_NTZ")]:
        if col == "day" and DELTA_MAJOR >= 4:
            # delta-spark 4 asks for the timestampNtz feature to be enabled
            # by hand first.
            fx.try_step("enable the timestampNtz feature",
                        f"ALTER TABLE {fx.ident} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')")
        fx.try_step(label, f"ALTER TABLE {fx.ident} ALTER COLUMN {col} TYPE {typ}")
    widened = {st["label"].split(" ")[0] for st in fx.statements if st["version"] is not None and "->" in st["label"]}
    # Values only the widened types hold, where the release widened them.
    qty = "4294967296" if "qty" in widened else "7"
    ratio = "0.1D" if "ratio" in widened else "7.75"
    price = "12345.6789" if "price" in widened else "7.5"
    fx.step("insert 7 (beyond the old types where widened)",
            f"INSERT INTO {fx.ident} (id, qty, small, tiny, ratio, price) VALUES (7, {qty}, 7, 7, {ratio}, {price})")
    fx.step("update 1, 3 (rewrites a file written under the narrow types)",
            f"UPDATE {fx.ident} SET small = small + 1000000, tiny = 30000 WHERE id IN (1, 3)")
    fx.step("insert 8", f"INSERT INTO {fx.ident} (id, qty, small, tiny) VALUES (8, 8, 8, 8)")
    return fx, ("type widening (delta.enableTypeWidening, the typeWidening-preview feature in this release): "
                "TINYINT->SMALLINT and SMALLINT->INT with parquet files of the narrow types still live, inserts "
                "beyond the old ranges, an UPDATE rewriting an old file; INT->BIGINT, FLOAT->DOUBLE, "
                "DECIMAL widening and DATE->TIMESTAMP_NTZ attempted (statements with an error were refused "
                "by this release)")


def build_timestamp_ntz(spark, work):
    fx = Fixture(spark, "spark_timestamp_ntz", work, cdf=True)
    fx.step("create", f"""
        CREATE TABLE {fx.ident} (id BIGINT NOT NULL, ts TIMESTAMP, ts_local TIMESTAMP_NTZ, name STRING)
        USING delta TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')""")
    fx.step("insert 1-6", f"""INSERT INTO {fx.ident} VALUES
        (1, TIMESTAMP'2024-01-01 10:00:00.123456', TIMESTAMP_NTZ'2024-01-01 10:00:00.123456', 'a'),
        (2, NULL, TIMESTAMP_NTZ'1969-12-31 23:59:59.999999', 'b'),
        (3, TIMESTAMP'1999-12-31 23:59:59', NULL, NULL),
        (4, TIMESTAMP'2024-02-29 12:00:00', TIMESTAMP_NTZ'2024-02-29 12:00:00', 'd'),
        (5, TIMESTAMP'1900-01-01 00:00:00', TIMESTAMP_NTZ'1900-01-01 00:00:00', 'e'),
        (6, TIMESTAMP'2262-04-11 23:47:16.854775', TIMESTAMP_NTZ'9999-12-31 23:59:59.999999', 'f')""")
    fx.step("update 1, 4 (ts_local + 1 hour)",
            f"UPDATE {fx.ident} SET ts_local = ts_local + INTERVAL 1 HOUR WHERE id IN (1, 4)")
    fx.step("delete 2", f"DELETE FROM {fx.ident} WHERE id = 2")
    fx.step("insert 7", f"INSERT INTO {fx.ident} VALUES (7, NULL, NULL, 'g')")
    return fx, ("TIMESTAMP_NTZ (the timestampNtz table feature) beside TIMESTAMP, with the change data feed: "
                "pre-1970, far-future and leap-day values, nulls; UPDATE and DELETE (copy-on-write, no DVs)")


FIXTURES = {
    "spark_dv": lambda s, w: build_dv(s, w, cdf=False),
    "spark_dv_cdf": lambda s, w: build_dv(s, w, cdf=True),
    "spark_colmap_name": build_colmap_name,
    "spark_colmap_id": build_colmap_id,
    "spark_checkpoint": build_checkpoint,
    "spark_v2checkpoint": build_v2checkpoint,
    "spark_type_widening": build_type_widening,
    # Written with delta-spark 4 (Spark 4) in a venv of its own: type
    # widening is a stable feature there, with INT -> BIGINT and more.
    "spark4_type_widening": lambda s, w: build_type_widening(s, w, name="spark4_type_widening"),
    "spark_timestamp_ntz": build_timestamp_ntz,
    # delta-spark 4: row tracking.
    "spark4_row_tracking": build_row_tracking,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "testdata", "delta", "written"))
    ap.add_argument("--scratch", default=os.path.join(REPO, ".tmp", "deltagen-spark-scratch"))
    ap.add_argument("--only", action="append", choices=list(FIXTURES))
    args = ap.parse_args()
    # Each fixture belongs to one Delta major version (the writer is the
    # point of it): delta-spark 3.x writes the spark_* tables, 4.x the
    # spark4_* ones.
    mine = [n for n in FIXTURES if n.startswith("spark4_") == (DELTA_MAJOR >= 4)]
    names = args.only or mine
    if set(names) - set(mine):
        sys.exit(f"delta-spark {delta_version()} does not write {sorted(set(names) - set(mine))}")
    scratch = os.path.abspath(args.scratch)
    work = os.path.join(scratch, "tables")
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    spark = spark_session(scratch)
    spark.sparkContext.setLogLevel("WARN")
    print(f"Spark session up in {time.time() - t0:.1f}s", flush=True)
    failed = []
    try:
        for n in names:
            t = time.time()
            try:
                fx, what = FIXTURES[n](spark, work)
                fx.write(os.path.abspath(args.out), what)
            except Exception as e:  # the others are still written
                failed.append(n)
                print(f"[{n}] FAILED: {' '.join(str(e).split())[:500]}", flush=True)
                continue
            print(f"[{n}] written in {time.time() - t:.1f}s", flush=True)
    finally:
        spark.stop()
    print(f"total {time.time() - t0:.1f}s", flush=True)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
