"""pyiceberg commits to the table iceberg-go wrote, in the same catalog file,
while flightd serves it: commit_seq grows and the new snapshot's feed is
exactly the appended rows. (Runs last: it changes the table.)"""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight
from pyiceberg.catalog.sql import SqlCatalog

from conftest import read_chunks, request


def commit_seq(client, table):
    res = list(client.do_action(flight.Action("commit_seq", json.dumps({"table": table}).encode())))
    return json.loads(res[0].body.to_pybytes())


def test_commit_seq_grows_with_each_commit(fclient, fixture):
    cat = SqlCatalog("sluice", uri=f"sqlite:///{fixture['catalog']}", warehouse=f"file://{fixture['warehouse']}")
    tbl = cat.load_table(fixture["table"])
    arrow_schema = tbl.schema().as_arrow()
    start = commit_seq(fclient, fixture["table"])
    assert start["snapshot"] == fixture["snapshots"][-1]["snapshot"]
    previous = start
    for n in range(1, 4):
        ids = [100000 + 10 * n + i for i in range(n)]
        data = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "name": pa.array([f"py-{i}" for i in ids]),
                "amount": pa.array([1.25 * i for i in ids]),
                "flag": pa.array([True] * n),
                "qty": pa.array([n] * n, pa.int32()),
                "created": pa.array([None] * n, pa.timestamp("us", tz="UTC")),
            }
        ).cast(arrow_schema)
        tbl.append(data)
        now = commit_seq(fclient, fixture["table"])
        assert now["commit_seq"] == previous["commit_seq"] + 1
        assert now["snapshot"] == tbl.current_snapshot().snapshot_id
        table, _ = read_chunks(
            fclient,
            request(table=fixture["table"], from_snapshot=str(previous["snapshot"]), columns=["id", "name"]),
        )
        assert [r["id"] for r in table.column("after").to_pylist()] == ids
        assert set(table.column("snapshot").to_pylist()) == {now["snapshot"]}
        previous = now
