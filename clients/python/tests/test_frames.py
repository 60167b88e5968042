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

