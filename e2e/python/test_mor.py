"""A merge-on-read table (position deletes, equality deletes, upserts,
overwrites, compactions, written by iceberg-go) read through a real flightd
with the plain pyarrow client: applying the feed of each snapshot to the
state before it gives the state after it, as plain iceberg-go scans read
them (the full-state oracle)."""

import json
import os
from collections import Counter

import pytest

from conftest import read_chunks, request


@pytest.fixture(scope="module")
def mor():
    with open(os.environ["SLUICE_MOR_FIXTURE"]) as f:
        return json.load(f)


def state(rows):
    return Counter(tuple(r) for r in rows)


def image(d, columns):
    return tuple(d[c] for c in columns)


def apply(feed, start, columns):
    out = Counter(start)
    ops = feed.column("op").to_pylist()
    befores = feed.column("before").to_pylist()
    afters = feed.column("after").to_pylist()
    for i, (op, before, after) in enumerate(zip(ops, befores, afters)):
        if op in ("delete", "update_before", "update"):
            key = image(before, columns)
            assert out[key] > 0, f"{op} of a row that is not there: {key}"
            out[key] -= 1
            if out[key] == 0:
                del out[key]
        if op in ("insert", "update_after", "update"):
            out[image(after, columns)] += 1
        if op == "update_before":
            assert ops[i + 1] == "update_after", "update_before not followed by its update_after"
    return out


@pytest.mark.parametrize("identity", [None, ["id"]])
@pytest.mark.parametrize("fold", [False, True])
def test_each_snapshot_against_the_oracle(fclient, mor, identity, fold):
    cols = mor["columns"]
    prev = Counter()
    for s in mor["snapshots"]:
        req = request(
            table=mor["table"],
            from_snapshot=str(s["parent"]) if s["parent"] is not None else None,
            to_snapshot=str(s["snapshot"]),
            identity=identity,
            fold_updates=fold or None,
        )
        feed, metas = read_chunks(fclient, req)
        want = state(s["state"])
        assert apply(feed, prev, cols) == want, f"snapshot {s['snapshot']} ({s['operation']}); history {mor['log']}"
        assert metas and metas[-1]["snapshot_complete"]
        if s["operation"] == "replace":
            assert feed.num_rows == 0, "a compaction emitted changes"
        prev = want


def test_whole_history_and_net_changes(fclient, mor):
    cols = mor["columns"]
    final = state(mor["snapshots"][-1]["state"])
    feed, _ = read_chunks(fclient, request(table=mor["table"]))
    assert apply(feed, Counter(), cols) == final
    net, _ = read_chunks(fclient, request(table=mor["table"], net_changes=True, identity=["id"]))
    assert set(net.column("op").to_pylist()) <= {"insert"}, "net changes from an empty start are inserts"
    assert apply(net, Counter(), cols) == final
    assert net.num_rows == sum(final.values())


def test_ops_of_an_upsert(fclient, mor):
    upserts = [s for s in mor["snapshots"] if s["operation"] == "overwrite"]
    assert upserts, "the history has no upsert or overwrite"
    seen = set()
    for s in upserts:
        feed, _ = read_chunks(
            fclient,
            request(table=mor["table"], from_snapshot=str(s["parent"]), to_snapshot=str(s["snapshot"]), identity=["id"]),
        )
        seen |= set(feed.column("op").to_pylist())
    assert "update_before" in seen and "update_after" in seen, seen
