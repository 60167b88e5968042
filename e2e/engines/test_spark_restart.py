"""The Spark driver killed mid-stream and started again from its
checkpoint: the idempotent sink holds every change exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import sluice

from conftest import create_orders, orders, row_tuple, single_read, state_at
from sinks import batch_end, read_batches, sink_state

HERE = Path(__file__).resolve().parent


class Driver:
    """stream_driver.py in a process group of its own (the Python driver
    and the JVM it starts), so that a kill takes both."""

    def __init__(self, args, log: Path) -> None:
        self.out = open(log, "ab")
        self.proc = subprocess.Popen([sys.executable, str(HERE / "stream_driver.py"), *map(str, args)],
                                     stdout=self.out, stderr=subprocess.STDOUT, cwd=HERE, start_new_session=True)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)

    def close(self) -> None:
        self.kill()
        self.out.close()


def written(control: Path):
    log = control / "log"
    if not log.exists():
        return []
    return [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("written ")]


def wait_for(cond, timeout: float, what: str, driver: Driver, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if driver.proc.poll() is not None:
            raise AssertionError(f"the driver exited with {driver.proc.returncode}: {log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}: {log.read_text()[-3000:]}")
        time.sleep(0.2)


def test_driver_killed_mid_batch_restarts_from_checkpoint(replicas, tmp_path):
    uri = replicas.uris[0]
    tbl = create_orders(replicas.warehouse, "e2e.restart")
    tbl.append(orders(list(range(1, 11))))
    ckpt, sink, control = tmp_path / "checkpoint", tmp_path / "sink", tmp_path / "control"
    control.mkdir()
    (control / "hold").write_text("2")
    args = [uri, "e2e.restart", ckpt, sink, control]
    log = tmp_path / "driver.log"

    def caught_up(t) -> bool:
        batches = read_batches(sink)
        return bool(batches) and sink_state(batches) == state_at(t, t.current_snapshot().snapshot_id)

    driver = Driver(args, log)
    try:
        wait_for(lambda: 0 in written(control), 240, "micro-batch 0", driver, log)
        tbl.append(orders(list(range(11, 16))))
        wait_for(lambda: 1 in written(control), 120, "micro-batch 1", driver, log)
        tbl.delete("order_id <= 3")
        # Batch 2 is in the sink but not committed by Spark: kill there.
        wait_for(lambda: 2 in written(control), 120, "micro-batch 2", driver, log)
        time.sleep(0.5)
    finally:
        driver.close()
    assert not (ckpt / "commits" / "2").exists(), "Spark committed batch 2 before the kill"
    # Commits land while the driver is down.
    tbl = tbl.refresh()
    tbl.upsert(orders([5, 6], status="shipped"), join_cols=["order_id"])
    tbl.append(orders(list(range(16, 21))))
    tbl = tbl.refresh()
    (control / "hold").unlink()

    driver = Driver(args, log)
    try:
        wait_for(lambda: caught_up(tbl), 300, "the sink to catch up", driver, log)
        (control / "stop").write_text("")
        assert driver.proc.wait(timeout=120) == 0, log.read_text()[-3000:]
    finally:
        driver.close()

    runs = written(control)
    assert runs.count(2) == 2, f"batch 2 was not run again after the restart: {runs}"
    batches = read_batches(sink)
    ids = [b for b, _ in batches]
    assert ids == list(range(len(ids))), ids
    # The restarted batch 2 read the same window as before the kill, and
    # each batch's end is the table's state there.
    for b, _ in batches:
        end = batch_end(ckpt, b)
        assert sink_state([x for x in batches if x[0] <= b]) == state_at(tbl, end["snapshot"]), b
    # Nothing lost, nothing twice: the sink's rows are one DoGet of the whole history.
    want = single_read(uri, "e2e.restart", layout="flat").to_pylist()
    got = [r for _, rows in batches for r in rows]
    assert [(r["_change_type"], r["_commit_version"], row_tuple(r)) for r in got] == \
        [(r["_change_type"], r["_commit_version"], row_tuple(r)) for r in want]
    with sluice.connect(uri) as c:
        assert batch_end(ckpt, ids[-1])["snapshot"] == c.commit_seq("e2e.restart")["snapshot"]
