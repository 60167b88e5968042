"""sluice.to_pandas against a real flightd: a table whose ids a float64
cannot hold (above 2**53), read as net changes with an identity, comes out
of pandas with every id exact, though the insert's before image and the
delete's after image are null."""

import pandas as pd
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo

import sluice
from conftest import Flightd

# Odd ids above 2**53: float64 rounds each to a neighbour. C is the largest
# int64 and never changes; D comes later.
A, B, C, D = 2**53 + 1, 2**53 + 3, 2**63 - 1, 2**53 + 5
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("qty", pa.int64()),
])


def rows(*items):
    return pa.Table.from_pylist([{"id": i, "name": n, "qty": q} for i, n, q in items], schema=SCHEMA)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A pyiceberg table: the first snapshot inserts A, B and C; later ones
    delete A, update B and insert D. Yields (client, first snapshot)."""
    tmp = tmp_path_factory.mktemp("bigids")
    warehouse = tmp / "warehouse"
    warehouse.mkdir()
    db = warehouse / "pyiceberg.db"
    cat = SqlCatalog("sluice", uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")
    cat.create_namespace("big")
    tbl = cat.create_table("big.ids", schema=SCHEMA)
    tbl.append(rows((A, "a", 1), (B, "b", 1), (C, "c", 1)))
    first = tbl.current_snapshot().snapshot_id
    tbl.delete(EqualTo("id", A))
    tbl.overwrite(rows((B, "b2", 2)), overwrite_filter=EqualTo("id", B))
    tbl.append(rows((D, "d", 4)))

    srv = Flightd(["--warehouse", str(warehouse), "--catalog-uri", f"file://{db}"], tmp)
    client = sluice.connect(srv.uri)
    try:
        yield client, first
    finally:
        client.close()
        srv.stop()


def exact(values):
    """The values as Python ints (None for a null), failing on a float: a
    float that compares equal to an id may still be another id."""
    out = []
    for v in values:
        if v is pd.NA or v is None:
            out.append(None)
            continue
        assert type(v) is int, f"{v!r} is a {type(v).__name__}, not an int"
        out.append(v)
    return out


def by_op(df):
    """{op: [(before.id, after.id)]} of a flattened frame."""
    out = {}
    for op, b, a in zip(df["op"].tolist(), exact(df["before.id"].tolist()), exact(df["after.id"].tolist())):
        out.setdefault(op, []).append((b, a))
    return out


@pytest.mark.parametrize("fold", [False, True])
def test_net_changes_with_identity_keep_ids_exact(served, fold):
    client, first = served
    reader = client.changes("big.ids", from_snapshot=first, identity=["id"], net_changes=True, fold_updates=fold)
    df = sluice.to_pandas(reader, flatten=True)
    assert str(df["after.id"].dtype) == "int64[pyarrow]"
    # (before.id, after.id) per op; C never changes.
    updates = {"update": [(B, B)]} if fold else {"update_before": [(B, None)], "update_after": [(None, B)]}
    assert by_op(df) == {"delete": [(A, None)], "insert": [(None, D)], **updates}
    qty = {op: (b, a) for op, b, a in zip(df["op"].tolist(), exact(df["before.qty"].tolist()),
                                          exact(df["after.qty"].tolist()))}
    assert qty["delete"] == (1, None) and qty["insert"] == (None, 4)
    assert (qty["update"] if fold else (qty["update_before"][0], qty["update_after"][1])) == (1, 2)


@pytest.mark.parametrize("window", ["after-first", "whole-history"])
def test_struct_images_keep_ids_exact(served, window):
    """The images as struct columns (what changes_table(...).to_pandas()
    made dicts of floats from, for the update pair of net changes)."""
    client, first = served
    if window == "after-first":
        table = client.changes_table("big.ids", from_snapshot=first, identity=["id"], net_changes=True)
        want_before, want_after = [A, B], [B, D]
    else:
        table = client.changes_table("big.ids", identity=["id"])
        want_before, want_after = [A, B], sorted([A, B, B, C, D])
    df = sluice.to_pandas(table)
    assert str(df["before"].dtype).startswith("struct<id: int64")
    befores = [b for b in df["before"].tolist() if b is not pd.NA and b is not None]
    afters = [a for a in df["after"].tolist() if a is not pd.NA and a is not None]
    assert sorted(exact(b["id"] for b in befores)) == want_before
    assert sorted(exact(a["id"] for a in afters)) == want_after


def test_batches_and_subscriptions_keep_ids_exact(served):
    client, first = served
    ids = []
    for b in client.batches("big.ids", from_snapshot=first, identity=["id"], fold_updates=True):
        df = b.to_pandas(flatten=True)
        assert str(df["before.id"].dtype) == str(df["after.id"].dtype) == "int64[pyarrow]"
        ids += exact(df["before.id"].tolist()) + exact(df["after.id"].tolist())
    assert {i for i in ids if i is not None} == {A, B, D}
    with client.subscribe("big.ids", start="latest-full", follow=False) as sub:
        state = [i for fb in sub for i in exact(fb.to_pandas(flatten=True)["after.id"].tolist())]
    assert sorted(state) == sorted([B, C, D])
