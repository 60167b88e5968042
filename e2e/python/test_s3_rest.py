"""pyarrow reads a table on S3 behind a REST catalog through flightd: every
window equals pyiceberg's own scans of the snapshots (the oracle that
s3_writer.py wrote). Run by e2e/objstore_test.go, which starts moto, the
REST catalog and flightd and passes SLUICE_ADDR, SLUICE_S3_ORACLE and
SLUICE_S3_TABLE."""

import json
import os
from collections import Counter

import pyarrow.flight as flight
import pytest

from conftest import read_chunks, request


@pytest.fixture(scope="module")
def oracle():
    with open(os.environ["SLUICE_S3_ORACLE"]) as f:
        return json.load(f)


def canon(columns, row):
    """A row as the oracle has it: a JSON list in the oracle's column order,
    numbers as floats, absent columns null."""
    vals = []
    for c in columns:
        v = row.get(c) if row is not None else None
        vals.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
    return json.dumps(vals)


def state(oracle, k):
    return Counter(canon(oracle["columns"], dict(zip(oracle["columns"], r))) for r in oracle["snapshots"][k]["rows"])


def expected(oracle, frm, to):
    """Per snapshot after frm up to to: its inserts and deletes by the oracle."""
    out = Counter()
    prev = state(oracle, frm) if frm >= 0 else Counter()
    for k in range(frm + 1, to + 1):
        cur = state(oracle, k)
        sid = oracle["snapshots"][k]["id"]
        for r, n in (prev - cur).items():
            out[(sid, "delete", r)] += n
        for r, n in (cur - prev).items():
            out[(sid, "insert", r)] += n
        prev = cur
    return out


def test_every_window_equals_pyiceberg(oracle):
    client = flight.connect(os.environ["SLUICE_ADDR"])
    table = os.environ["SLUICE_S3_TABLE"]
    cols = oracle["columns"]
    snaps = oracle["snapshots"]
    windows = 0
    try:
        for to in range(len(snaps)):
            for frm in range(-1, to):
                req = request(table=table, from_snapshot=str(snaps[frm]["id"]) if frm >= 0 else None,
                              to_snapshot=str(snaps[to]["id"]))
                got_table, metas = read_chunks(client, req)
                got = Counter()
                for op, before, after, sid in zip(got_table.column("op").to_pylist(), got_table.column("before").to_pylist(),
                                                  got_table.column("after").to_pylist(),
                                                  got_table.column("snapshot").to_pylist()):
                    img = before if op in ("delete", "update_before") else after
                    got[(sid, op, canon(cols, img))] += 1
                assert got == expected(oracle, frm, to), f"window ({frm}, {to}]"
                order = [m["snapshot"] for m in metas if m["snapshot_complete"]]
                assert order == [s["id"] for s in snaps[frm + 1:to + 1]], f"window ({frm}, {to}]: snapshots {order}"
                windows += 1
    finally:
        client.close()
    assert windows == len(snaps) * (len(snaps) + 1) // 2


def test_listed_with_its_snapshots(oracle):
    """The sluice client lists the table and its snapshots as pyiceberg has them."""
    import sluice

    c = sluice.connect(os.environ["SLUICE_ADDR"])
    table = os.environ["SLUICE_S3_TABLE"]
    listed = {t["name"]: t for t in c.list_tables()}
    assert table in listed, listed
    assert listed[table]["current_snapshot"] == oracle["snapshots"][-1]["id"]
    snaps = c.snapshots(table)
    assert [(s["snapshot"], s["sequence_number"], s["timestamp_ms"]) for s in snaps] == [
        (s["id"], s["seq"], s["timestamp_ms"]) for s in oracle["snapshots"]
    ]
    full = c.changes_table(table)
    assert Counter(canon(oracle["columns"], r) for r in full.column("after").to_pylist() if r is not None) - Counter(
        canon(oracle["columns"], r) for r in full.column("before").to_pylist() if r is not None
    ) == state(oracle, len(oracle["snapshots"]) - 1)
