"""Records what pypaimon's own reads return for each snapshot of a table.

For every snapshot: state/<id>.jsonl, the full state of pypaimon's batch read
at that snapshot (scan.snapshot-id); and, where pypaimon's stream read scans
the snapshot, changes/<id>.jsonl, the rows its follow-up plan for that
snapshot returns, each with its _row_kind. Rows are canonical JSON (see
testdata/paimon/README.md), one a line, sorted.
"""

import base64
import datetime
import decimal
import json
import os
import shutil

ROW_KIND = "_row_kind"


def canon(v):
    """A value as canonical JSON data (README: the row encoding)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S.%f")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # a map
            pairs = [[canon(k), canon(x)] for k, x in v]
            return sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))
        return [canon(x) for x in v]
    raise TypeError(f"no canonical form for {type(v)}")


def lines(table):
    rows = [json.dumps({k: canon(v) for k, v in r.items()}, sort_keys=True, separators=(",", ":"))
            for r in table.to_pylist()]
    return sorted(rows)


def write_lines(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in rows:
            f.write(r + "\n")


class Recorder:
    def __init__(self, out, name, writer):
        self.dir = os.path.join(out, name)
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        self.name = name
        self.writer = writer
        self.done = 0
        self.snapshots = []

    def snapshot(self, table):
        """Records every snapshot committed since the last call."""
        latest = table.snapshot_manager().get_latest_snapshot()
        for sid in range(self.done + 1, latest.id + 1):
            self.record(table, sid)
        self.done = latest.id

    def record(self, table, sid):
        snap = table.snapshot_manager().get_snapshot_by_id(sid)
        at = table.copy({"scan.snapshot-id": str(sid)})
        rb = at.new_read_builder()
        splits = rb.new_scan().plan().splits()
        state = rb.new_read().to_arrow(splits)
        write_lines(os.path.join(self.dir, "state", f"{sid}.jsonl"), lines(state))

        srb = table.new_stream_read_builder().with_include_row_kind(True)
        scan = srb.new_streaming_scan()
        entry = {"id": sid, "commitKind": snap.commit_kind, "schemaId": snap.schema_id,
                 "rows": state.num_rows, "changes": False}
        if scan.follow_up_scanner.should_scan(snap):
            plan = scan._create_follow_up_plan(snap)
            changes = srb.new_read().to_arrow(plan.splits())
            write_lines(os.path.join(self.dir, "changes", f"{sid}.jsonl"), lines(changes))
            entry["changes"] = True
        self.snapshots.append(entry)

    def finish(self, table):
        os.makedirs(self.dir, exist_ok=True)
        meta = {"table": self.name, "writer": self.writer, "snapshots": self.snapshots}
        with open(os.path.join(self.dir, "table.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
            f.write("\n")
