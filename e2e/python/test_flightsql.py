"""Flight SQL through the ADBC driver (adbc-driver-flightsql with
adbc-driver-manager, as pandas and SQL tools use it) against a real flightd:
table_changes queries return exactly the flat-layout ChangeRequest of the
same window read with pyarrow's Flight client; pandas.read_sql reads the
same rows; adbc_get_objects lists the tables with their data columns; other
SQL fails naming what is supported."""

import json
import os

import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import pandas as pd
import pyarrow as pa
import pytest

from conftest import read_chunks, request

FLAT = ["_change_type", "_commit_version", "_commit_timestamp"]


@pytest.fixture(scope="module")
def mor():
    with open(os.environ["SLUICE_MOR_FIXTURE"]) as f:
        return json.load(f)


@pytest.fixture
def conn(addr):
    # Sluice has no transactions: autocommit=True says so (else the driver
    # warns that it cannot turn autocommit off).
    with flightsql.connect(addr, autocommit=True) as c:
        yield c


def query(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def flat(fclient, **fields):
    table, _ = read_chunks(fclient, request(layout="flat", **fields))
    return table


def same(got, want):
    assert got.schema.names == want.schema.names
    assert got.num_rows == want.num_rows > 0, "nothing to compare"
    assert got.to_pylist() == want.to_pylist()


def test_execute_matches_change_request(conn, fclient, mor):
    t = mor["table"]
    snaps = [s["snapshot"] for s in mor["snapshots"]]
    frm, to = snaps[1], snaps[-2]
    same(query(conn, f"SELECT * FROM table_changes('{t}')"), flat(fclient, table=t))
    same(
        query(conn, f"select * from TABLE_CHANGES('{t}', {frm}, {to});"),
        flat(fclient, table=t, from_snapshot=str(frm), to_snapshot=str(to)),
    )
    got = query(conn, f"SELECT id, _change_type, note FROM table_changes('{t}', {frm}) WHERE id >= 3 AND note IS NOT NULL")
    want = flat(fclient, table=t, from_snapshot=str(frm), columns=["id", "note"], filter="id >= 3 AND note IS NOT NULL")
    same(got, want.select(["id", "_change_type", "note"]))
    net = query(conn, f"SELECT * FROM table_changes('{t}', {frm}, net_changes => true, identity => 'id')")
    same(net, flat(fclient, table=t, from_snapshot=str(frm), net_changes=True, identity=["id"]))
    kinds = set(query(conn, f"SELECT _change_type FROM table_changes('{t}')").column(0).to_pylist())
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}, kinds


def test_flat_columns(conn, mor):
    got = query(conn, f"SELECT * FROM table_changes('{mor['table']}') LIMIT 3")
    assert got.schema.names == mor["columns"] + FLAT
    assert got.schema.field("_commit_version").type == pa.int64()
    assert got.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    assert got.num_rows == 3


def test_pandas_read_sql(conn, fclient, mor):
    t = mor["table"]
    df = pd.read_sql(f"SELECT id, val, _change_type, _commit_version FROM table_changes('{t}')", conn)
    want = flat(fclient, table=t, columns=["id", "val"]).select(["id", "val", "_change_type", "_commit_version"])
    assert list(df.columns) == want.schema.names
    assert len(df) == want.num_rows > 0
    assert df["id"].tolist() == want.column("id").to_pylist()
    assert df["_change_type"].tolist() == want.column("_change_type").to_pylist()


def test_get_objects(conn, mor, fixture):
    objects = conn.adbc_get_objects(depth="all").read_all().to_pylist()
    tables = {}
    for cat in objects:
        assert cat["catalog_name"] == "sluice"
        for schema in cat["catalog_db_schemas"]:
            for table in schema["db_schema_tables"]:
                columns = [c["column_name"] for c in table["table_columns"] or []]
                tables[schema["db_schema_name"] + "." + table["table_name"]] = columns
    assert tables[mor["table"]] == mor["columns"]
    assert "e2e.events" in tables
    schema = conn.adbc_get_table_schema(mor["table"].split(".")[1], db_schema_filter=mor["table"].split(".")[0])
    assert schema.names == mor["columns"]
    info = conn.adbc_get_info()
    assert info["vendor_name"] == "sluice"
    assert info["vendor_version"]


@pytest.mark.parametrize(
    "sql, msg",
    [
        ("SELECT * FROM gen.events", "table_changes('<ns.table>'"),
        ("DELETE FROM gen.events", '"DELETE" statements are not supported'),
        ("SELECT * FROM table_changes('gen.events') WHERE id >", "position"),
    ],
)
def test_errors(conn, sql, msg):
    with conn.cursor() as cur:
        with pytest.raises(adbc_driver_manager.ProgrammingError) as e:
            cur.execute(sql)
            cur.fetch_arrow_table()
    assert msg in str(e.value)
    assert "INVALID_ARGUMENT" in str(e.value) or "InvalidArgument" in str(e.value)


def test_disconnect_is_no_failed_call(start_flightd, fixture):
    # The driver closes its Flight session (a CloseSession action) when a
    # connection closes; flightd, which keeps no session, logs no failure.
    srv = start_flightd("--warehouse", fixture["warehouse"], "--log-level", "info")
    for _ in range(2):
        with flightsql.connect(srv.uri, autocommit=True) as c:
            assert query(c, f"SELECT id FROM table_changes('{fixture['table']}')").num_rows > 0
    logged = [line for line in srv.output().splitlines() if "CloseSession" in line or "call failed" in line]
    assert logged == []
