"""Delta tables read through a real flightd --delta-root with the plain
pyarrow Flight client and with the Sluice client (sluice), to_pandas
included. The tables are copies of testdata/delta fixtures; the change feed
is compared with delta-rs's own (testdata/delta/cdf-table/EXPECTED.json,
query delta-rs:test_load_local: every version, with _commit_timestamp)."""

import collections
import json
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.flight as flight
import pytest

import sluice
from conftest import Flightd, read_chunks, request

TABLE = "delta.cdf-table"
DV_TABLE = "delta.table-with-dv-small"
CHANGE_TYPES = {"insert": "insert", "delete": "delete", "update_before": "update_preimage",
                "update_after": "update_postimage"}


@pytest.fixture(scope="module")
def served(tmp_path_factory, repo_root):
    """flightd serving copies of cdf-table and table-with-dv-small (file
    times kept); yields (uri, the expected query)."""
    tmp = tmp_path_factory.mktemp("delta")
    root, warehouse = tmp / "root", tmp / "warehouse"
    warehouse.mkdir()
    for name in ("cdf-table", "table-with-dv-small"):
        shutil.copytree(repo_root / "testdata" / "delta" / name, root / name)
    with open(root / "cdf-table" / "EXPECTED.json") as f:
        expected = json.load(f)
    query = next(q for q in expected["queries"] if q["id"] == "delta-rs:test_load_local")
    srv = Flightd(["--warehouse", str(warehouse), "--delta-root", str(root), "--max-batch-rows", "4"], tmp)
    try:
        yield srv.uri, query
    finally:
        srv.stop()


def cdf_rows(table, columns):
    """The change rows of a pyarrow table as Delta CDF rows (the image's
    columns, _change_type, _commit_version, _commit_timestamp), as a
    multiset of tuples over columns."""
    out = collections.Counter()
    for row in table.to_pylist():
        image = row["before"] if row["op"] in ("delete", "update_before") else row["after"]
        flat = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in image.items()}
        flat["_change_type"] = CHANGE_TYPES[row["op"]]
        flat["_commit_version"] = row["snapshot"]
        flat["_commit_timestamp"] = row["ts"].strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        out[tuple(flat[c] for c in columns)] += 1
    return out


def expected_rows(query):
    return collections.Counter(tuple(r[c] for c in query["columns"]) for r in query["rows"])


def test_pyarrow_flight(served):
    uri, query = served
    client = flight.connect(uri)
    try:
        # GetFlightInfo plans the window; its ticket reads it.
        info = client.get_flight_info(flight.FlightDescriptor.for_command(request(table=TABLE)))
        assert [f.name for f in info.schema] == ["op", "before", "after", "snapshot", "ts"]
        assert info.schema.field("after").type == pa.struct(
            [("id", pa.int32()), ("name", pa.string()), ("birthday", pa.date32())])
        tables = []
        for ep in info.endpoints:
            t, metas = read_chunks(client, ep.ticket.ticket)
            tables.append(t)
            for m in metas:
                assert m["commit_seq"] == m["snapshot"], m
        feed = pa.concat_tables(tables)
        assert cdf_rows(feed, query["columns"]) == expected_rows(query)

        # The same window as a hand-written ticket, and one version alone.
        feed, _ = read_chunks(client, request(table=TABLE))
        assert cdf_rows(feed, query["columns"]) == expected_rows(query)
        feed, metas = read_chunks(client, request(table=TABLE, from_snapshot="2", to_snapshot="3"))
        want = collections.Counter({k: n for k, n in expected_rows(query).items() if k[4] == 3})
        assert cdf_rows(feed, query["columns"]) == want and {m["snapshot"] for m in metas} == {3}

        listed = json.loads(next(iter(client.do_action(flight.Action("list_tables", b"{}")))).body.to_pybytes())
        by_name = {t["name"]: t for t in listed["tables"]}
        assert set(by_name) == {TABLE, DV_TABLE}
        assert by_name[TABLE]["format"] == "delta"
        assert by_name[TABLE]["current_snapshot"] == by_name[TABLE]["commit_seq"] == 3

        with pytest.raises(pa.ArrowKeyError, match="delta.nope"):
            read_chunks(client, request(table="delta.nope"))
    finally:
        client.close()


def test_sluice_client(served):
    uri, query = served
    with sluice.connect(uri) as client:
        feed = client.changes_table(TABLE)
        assert cdf_rows(feed, query["columns"]) == expected_rows(query)

        snaps = client.snapshots(TABLE)
        assert [s["snapshot"] for s in snaps] == [s["commit_seq"] for s in snaps] == [0, 1, 2, 3]
        assert [s["operation"] for s in snaps] == ["WRITE", "UPDATE", "UPDATE", "DELETE"]
        assert client.commit_seq(TABLE)["commit_seq"] == 3

        plan = client.explain(TABLE)
        assert plan["format"] == "delta"
        assert [s["strategy"] for s in plan["snapshots"]] == [
            "delta-add", "delta-cdc-files", "delta-cdc-files", "delta-cdc-files"]
        assert all(s["reason"] for s in plan["snapshots"])

        # to_pandas: exact types, one column per image field when flattened.
        df = sluice.to_pandas(client.changes_table(TABLE, from_snapshot=0, columns=["id", "birthday"]),
                              flatten=True)
        assert list(df.columns) == ["op", "before.id", "before.birthday", "after.id", "after.birthday",
                                    "snapshot", "ts"]
        assert str(df["after.id"].dtype) == "int32[pyarrow]"
        assert str(df["after.birthday"].dtype) == "date32[day][pyarrow]"
        want = collections.Counter((r["_change_type"], r["id"], r["birthday"]) for r in query["rows"]
                                   if r["_commit_version"] > 0)
        got = collections.Counter()
        for op, bid, bday, aid, aday in zip(df["op"], df["before.id"], df["before.birthday"], df["after.id"],
                                            df["after.birthday"]):
            pre = op in ("delete", "update_before")
            i, day = (bid, bday) if pre else (aid, aday)
            assert (bid is pd.NA) != pre and (aid is pd.NA) == pre, (op, bid, aid)
            got[(CHANGE_TYPES[op], int(i), day.isoformat())] += 1
        assert got == want

        # The full state of a table with a deletion vector: 8 of 10 rows.
        batches = list(client.subscribe(DV_TABLE, start="latest-full", follow=False))
        assert all(b.full_state and b.snapshot == 1 for b in batches)
        state = pa.concat_tables([pa.Table.from_batches([b.batch]) for b in batches])
        assert sorted(r["value"] for r in state.column("after").to_pylist()) == list(range(1, 9))
        assert set(state.column("op").to_pylist()) == {"insert"}

        with pytest.raises(sluice.NotFound, match="delta.nope"):
            client.changes_table("delta.nope")
        with pytest.raises(sluice.NotFound):
            client.changes_table(TABLE, from_snapshot=99)
        with pytest.raises(sluice.InvalidArgument):
            client.changes_table(TABLE, from_snapshot=3, to_snapshot=1)
