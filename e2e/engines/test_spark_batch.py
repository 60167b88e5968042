"""spark.read.format("sluice") through two flightd replicas: the rows equal
one DoGet of the same window, and a replica killed during the read falls
over to the other."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sluice
from sluice.parallel import Connection, plan, read_part

from conftest import DEMO, create_orders, orders, single_read


def spark_rows(df) -> pa.Table:
    return df.toArrow()


def assert_same_rows(got: pa.Table, want: pa.Table) -> None:
    """Equal rows in equal order (Spark's types and nullability aside)."""
    assert got.column_names == want.column_names
    assert got.num_rows == want.num_rows, (got.num_rows, want.num_rows)
    for name in want.column_names:
        g = got[name].cast(want[name].type)
        assert g.equals(want[name]), f"column {name} differs"


def load(spark, uri: str, table: str, **options):
    r = spark.read.format("sluice").option("uri", uri).option("table", table)
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load()


def test_demo_read_in_parallel_equals_one_doget(spark, replicas):
    uri = replicas.uris[0]
    p = plan(Connection(uri), DEMO, max_endpoints=8, layout="flat")
    assert len(p.parts) > 1
    assert {part.locations[0] for part in p.parts} == set(replicas.uris), "the parts did not spread over both"

    df = load(spark, uri, DEMO, max_endpoints=8)
    assert df.columns[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
    assert df.rdd.getNumPartitions() == len(p.parts)
    want = single_read(uri, DEMO, layout="flat")
    assert want.num_rows == 13
    assert_same_rows(spark_rows(df), want)
    kinds = {r["_change_type"] for r in want.to_pylist()}
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}


def test_demo_window_columns_filter_and_pushdown(spark, replicas):
    uri = replicas.uris[1]
    with sluice.connect(uri) as c:
        snaps = [s["snapshot"] for s in c.snapshots(DEMO)]
    # A window, a projection and the server's filter, as options.
    df = load(spark, uri, DEMO, from_snapshot=snaps[0], to_snapshot=snaps[-2], columns="order_id,status,country",
              filter="country IN ('SE', 'NO')", max_endpoints=4)
    want = single_read(uri, DEMO, from_snapshot=snaps[0], to_snapshot=snaps[-2],
                       columns=["order_id", "status", "country"], filter="country IN ('SE', 'NO')", layout="flat")
    assert want.num_rows > 0
    assert_same_rows(spark_rows(df), want)

    # A Spark filter, pushed to the server and evaluated by Spark again:
    # exactly the rows whose own image matches.
    everything = single_read(uri, DEMO, layout="flat")
    got = load(spark, uri, DEMO).where("country = 'SE' AND amount > 100 AND status IS NOT NULL").toArrow()
    mask = pc.and_(pc.equal(everything["country"], "SE"), pc.greater(everything["amount"], 100))
    want = everything.filter(mask)
    assert want.num_rows == 4  # 1001, 1006 and both images of its update
    assert_same_rows(got, want)
    all_rows = everything.to_pylist()

    # The row layout and timestamps as the window.
    first_ts = all_rows[0]["_commit_timestamp"]
    df = load(spark, uri, DEMO, layout="row", to_timestamp=first_ts.isoformat())
    assert df.columns == ["op", "before", "after", "snapshot", "ts"]
    assert df.count() == 3


def test_bad_options_are_clear_errors(spark, replicas):
    uri = replicas.uris[0]
    for options, message in [
        ({"colums": "a"}, "unknown option colums"),
        ({"from_snapshot": "x"}, "from_snapshot 'x': want an integer"),
        ({"layout": "wide"}, "layout 'wide': want flat or row"),
        ({"columns": "nope"}, "nope"),
    ]:
        with pytest.raises(Exception, match=message):
            load(spark, uri, DEMO, **options).collect()
    with pytest.raises(Exception, match="table is required"):
        spark.read.format("sluice").option("uri", uri).load().collect()
    with pytest.raises(Exception, match="is not the window's"):
        spark.read.format("sluice").schema("order_id long").option("uri", uri).option("table", DEMO).load().collect()
    with pytest.raises(Exception, match="only for spark.readStream"):
        load(spark, uri, DEMO, maxSnapshotsPerTrigger=2).collect()


@pytest.fixture
def big_table(replicas):
    """600,000 rows in four appends: a window of many batches."""
    tbl = create_orders(replicas.warehouse, "e2e.big")
    for k in range(4):
        tbl.append(orders(list(range(k * 150_000, (k + 1) * 150_000))))
    return "e2e.big"


def test_read_part_resumes_on_the_next_location_mid_stream(replicas, big_table):
    uri = replicas.uris[0]
    conn = Connection(uri)
    p = plan(conn, big_table, max_endpoints=2, layout="flat")
    part = next(x for x in p.parts if x.locations[0] == replicas.uris[1])
    with sluice.connect(uri) as c:
        want = pa.Table.from_batches([b.batch for b in c.read_ticket(part.ticket, p.schema)], schema=p.schema)
    assert want.num_rows >= 300_000
    it = read_part(conn, part, p.schema)
    first = next(it)
    assert 0 < first.num_rows < want.num_rows
    replicas.servers[1].kill()  # mid-stream: the rest comes from replica 0
    got = pa.Table.from_batches([first, *it], schema=p.schema)
    assert got.equals(want)


def test_spark_read_survives_a_replica_killed_during_it(spark, replicas, big_table):
    uri = replicas.uris[0]
    want = single_read(uri, big_table, layout="flat")
    df = load(spark, uri, big_table, max_endpoints=8)
    result = {}

    def run():
        try:
            result["table"] = spark_rows(df)
        except BaseException as exc:  # noqa: BLE001 - reported below
            result["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 120
    while not tracker.getActiveStageIds() and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    running = t.is_alive()
    replicas.servers[1].kill()
    t.join(timeout=300)
    assert "error" not in result, result.get("error")
    assert running, "the read ended before the replica was killed: nothing failed over"
    assert_same_rows(result["table"], want)
