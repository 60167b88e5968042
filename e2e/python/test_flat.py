"""The flat layout ("layout": "flat") through a real flightd with the plain
pyarrow Flight client.

- Iceberg (the merge-on-read history of test_mor.py): the flat feed of each
  snapshot, applied to the state before it, gives the state after it (the
  full-state oracle), and every flat row is the image of its renderable
  row, for windows, identity, net changes, filters and projections.
- Delta: a table with the change data feed enabled, written by delta-rs;
  for every window (from, to], Sluice's flat feed equals delta-rs's
  ``DeltaTable.load_cdf(from + 1, to)`` as a multiset of (data columns,
  _change_type, _commit_version, _commit_timestamp).
"""

import json
import os
from collections import Counter

import pandas as pd
import pyarrow as pa
import pyarrow.flight as flight
import pytest

import sluice
from conftest import read_chunks, request

try:
    import deltalake
except ImportError:  # reported by the test below, as a failure
    deltalake = None

FLAT = ["_change_type", "_commit_version", "_commit_timestamp"]
CHANGE_TYPES = {"insert": "insert", "delete": "delete", "update_before": "update_preimage",
                "update_after": "update_postimage"}
TIMESTAMP = pa.timestamp("us", tz="UTC")


@pytest.fixture(scope="module")
def mor():
    with open(os.environ["SLUICE_MOR_FIXTURE"]) as f:
        return json.load(f)


def check_schema(schema, columns, renderable=None):
    """The flat schema: the data columns, then the three columns, typed."""
    assert schema.names == [*columns, *FLAT], schema
    assert schema.field("_change_type").type == pa.string()
    assert schema.field("_commit_version").type == pa.int64()
    assert schema.field("_commit_timestamp").type == TIMESTAMP
    if renderable is not None:
        image = renderable.field("after").type
        assert [image.field(i) for i in range(image.num_fields)] == [schema.field(c) for c in columns]


def as_flat(renderable):
    """Renderable change rows as the flat rows they must be."""
    out = []
    for r in renderable.to_pylist():
        image = r["before"] if r["op"] in ("delete", "update_before") else r["after"]
        out.append({**image, "_change_type": CHANGE_TYPES[r["op"]], "_commit_version": r["snapshot"],
                    "_commit_timestamp": r["ts"]})
    return out


def apply(flat, start, columns):
    out = Counter(start)
    types = flat.column("_change_type").to_pylist()
    for i, row in enumerate(flat.to_pylist()):
        key = tuple(row[c] for c in columns)
        if row["_change_type"] in ("delete", "update_preimage"):
            assert out[key] > 0, f"{row['_change_type']} of a row that is not there: {key}"
            out[key] -= 1
            if out[key] == 0:
                del out[key]
        else:
            out[key] += 1
        if row["_change_type"] == "update_preimage":
            assert types[i + 1] == "update_postimage", "update_preimage not followed by its update_postimage"
    return out


@pytest.mark.parametrize("identity", [None, ["id"]])
def test_iceberg_each_snapshot_against_the_oracle(fclient, mor, identity):
    cols = mor["columns"]
    prev = Counter()
    seen = set()
    for s in mor["snapshots"]:
        flat, metas = read_chunks(fclient, request(
            table=mor["table"], layout="flat", identity=identity,
            from_snapshot=str(s["parent"]) if s["parent"] is not None else None, to_snapshot=str(s["snapshot"])))
        check_schema(flat.schema, cols)
        want = Counter(tuple(r) for r in s["state"])
        assert apply(flat, prev, cols) == want, f"snapshot {s['snapshot']} ({s['operation']}); history {mor['log']}"
        assert set(flat.column("_commit_version").to_pylist()) <= {s["snapshot"]}
        assert metas and metas[-1]["snapshot_complete"]
        seen |= set(flat.column("_change_type").to_pylist())
        prev = want
    if identity:
        assert seen == {"insert", "delete", "update_preimage", "update_postimage"}, seen


@pytest.mark.parametrize("shape", [
    {"identity": ["id"]},
    {"identity": ["id"], "columns": ["val", "id"]},
    {"identity": ["id"], "filter": "grp = 'a' OR val < 100"},
    {"net_changes": True, "identity": ["id"]},
    {"net_changes": True},
], ids=["identity", "columns", "filter", "net", "net-whole-rows"])
def test_iceberg_flat_is_the_renderable_image(fclient, mor, shape):
    mid = mor["snapshots"][len(mor["snapshots"]) // 2]["snapshot"]
    fields = {"table": mor["table"], "from_snapshot": str(mid), **shape}
    # GetFlightInfo plans the flat window; its ticket reads it.
    info = fclient.get_flight_info(flight.FlightDescriptor.for_command(request(layout="flat", **fields)))
    plain, _ = read_chunks(fclient, request(**fields))
    columns = shape.get("columns", mor["columns"])
    check_schema(info.schema, columns, plain.schema)
    flat = pa.concat_tables([read_chunks(fclient, ep.ticket.ticket)[0] for ep in info.endpoints])
    assert flat.schema == info.schema
    assert flat.num_rows > 0
    assert flat.to_pylist() == as_flat(plain)


def test_to_pandas_reads_the_flat_layout(fclient, mor):
    cols = mor["columns"]
    flat, _ = read_chunks(fclient, request(table=mor["table"], layout="flat", identity=["id"]))
    df = sluice.to_pandas(flat)
    assert list(df.columns) == [*cols, *FLAT]
    assert str(df["_commit_version"].dtype) == "int64[pyarrow]"
    assert str(df["id"].dtype) == "int64[pyarrow]"
    assert df["_commit_timestamp"].dtype == pd.ArrowDtype(TIMESTAMP)
    assert df["_commit_version"].tolist() == flat.column("_commit_version").to_pylist()
    assert df["id"].tolist() == flat.column("id").to_pylist()


def test_sluice_client_layout(addr, fclient, mor):
    """The Sluice client's layout= keyword reaches the server from changes,
    changes_table, batches, schema and subscribe, with the same rows as the
    plain pyarrow request."""
    cols = mor["columns"]
    mid = mor["snapshots"][len(mor["snapshots"]) // 2]["snapshot"]
    want, _ = read_chunks(fclient, request(table=mor["table"], layout="flat", identity=["id"], from_snapshot=str(mid)))
    assert want.num_rows > 0
    with sluice.connect(addr) as client:
        kw = dict(from_snapshot=mid, identity=["id"], layout="flat")
        assert client.schema(mor["table"], **kw) == want.schema
        assert client.changes(mor["table"], **kw).read_all().to_pylist() == want.to_pylist()
        table = client.changes_table(mor["table"], **kw)
        assert table.schema == want.schema and table.to_pylist() == want.to_pylist()
        rows = []
        for b in client.batches(mor["table"], **kw):
            assert b.batch.schema == want.schema
            rows += b.to_pandas().to_dict("records")
        assert [r["_change_type"] for r in rows] == want.column("_change_type").to_pylist()
        assert [r["id"] for r in rows] == want.column("id").to_pylist()
        sub = client.subscribe(mor["table"], start="from-snapshot", follow=False, **kw)
        streamed = [b.batch for b in sub if b.num_rows]
        assert pa.Table.from_batches(streamed, schema=want.schema).to_pylist() == want.to_pylist()
        check_schema(sub.schema, cols)
        with pytest.raises(sluice.InvalidArgument, match="fold_updates"):
            client.changes(mor["table"], layout="flat", fold_updates=True)


@pytest.mark.parametrize("fields,says", [
    ({"layout": "wide"}, 'layout "wide": want "" (the renderable row, the default) or "flat"'),
    ({"layout": "flat", "fold_updates": True}, "fold_updates"),
])
def test_refused(fclient, mor, fields, says):
    with pytest.raises(pa.ArrowInvalid, match="invalid argument") as exc:
        read_chunks(fclient, request(table=mor["table"], **fields))
    assert says in str(exc.value)


def delta_rows(table, columns):
    """A multiset of tuples of the rows of a pyarrow table, timestamps as
    microseconds since the epoch."""
    out = Counter()
    for row in table.select(columns).to_pylist():
        out[tuple(int(v.timestamp() * 1_000_000) if hasattr(v, "timestamp") else v for v in row.values())] += 1
    return out


def test_delta_cdf_equals_delta_rs_load_cdf(tmp_path, start_flightd):
    if deltalake is None:
        pytest.fail("deltalake is not installed in this venv: this test writes a Delta table with delta-rs; "
                    "run `make venv`", pytrace=False)
    root, warehouse = tmp_path / "root", tmp_path / "warehouse"
    root.mkdir()
    warehouse.mkdir()
    path = str(root / "cdf")
    schema = pa.schema([("id", pa.int64()), ("grp", pa.string()), ("val", pa.int64())])

    def rows(*items):
        return pa.Table.from_pylist([{"id": i, "grp": g, "val": v} for i, g, v in items], schema=schema)

    # v0 create, v1 append, v2 delete, v3 update, v4 merge (update + insert + delete), v5 append,
    # v6 delete of a whole group, v7 update of several rows.
    deltalake.write_deltalake(path, rows((1, "a", 10), (2, "b", 20), (3, "c", 30), (4, "a", 40)),
                              configuration={"delta.enableChangeDataFeed": "true"})
    deltalake.write_deltalake(path, rows((5, "b", 50), (6, "c", 60)), mode="append")
    deltalake.DeltaTable(path).delete("id = 2")
    deltalake.DeltaTable(path).update(updates={"val": "val + 100"}, predicate="id = 3")
    (deltalake.DeltaTable(path).merge(rows((4, "a", 444), (7, "c", 70), (5, "b", 50)), predicate="t.id = s.id",
                                      source_alias="s", target_alias="t")
     .when_matched_update(updates={"val": "s.val"}, predicate="s.id = 4")
     .when_matched_delete(predicate="s.id = 5")
     .when_not_matched_insert_all()
     .execute())
    deltalake.write_deltalake(path, rows((8, "a", 80), (9, "a", 90)), mode="append")
    deltalake.DeltaTable(path).delete("grp = 'c'")
    deltalake.DeltaTable(path).update(updates={"grp": "'z'"}, predicate="grp = 'a'")
    last = deltalake.DeltaTable(path).version()
    assert last == 7

    srv = start_flightd("--warehouse", warehouse, "--delta-root", root, "--max-batch-rows", "3")
    client = flight.connect(srv.uri)
    columns = ["id", "grp", "val", *FLAT]
    windows = [(None, last), (None, 0), (0, 3), (1, 2), (2, 4), (3, 4), (4, last), (5, 7), (last - 1, last)]
    seen = set()
    try:
        for frm, to in windows:
            flat, _ = read_chunks(client, request(table="delta.cdf", layout="flat", to_snapshot=str(to),
                                                  from_snapshot=None if frm is None else str(frm)))
            check_schema(flat.schema, ["id", "grp", "val"])
            # Sluice's window (from, to] is delta-rs's inclusive [from + 1, to].
            # (delta-rs returns an arro3 reader; pyarrow takes it over the Arrow C stream.)
            theirs = pa.RecordBatchReader.from_stream(deltalake.DeltaTable(path).load_cdf(
                starting_version=0 if frm is None else frm + 1, ending_version=to)).read_all()
            assert delta_rows(flat, columns) == delta_rows(theirs, columns), f"window ({frm}, {to}]"
            assert flat.num_rows == theirs.num_rows > 0
            seen |= set(flat.column("_change_type").to_pylist())
    finally:
        client.close()
    assert seen == {"insert", "delete", "update_preimage", "update_postimage"}, seen
