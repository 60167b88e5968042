"""sluice.to_pandas: change rows as DataFrames whose int64 ids stay exact."""

import pandas as pd
import pyarrow as pa
import pytest

import sluice

from conftest import BIG_IDS, SCHEMA, big_id_changes

A, B, C = BIG_IDS


def exact(values):
    """The values as Python ints (None for a null), failing on anything
    else: a float that happens to compare equal is not exact."""
    out = []
    for v in values:
        if v is pd.NA or v is None:
            out.append(None)
            continue
        assert type(v) is int, f"{v!r} is a {type(v).__name__}, not an int"
        out.append(v)
    return out


def test_flattened_images_keep_int64_ids_exact(client):
    df = sluice.to_pandas(client.changes("big.ids", net_changes=True, identity=["id"]), flatten=True)
    assert list(df.columns) == ["op", "before.id", "before.name", "after.id", "after.name", "snapshot", "ts"]
    assert exact(df["before.id"].tolist()) == [None, B, C]
    assert exact(df["after.id"].tolist()) == [A, B, None]
    assert str(df["before.id"].dtype) == "int64[pyarrow]"
    assert df["op"].tolist() == ["insert", "update", "delete"]
    assert df["after.name"].isna().tolist() == [False, False, True]


def test_struct_images_keep_int64_ids_exact(client):
    df = sluice.to_pandas(client.changes_table("big.ids", net_changes=True, identity=["id"]))
    assert list(df.columns) == SCHEMA.names
    afters = df["after"].tolist()
    assert afters[2] is pd.NA
    assert exact(a["id"] for a in afters[:2]) == [A, B]
    assert exact(df["before"].struct.field("id").tolist()) == [None, B, C]
    assert exact(df["snapshot"].tolist()) == [7, 7, 7]


def test_a_record_batch_and_the_batch_types(client):
    want = [A, B, None]
    assert exact(sluice.to_pandas(big_id_changes(), flatten=True)["after.id"].tolist()) == want
    (cb,) = list(client.batches("big.ids"))
    assert exact(cb.to_pandas(flatten=True)["after.id"].tolist()) == want
    assert exact(sluice.to_pandas(cb, flatten=True)["after.id"].tolist()) == want
    with client.subscribe("follow.bigids", follow=False) as sub:
        fb = next(sub)
        assert exact(fb.to_pandas(flatten=True)["after.id"].tolist()) == want
        assert exact(sluice.to_pandas(fb, flatten=True)["after.id"].tolist()) == want


def test_an_empty_window_keeps_its_columns():
    df = sluice.to_pandas(pa.Table.from_batches([], schema=SCHEMA), flatten=True)
    assert len(df) == 0
    assert str(df["after.id"].dtype) == "int64[pyarrow]"


def test_a_failure_mid_stream_raises(client):
    with pytest.raises(sluice.Unavailable, match="storage went away"):
        sluice.to_pandas(client.changes("fail.midstream"))


def test_other_types_are_refused():
    with pytest.raises(TypeError, match="list"):
        sluice.to_pandas([big_id_changes()])
    with pytest.raises(TypeError):
        sluice.to_pandas(pd.DataFrame({"id": [1]}))



# -- Polars and DuckDB -------------------------------------------------------

def flat_changes() -> pa.Table:
    """The changes of big_id_changes in the flat layout (layout="flat"):
    the data columns of each row's image, then _change_type,
    _commit_version and _commit_timestamp; a user struct column too, which
    flatten must leave alone."""
    addr = pa.struct([("city", pa.string())])
    return pa.table({
        "id": pa.array([A, B, B, C], pa.int64()),
        "name": pa.array(["n1", "n2", None, "n3"]),
        "addr": pa.array([{"city": "x"}, None, {"city": "y"}, {"city": "z"}], addr),
        "_change_type": ["insert", "update_preimage", "update_postimage", "delete"],
        "_commit_version": pa.array([7, 7, 7, 7], pa.int64()),
        "_commit_timestamp": pa.array([1_700_000_000_000_007] * 4, pa.timestamp("us", tz="UTC")),
    })


def test_to_polars_keeps_int64_ids_exact(client):
    import polars as pl

    df = sluice.to_polars(client.changes("big.ids", net_changes=True, identity=["id"]), flatten=True)
    assert isinstance(df, pl.DataFrame)
    assert df.columns == ["op", "before.id", "before.name", "after.id", "after.name", "snapshot", "ts"]
    assert df.schema["after.id"] == pl.Int64
    assert df["after.id"].to_list() == [A, B, None]
    assert df["before.id"].to_list() == [None, B, C]
    assert df["ts"].dtype == pl.Datetime("us", "UTC")
    nested = sluice.to_polars(client.changes_table("big.ids", net_changes=True, identity=["id"]))
    assert nested.columns == SCHEMA.names
    assert nested["after"].struct.field("id").to_list() == [A, B, None]
    assert nested.unnest("after", separator=".")["after.id"].to_list() == [A, B, None]


def test_to_polars_of_the_batch_types(client):
    (cb,) = list(client.batches("big.ids"))
    assert cb.to_polars(flatten=True)["after.id"].to_list() == [A, B, None]
    assert sluice.to_polars(cb)["op"].to_list() == ["insert", "update", "delete"]
    with client.subscribe("follow.bigids", follow=False) as sub:
        fb = next(sub)
        assert fb.to_polars(flatten=True)["after.id"].to_list() == [A, B, None]
    with pytest.raises(TypeError, match="to_polars takes"):
        sluice.to_polars([big_id_changes()])


def test_to_polars_without_polars_names_the_package(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "polars", None)  # import polars now raises ImportError
    with pytest.raises(ImportError, match=r"sluice.to_polars needs polars: pip install 'sluice-client\[polars\]'"):
        sluice.to_polars(big_id_changes())


def test_the_flat_layout_converts_as_it_is():
    import polars as pl

    flat = flat_changes()
    for flatten in (False, True):
        df = sluice.to_polars(flat, flatten=flatten)
        assert df.columns == flat.column_names  # addr is not split: only before/after are images
        assert df["id"].to_list() == [A, B, B, C]
        assert df.schema["_commit_timestamp"] == pl.Datetime("us", "UTC")
        pdf = sluice.to_pandas(flat, flatten=flatten)
        assert list(pdf.columns) == flat.column_names
        assert exact(pdf["id"].tolist()) == [A, B, B, C]


def test_duckdb_reads_a_reader_and_a_table(client):
    import duckdb

    reader = client.changes("big.ids", net_changes=True, identity=["id"])
    rows = duckdb.sql("select op, after.id as id from reader order by op").fetchall()
    assert rows == [("delete", None), ("insert", A), ("update", B)]
    flat = flat_changes()
    got = duckdb.sql("select _change_type, count(*) as n, max(id) as top from flat "
                     "group by _change_type order by _change_type").fetchall()
    assert got == [("delete", 1, C), ("insert", 1, A), ("update_postimage", 1, B), ("update_preimage", 1, B)]
