"""spark.readStream.format("sluice"): micro-batches while commits land,
admission control, and the durable consumer's acks."""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import pytest

import sluice
from pyspark import __version__ as PYSPARK_VERSION
from sluice.spark_stream import ADMISSION_CONTROL

from conftest import DEMO, apply_flat, create_orders, orders, row_tuple, single_read, state_at
from sinks import batch_end, read_batches, sink_state, write_batch


# pyspark 4.1 calls a source's latestOffset() without the offset the last
# micro-batch ended at, so the durable consumer's ack of a batch comes with
# commit(end), when Spark plans the next batch: while no commit lands, the
# consumer trails the query by one batch. 4.2 passes it, and the ack comes
# at the trigger after the batch.
ACK_TRAILS_ONE_BATCH = tuple(int(x) for x in PYSPARK_VERSION.split(".")[:2]) < (4, 2)


def stream(spark, uri: str, table: str, **options):
    r = spark.readStream.format("sluice").option("uri", uri).option("table", table)
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load()


def to_sink(sink: Path):
    sink.mkdir(parents=True, exist_ok=True)

    def write(df, batch_id):
        write_batch(sink, batch_id, df.toArrow().to_pylist())

    return write


def end_commit_seq(query) -> int:
    """The commit_seq the query's last micro-batch read up to (-1: none)."""
    p = query.lastProgress
    if p is None:
        return -1
    p = p if isinstance(p, dict) else json.loads(p.json)
    if not p.get("sources"):
        return -1
    end = p["sources"][0].get("endOffset")
    if isinstance(end, str):
        # pyspark 4.2 reports a Python source's offset as JSON; 4.1 as the
        # repr of the dict the source returned.
        end = json.loads(end) if end.startswith('{"') else ast.literal_eval(end)
    return int(end["commit_seq"]) if end else -1


def acked(c, consumer: str, table: str):
    """The consumer's acknowledged snapshot, None before its first ack."""
    try:
        return c.consumer_progress(consumer, table)["snapshot"]
    except sluice.NotFound:
        return None


def wait_for(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def test_stream_sink_equals_table_after_each_micro_batch(spark, replicas, tmp_path):
    uri = replicas.uris[0]
    tbl = create_orders(replicas.warehouse, "e2e.orders")
    tbl.append(orders(list(range(1, 21))))
    sink, ckpt = tmp_path / "sink", tmp_path / "checkpoint"
    query = (stream(spark, uri, "e2e.orders", starting="earliest", consumer="spark-e2e", max_endpoints=4)
             .writeStream.foreachBatch(to_sink(sink)).option("checkpointLocation", str(ckpt))
             .trigger(processingTime="1 second").start())
    commits = [
        lambda: tbl.append(orders(list(range(21, 31)))),
        lambda: tbl.delete("order_id < 6"),
        lambda: tbl.upsert(orders([10, 11, 12], status="shipped"), join_cols=["order_id"]),
        lambda: tbl.append(orders(list(range(31, 36)))),
        lambda: tbl.overwrite(orders([20], status="returned", amount=0.0), overwrite_filter="order_id = 20"),
    ]
    try:
        with sluice.connect(uri) as c:
            for commit in [None, *commits]:
                if commit is not None:
                    commit()
                    tbl = tbl.refresh()
                target = c.commit_seq("e2e.orders")["commit_seq"]
                wait_for(lambda: end_commit_seq(query) >= target, 180, f"a micro-batch up to commit_seq {target}")
            # The durable consumer follows the query: its ack comes at the
            # trigger after the last batch (pyspark 4.1: after the one before).
            want_ack = c.commit_seq("e2e.orders")["snapshot"]
            if ACK_TRAILS_ONE_BATCH:
                want_ack = batch_end(ckpt, read_batches(sink)[-2][0])["snapshot"]
            wait_for(lambda: acked(c, "spark-e2e", "e2e.orders") == want_ack, 60,
                     "the consumer's ack of the last batch")
    finally:
        query.stop()
    assert query.exception() is None
    batches = read_batches(sink)
    assert len(batches) >= 1 + len(commits) - 1, [b for b, _ in batches]  # pyiceberg's upsert may commit twice
    # After each micro-batch, the sink holds the table's state at the
    # batch's end snapshot, as pyiceberg reads it.
    state: dict = {}
    for batch_id, rows in batches:
        apply_flat(state, rows)
        end = batch_end(ckpt, batch_id)
        assert state == state_at(tbl, end["snapshot"]), f"micro-batch {batch_id} (up to {end})"
    # Every change once: the batches are the one-DoGet read of the whole history.
    final = batch_end(ckpt, batches[-1][0])
    assert final["snapshot"] == tbl.current_snapshot().snapshot_id
    want = single_read(uri, "e2e.orders", to_snapshot=final["snapshot"], layout="flat").to_pylist()
    got = [r for _, rows in batches for r in rows]
    assert [(r["_change_type"], r["_commit_version"], row_tuple(r)) for r in got] == \
        [(r["_change_type"], r["_commit_version"], row_tuple(r)) for r in want]
    # The durable consumer followed the query.
    with sluice.connect(uri) as c:
        progress = c.consumer_progress("spark-e2e", "e2e.orders")
    if ACK_TRAILS_ONE_BATCH:
        assert progress["snapshot"] == want_ack != final["snapshot"] and progress["lag_commits"] > 0, progress
    else:
        assert progress["snapshot"] == final["snapshot"] and progress["lag_commits"] == 0


@pytest.mark.skipif(not ADMISSION_CONTROL, reason="admission control needs pyspark 4.2 or newer")
def test_admission_control_by_snapshots_and_rows(spark, replicas, tmp_path):
    uri = replicas.uris[1]
    with sluice.connect(uri) as c:
        lineage = c.snapshots(DEMO)
    assert len(lineage) == 7
    want = single_read(uri, DEMO, layout="flat").to_pylist()
    # maxSnapshotsPerTrigger 2: seven snapshots in four micro-batches;
    # maxRowsPerTrigger 3 over the demo's 3, 2, 1, 3, 2, 0 (a compaction)
    # and 2 change rows: batches end after commits 1, 3, 4, 6 and 7.
    for options, ends in [({"maxSnapshotsPerTrigger": 2}, [2, 4, 6, 7]),
                          ({"maxRowsPerTrigger": 3}, [1, 3, 4, 6, 7])]:
        name = next(iter(options))
        sink, ckpt = tmp_path / name / "sink", tmp_path / name / "checkpoint"
        query = (stream(spark, uri, DEMO, starting="earliest", **options)
                 .writeStream.foreachBatch(to_sink(sink)).option("checkpointLocation", str(ckpt))
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None
        batches = read_batches(sink)
        assert [batch_end(ckpt, b)["commit_seq"] for b, _ in batches] == ends, options
        got = [r for _, rows in batches for r in rows]
        assert [(r["_change_type"], r["_commit_version"], row_tuple(r)) for r in got] == \
            [(r["_change_type"], r["_commit_version"], row_tuple(r)) for r in want], options
        assert sink_state(batches) == sink_state([(0, want)])


@pytest.mark.skipif(ADMISSION_CONTROL, reason="pyspark 4.2 or newer has admission control")
def test_admission_control_before_spark_42_is_a_clear_error(spark, replicas, tmp_path):
    """pyspark 4.1: a trigger limit fails the query with an error that
    names the version it needs, instead of being ignored."""
    for name in ("maxSnapshotsPerTrigger", "maxRowsPerTrigger"):
        ckpt = tmp_path / name / "checkpoint"
        with pytest.raises(Exception, match="need Spark 4.2 or newer"):
            query = (stream(spark, replicas.uris[0], DEMO, starting="earliest", **{name: 2})
                     .writeStream.foreachBatch(to_sink(tmp_path / name / "sink"))
                     .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
            query.awaitTermination(300)
        assert not read_batches(tmp_path / name / "sink"), name


def test_stream_starting_latest_reads_only_new_commits(spark, replicas, tmp_path):
    uri = replicas.uris[0]
    tbl = create_orders(replicas.warehouse, "e2e.later")
    tbl.append(orders([1, 2, 3]))
    sink, ckpt = tmp_path / "sink", tmp_path / "checkpoint"
    query = (stream(spark, uri, "e2e.later", columns="order_id,status")
             .writeStream.foreachBatch(to_sink(sink)).option("checkpointLocation", str(ckpt))
             .trigger(processingTime="1 second").start())
    try:
        wait_for(lambda: query.lastProgress is not None, 180, "the first trigger")
        tbl.append(orders([4, 5]))
        wait_for(lambda: any(rows for _, rows in read_batches(sink)), 180, "a micro-batch with the new rows")
    finally:
        query.stop()
    rows = [r for _, b in read_batches(sink) for r in b]
    assert [(r["order_id"], r["_change_type"]) for r in rows] == [(4, "insert"), (5, "insert")]
    assert list(rows[0]) == ["order_id", "status", "_change_type", "_commit_version", "_commit_timestamp"]
