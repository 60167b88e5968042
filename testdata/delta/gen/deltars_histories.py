#!/usr/bin/env python3
"""Writes one randomized Delta table history with delta-rs (the `deltalake`
package) and records, after every commit, what delta-rs itself reads.

The table has a unique key `id` (long) and the columns name (string),
amount (double), day (date), flag (bool), ts (timestamp, UTC, µs) and region
(string, low cardinality); depending on the seed it is partitioned by region
or day or not at all, has the change data feed on or off, sets
delta.enableDeletionVectors, uses column mapping (name mode) or an automatic
checkpoint interval. Then 10-20 random operations run: appends, whole and
predicate overwrites, deletes, updates, merges, optimize compact / z-order,
vacuum of removed files, schema changes (append with schema_mode="merge",
alter.add_columns), restore, checkpoints, log compaction and
cleanup_metadata. Rows include nulls in every nullable column (the
partition columns too).

The table directory (--out) gets EXPECTED.json beside _delta_log with, per
version, the operation (from history()), the full state as delta-rs reads it
(DeltaTable(path, version=v).to_pyarrow_table(), checked against delta-rs's
DataFusion reader), the log actions of the commit, and with the change data
feed on, load_cdf(starting_version=v, ending_version=v). See README.md.

Usage (from the repository root):
    .tmp/deltagen-rs-venv/bin/python testdata/delta/gen/deltars_histories.py \
        --seed 1 --out testdata/delta/written/deltars_seed1
"""

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()

import pyarrow as pa  # noqa: E402
import deltalake  # noqa: E402
from deltalake import DeltaTable, QueryBuilder, write_deltalake  # noqa: E402
from deltalake.schema import Field, PrimitiveType  # noqa: E402

REGIONS = ["north", "south", "east", "west"]
NAMES = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "ibis", "jay", "koi", "lark"]
DAYS = [dt.date(2024, 1, d) for d in (1, 2, 3, 4)]
UTC = dt.timezone.utc

VALUE_ENCODING = ("long/int: JSON integers; double: JSON numbers; string; bool; date: YYYY-MM-DD; "
                  "timestamp (UTC-adjusted, Delta 'timestamp'): ISO-8601 UTC with microseconds and Z; "
                  "_commit_timestamp of load_cdf: ISO-8601 UTC with milliseconds' precision shown as "
                  "microseconds and Z; null: null")


def config_for(seed):
    """The table's set-up, from the seed alone, so that seeds 1-6 cover
    every combination worth having: CDF on for odd seeds; partitioned by
    region, day or nothing in turn; deletion vectors asked for on seeds
    divisible by 4; column mapping on seeds divisible by 5; an automatic
    checkpoint every 4 commits on seeds divisible by 3."""
    part = [None, "region", "day"][seed % 3]
    configuration = {}
    if seed % 2 == 1:
        configuration["delta.enableChangeDataFeed"] = "true"
    if seed % 4 == 0:
        configuration["delta.enableDeletionVectors"] = "true"
    if seed % 5 == 0:
        configuration["delta.columnMapping.mode"] = "name"
    if seed % 3 == 0:
        configuration["delta.checkpointInterval"] = "4"
    return part, configuration


def jsonable(v):
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(UTC).replace(tzinfo=None)
            return v.isoformat(timespec="microseconds") + "Z"
        return v.isoformat(timespec="microseconds")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, float) and v != v:
        return "NaN"
    return v


def rows_of(table, sort=True, utc_naive=()):
    """A pyarrow table's rows as JSON values; utc_naive names naive
    timestamp columns that hold UTC (load_cdf's _commit_timestamp)."""
    rows = []
    for r in table.to_pylist():
        out = {}
        for k, v in r.items():
            if k in utc_naive and isinstance(v, dt.datetime) and v.tzinfo is None:
                v = v.replace(tzinfo=UTC)
            out[k] = jsonable(v)
        rows.append(out)
    if sort:
        rows.sort(key=lambda r: (r.get("id") is None, r.get("id") or 0, json.dumps(r, sort_keys=True)))
    return rows


def arrow_schema_of(table):
    return [[f.name, str(f.type)] for f in table.schema]


class History:
    def __init__(self, seed, path):
        self.seed = seed
        self.rng = random.Random(seed)
        self.path = path
        self.part, self.configuration = config_for(seed)
        self.cdf = self.configuration.get("delta.enableChangeDataFeed") == "true"
        self.extra_cols = []          # columns added by schema changes, in order
        self.next_id = 1
        self.statements = []
        self.snapshots = []
        self.cdf_rows = []
        self.notes = []
        self.vacuumed = False
        self.cleaned = False

    # ---- data ----------------------------------------------------------
    def maybe(self, v, p=0.15):
        return None if self.rng.random() < p else v

    def row(self, i, region=None, day=None):
        r = self.rng
        ts = dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(
            seconds=r.randrange(0, 90 * 86400), microseconds=r.randrange(0, 1000000))
        row = {
            "id": i,
            "name": self.maybe(r.choice(NAMES) + ("-%d" % i if r.random() < 0.3 else "")),
            "amount": self.maybe(round(r.uniform(-100, 1000), 2)),
            "day": day if day is not None else self.maybe(r.choice(DAYS), 0.1),
            "flag": self.maybe(r.random() < 0.5),
            "ts": self.maybe(ts),
            "region": region if region is not None else self.maybe(r.choice(REGIONS), 0.1),
        }
        for c in self.extra_cols:
            row[c] = self.maybe("%s-%d" % (c, i), 0.3)
        return row

    def schema(self, extra=None):
        fields = [
            pa.field("id", pa.int64()),
            pa.field("name", pa.string()),
            pa.field("amount", pa.float64()),
            pa.field("day", pa.date32()),
            pa.field("flag", pa.bool_()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("region", pa.string()),
        ]
        for c in self.extra_cols + ([extra] if extra else []):
            fields.append(pa.field(c, pa.string()))
        return pa.schema(fields)

    def batch(self, rows, extra=None):
        return pa.Table.from_pylist(rows, schema=self.schema(extra))

    def new_ids(self, n):
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return ids

    # ---- table ---------------------------------------------------------
    def table(self, version=None):
        return DeltaTable(self.path, version=version)

    def current(self):
        return rows_of(read_datafusion(self.table()))

    def current_ids(self):
        return [r["id"] for r in self.current()]

    def version(self):
        try:
            return self.table().version()
        except Exception:
            return -1

    def log_actions(self, v):
        """What the commit file of version v holds, summarized: counts of
        each action, the add/remove/cdc paths with dataChange and whether a
        deletion vector is attached."""
        p = os.path.join(self.path, "_delta_log", "%020d.json" % v)
        if not os.path.exists(p):
            return None
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
                elif k != "commitInfo":
                    out["other"].append(k)
        return out

    def record(self, versions):
        """Reads every new version the way delta-rs does and records it."""
        hist = {h["version"]: h for h in self.table().history()}
        for v in versions:
            h = hist.get(v, {})
            snap = {"version": v, "operation": h.get("operation"),
                    "operation_parameters": h.get("operationParameters")}
            self.snapshots.append(snap)
            try:
                t = self.table(v)
            except Exception as e:
                # Gone already: a post-commit hook (automatic checkpoint +
                # expired log cleanup) deleted this version's commit file.
                snap["readable"] = False
                snap["unreadable_at_commit"] = self.explain(e)
                snap["actions"] = self.log_actions(v)
                self.note(v, f"could not be read right after its commit: {snap['unreadable_at_commit']}")
                continue
            snap["readable"] = True
            snap["cdf_enabled"] = t.metadata().configuration.get("delta.enableChangeDataFeed") == "true"
            snap["protocol"] = protocol_of(t)
            snap["actions"] = self.log_actions(v)
            df = read_datafusion(t)
            df_rows = rows_of(df)
            try:
                arrow = t.to_pyarrow_table()
                rows, err = rows_of(arrow), None
                snap["columns"] = arrow_schema_of(arrow)
            except Exception as e:
                rows, err = None, self.explain(e)
                snap["columns"] = arrow_schema_of(df)
            snap["rows"] = rows
            if err is not None or df_rows != rows:
                # The two readers of delta-rs disagree (or to_pyarrow_table
                # refuses the table): keep both (see README).
                snap["readers_disagree"] = True
                snap["rows"] = df_rows
                if err is not None:
                    snap["to_pyarrow_table_error"] = err
                elif all(x is None for r in rows for x in r.values()):
                    snap["to_pyarrow_table_rows_all_null"] = len(rows)
                else:
                    snap["rows_to_pyarrow_table"] = rows
                self.note(v, "to_pyarrow_table() " + (f"fails ({err})" if err else "returns other rows") +
                          "; rows holds what the DataFusion reader (QueryBuilder) returns")
            if snap["cdf_enabled"]:
                try:
                    cdf = pa.table(t.load_cdf(starting_version=v, ending_version=v))
                    crow = rows_of(cdf, sort=False, utc_naive=("_commit_timestamp",))
                    crow.sort(key=lambda r: (r["_change_type"], r.get("id") is None, r.get("id") or 0,
                                             json.dumps(r, sort_keys=True)))
                    self.cdf_rows.append({"version": v, "columns": arrow_schema_of(cdf), "rows": crow})
                except Exception as e:  # recorded, not hidden
                    self.cdf_rows.append({"version": v, "error": self.explain(e)})
            a = snap["actions"] or {"add": "?", "remove": "?", "cdc": "?"}
            print(f"[seed {self.seed}] v{v} {snap['operation']}: {len(snap['rows'])} rows, "
                  f"+{len(a['add'])} -{len(a['remove'])} cdc {len(a['cdc'])}", flush=True)

    def note(self, v, text):
        print(f"NOTE version {v}: {text}", flush=True)
        for n in self.notes:
            if n["note"] == text:
                n["versions"].append(v)
                return
        self.notes.append({"note": text, "versions": [v]})

    def explain(self, e):
        msg = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).replace(self.path, "<table>").replace(self.path.lstrip("/"), "<table>")
        return f"{type(e).__name__}: {' '.join(msg.split())[:300]}"

    def run(self, op, params, fn):
        before = self.version()
        try:
            result, error = fn(), None
        except Exception as e:
            # The writer refused: recorded as such, and the history goes on.
            result, error = None, self.explain(e)
            print(f"[seed {self.seed}] {op} refused: {error}", flush=True)
        after = self.version()
        versions = list(range(before + 1, after + 1))
        st = {"op": op, "params": params, "version": versions[-1] if versions else None}
        if len(versions) > 1:
            st["versions"] = versions
        if result is not None:
            st["result"] = result
        if error is not None:
            st["error"] = error
        self.statements.append(st)
        print(f"[seed {self.seed}] {op} {json.dumps(params, default=str)[:160]} -> {versions}", flush=True)
        self.record(versions)

    # ---- operations ----------------------------------------------------
    def create(self):
        rows = [self.row(i) for i in self.new_ids(self.rng.randint(8, 14))]
        params = {"mode": "error", "rows": len(rows), "partition_by": self.part,
                  "configuration": self.configuration}
        self.run("create", params, lambda: write_deltalake(
            self.path, self.batch(rows), mode="error", partition_by=[self.part] if self.part else None,
            configuration=self.configuration))

    def op_append(self):
        rows = [self.row(i) for i in self.new_ids(self.rng.randint(3, 8))]
        self.run("write", {"mode": "append", "ids": [r["id"] for r in rows]},
                 lambda: write_deltalake(self.path, self.batch(rows), mode="append"))

    def op_overwrite(self):
        cur = self.current_ids()
        keep = sorted(self.rng.sample(cur, min(len(cur), self.rng.randint(2, 5))))
        rows = [self.row(i) for i in keep + self.new_ids(self.rng.randint(3, 7))]
        self.run("write", {"mode": "overwrite", "ids": [r["id"] for r in rows],
                           "note": "whole table; some ids kept with new values"},
                 lambda: write_deltalake(self.path, self.batch(rows), mode="overwrite"))

    def op_overwrite_where(self):
        if self.part == "day":
            d = self.rng.choice(DAYS)
            pred = f"day = '{d.isoformat()}'"
            old = [r["id"] for r in self.current() if r["day"] == d.isoformat()]
            kw = {"day": d}
        else:
            reg = self.rng.choice(REGIONS)
            pred = f"region = '{reg}'"
            old = [r["id"] for r in self.current() if r["region"] == reg]
            kw = {"region": reg}
        keep = old[: self.rng.randint(0, len(old))]
        rows = [self.row(i, **kw) for i in keep + self.new_ids(self.rng.randint(1, 4))]
        self.run("write", {"mode": "overwrite", "predicate": pred, "ids": [r["id"] for r in rows],
                           "note": "replaceWhere: rows matching the predicate replaced by these"},
                 lambda: write_deltalake(self.path, self.batch(rows), mode="overwrite", predicate=pred))

    def op_delete(self):
        cur = self.current_ids()
        kind = self.rng.choice(["ids", "ids", "amount", "flag_null", "region"])
        if kind == "ids" and cur:
            ids = sorted(self.rng.sample(cur, min(len(cur), self.rng.randint(1, 4))))
            pred = "id IN (%s)" % ", ".join(map(str, ids))
        elif kind == "amount":
            pred = "amount < %d" % self.rng.choice([0, 50, 100])
        elif kind == "flag_null":
            pred = "flag IS NULL"
        else:
            pred = f"region = '{self.rng.choice(REGIONS)}'"
        self.run("delete", {"predicate": pred}, lambda: metrics(self.table().delete(pred)))

    def op_update(self):
        cur = self.current_ids()
        if not cur:
            return self.op_append()
        ids = sorted(self.rng.sample(cur, min(len(cur), self.rng.randint(1, 5))))
        pred = "id IN (%s)" % ", ".join(map(str, ids))
        updates = self.rng.choice([
            {"amount": "amount * 2", "name": "'upd'"},
            {"flag": "NOT flag"},
            {"name": "NULL", "amount": "amount + 1.5"},
            {"day": "'2024-01-03'"} if self.part != "day" else {"amount": "-amount"},
        ])
        self.run("update", {"updates": updates, "predicate": pred},
                 lambda: metrics(self.table().update(updates=updates, predicate=pred)))

    def op_merge(self):
        cur = self.current_ids()
        matched = self.rng.sample(cur, min(len(cur), self.rng.randint(1, 5)))
        ops = {i: self.rng.choice(["u", "u", "d"]) for i in matched}
        rows = [dict(self.row(i), op=ops[i]) for i in sorted(matched)]
        rows += [dict(self.row(i), op="i") for i in self.new_ids(self.rng.randint(1, 3))]
        schema = self.schema().append(pa.field("op", pa.string()))
        src = pa.Table.from_pylist(rows, schema=schema)
        set_cols = ["name", "amount", "flag", "ts"] + self.extra_cols
        updates = {c: f"s.{c}" for c in set_cols}
        inserts = {c: f"s.{c}" for c in self.schema().names}
        params = {"predicate": "t.id = s.id", "source": [{"id": r["id"], "op": r["op"]} for r in rows],
                  "when_matched_update": {"predicate": "s.op = 'u'", "updates": updates},
                  "when_matched_delete": {"predicate": "s.op = 'd'"},
                  "when_not_matched_insert": {"updates": inserts}}
        self.run("merge", params, lambda: metrics(
            self.table().merge(src, predicate="t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update(updates=updates, predicate="s.op = 'u'")
            .when_matched_delete(predicate="s.op = 'd'")
            .when_not_matched_insert(updates=inserts)
            .execute()))

    def op_compact(self):
        self.run("optimize.compact", {}, lambda: metrics(self.table().optimize.compact()))

    def op_zorder(self):
        cols = ["id", "amount"]
        self.run("optimize.z_order", {"columns": cols}, lambda: metrics(self.table().optimize.z_order(cols)))

    def op_vacuum(self):
        params = {"retention_hours": 0, "enforce_retention_duration": False, "dry_run": False}

        def go():
            deleted = self.table().vacuum(**params)
            return {"files_deleted": sorted(rel_to(p, self.path) for p in deleted)}
        self.vacuumed = True
        self.run("vacuum", params, go)

    def op_add_column_merge(self):
        col = "note%d" % (len(self.extra_cols) + 1)
        rows = [self.row(i) for i in self.new_ids(self.rng.randint(2, 4))]
        for r in rows:
            r[col] = self.maybe(f"{col}-{r['id']}", 0.3)
        self.run("write", {"mode": "append", "schema_mode": "merge", "adds_column": col,
                           "ids": [r["id"] for r in rows]},
                 lambda: write_deltalake(self.path, self.batch(rows, extra=col), mode="append",
                                         schema_mode="merge"))
        if self.statements[-1]["version"] is not None:
            self.extra_cols.append(col)

    def op_add_column_alter(self):
        col = "note%d" % (len(self.extra_cols) + 1)
        self.run("alter.add_columns", {"field": col, "type": "string"},
                 lambda: self.table().alter.add_columns(Field(col, PrimitiveType("string"), nullable=True)))
        if self.statements[-1]["version"] is not None:
            self.extra_cols.append(col)

    def op_restore(self):
        cur = self.version()
        lo = max((s["version"] for s in self.snapshots if s["operation"] == "VACUUM END"), default=0)
        lo = max(lo, self.first_readable())
        # Not back past a schema change: later writes carry the new columns.
        for s in self.snapshots:
            if s["version"] >= lo and len(s.get("columns", [])) < len(self.schema()):
                lo = s["version"] + 1
        if lo >= cur:
            return self.op_append()
        target = self.rng.randrange(lo, cur)
        self.run("restore", {"target": target}, lambda: metrics(self.table().restore(target)))

    def first_readable(self):
        return min((s["version"] for s in self.snapshots if self.readable(s["version"])[0]), default=0)

    def op_checkpoint(self):
        self.run("create_checkpoint", {}, lambda: self.table().create_checkpoint())

    def op_compact_logs(self):
        cur = self.version()
        lo = max(self.first_readable(), cur - self.rng.randint(2, 4))
        if lo >= cur:
            return self.op_checkpoint()
        self.run("compact_logs", {"starting_version": lo, "ending_version": cur},
                 lambda: self.table().compact_logs(lo, cur))

    def op_cleanup(self):
        props = {"delta.logRetentionDuration": "interval 0 seconds"}
        self.run("alter.set_table_properties", {"properties": props},
                 lambda: self.table().alter.set_table_properties(props))
        self.run("create_checkpoint", {}, lambda: self.table().create_checkpoint())
        self.cleaned = True
        self.run("cleanup_metadata", {"note": "log files before the newest checkpoint deleted"},
                 lambda: self.table().cleanup_metadata())

    def readable(self, v):
        """Whether delta-rs can still read version v (the DataFusion reader:
        to_pyarrow_table refuses some tables whatever the version)."""
        try:
            t = self.table(v)
            return True, read_datafusion(t).num_rows
        except Exception as e:
            return False, self.explain(e)

    def generate(self):
        self.create()
        n = self.rng.randint(10, 20)
        ops = [(self.op_append, 5), (self.op_overwrite, 1), (self.op_overwrite_where, 2), (self.op_delete, 4),
               (self.op_update, 4), (self.op_merge, 4), (self.op_compact, 2), (self.op_zorder, 1),
               (self.op_vacuum, 1), (self.op_add_column_merge, 1), (self.op_add_column_alter, 1),
               (self.op_restore, 1), (self.op_checkpoint, 1), (self.op_compact_logs, 1), (self.op_cleanup, 1)]
        once = {self.op_vacuum, self.op_cleanup, self.op_restore, self.op_overwrite}
        used = set()
        # Seeds not divisible by 3 vacuum (retention 0) two thirds of the way
        # through, unless they drew a vacuum that deleted files before: the
        # versions before it stay in the log but lose their files.
        vacuum_at = n * 2 // 3 if self.seed % 3 != 0 else None
        for i in range(n):
            if i == vacuum_at and not any(s["operation"] == "VACUUM END" for s in self.snapshots):
                self.op_vacuum()
                used.add(self.op_vacuum)
            choices = [(f, w) for f, w in ops if not (f in once and f in used)]
            if len(self.extra_cols) >= 2:
                choices = [(f, w) for f, w in choices if f not in (self.op_add_column_merge, self.op_add_column_alter)]
            f = self.rng.choices([f for f, _ in choices], [w for _, w in choices])[0]
            used.add(f)
            f()
        # Which versions can still be read now that vacuum (and perhaps
        # cleanup_metadata) ran.
        for s in self.snapshots:
            if "unreadable_at_commit" in s:
                continue
            ok, what = self.readable(s["version"])
            s["readable"] = ok
            if not ok:
                s["unreadable_because"] = what


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


def rel_to(p, top):
    """A path delta-rs reports, relative to the table directory."""
    if p.startswith("file://"):
        p = p[len("file://"):]
    return os.path.relpath(p, top) if os.path.isabs(p) else p


def metrics(m):
    if isinstance(m, dict):
        return {k: v for k, v in m.items() if not k.endswith("_time_ms") and k not in ("execution_time_ms",)}
    return m


def read_datafusion(t):
    """The table as delta-rs's DataFusion reader (QueryBuilder) reads it."""
    return pa.table(QueryBuilder().register("t", t).execute("SELECT * FROM t"))


def protocol_of(t):
    p = t.protocol()
    out = {"minReaderVersion": p.min_reader_version, "minWriterVersion": p.min_writer_version}
    if p.reader_features:
        out["readerFeatures"] = sorted(p.reader_features)
    if p.writer_features:
        out["writerFeatures"] = sorted(p.writer_features)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True, help="the table directory to write (replaced)")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    start = time.time()
    h = History(args.seed, out)
    h.generate()
    expected = {
        "writer": f"delta-rs (deltalake {deltalake.__version__}, core {deltalake.rust_core_version()}), "
                  f"pyarrow {pa.__version__}",
        "seed": args.seed,
        "partition_by": [h.part] if h.part else [],
        "configuration": h.configuration,
        "cdf": h.cdf,
        "versions": [s["version"] for s in h.snapshots],
        "value_encoding": VALUE_ENCODING,
        "notes": h.notes,
        "statements": h.statements,
        "snapshots": h.snapshots,
        "cdf_reads": h.cdf_rows,
    }
    with open(os.path.join(out, "EXPECTED.json"), "w") as f:
        f.write(dump_json(expected) + "\n")
    leaks = [os.path.join(d, fn) for d, _, fs in os.walk(out) for fn in fs
             if out.lstrip("/").encode() in open(os.path.join(d, fn), "rb").read()]
    if leaks:
        print("WARNING: the absolute table path appears in", leaks, file=sys.stderr)
    print(f"[seed {args.seed}] {len(h.snapshots)} versions in {time.time() - start:.1f}s", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # delta-rs 1.6.6's runtime aborts at interpreter exit ("terminate called
    # without an active exception"); everything is written by now.
    os._exit(1 if leaks else 0)


if __name__ == "__main__":
    main()
