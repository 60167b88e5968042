"""Fixtures of the engine tests: real flightd replicas, a local Spark and
a local Ray, and a table that pyiceberg commits to while they read.

make test-engines (mk/python-engines.mk) runs these with the venv it
fills (.tmp/venv-engines: pyspark, ray, pyiceberg) and passes:

- SLUICE_FLIGHTD: the flightd binary;
- PYTHONPATH: the client package of this tree (clients/python), which
  Spark's and Ray's workers inherit;
- PYSPARK_PYTHON: the venv's Python, for Spark's Python workers.

Every process a test starts is stopped by the fixture that started it.
Spark runs as local[2] and Ray with 2 CPUs: the machine is shared.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Dict, List

import pyarrow as pa
import pytest

import sluice

DEMO = "demo.orders"
STREAM_TABLE = "e2e.orders"

# The schema of the tables pyiceberg writes (the demo's, without the
# identifier field pyiceberg cannot write by).
ORDERS = pa.schema([
    pa.field("order_id", pa.int64(), nullable=False),
    pa.field("customer", pa.string()),
    pa.field("country", pa.string()),
    pa.field("amount", pa.float64()),
    pa.field("status", pa.string()),
    pa.field("created_at", pa.timestamp("us", tz="UTC")),
])


def free_ports(n: int) -> List[int]:
    """n loopback ports free at the time of the call."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Flightd:
    """One flightd process of a test."""

    def __init__(self, warehouse: Path, port: int, peers: List[str], log_dir: Path, *extra: str) -> None:
        self.uri = f"grpc://127.0.0.1:{port}"
        self.args = [os.environ["SLUICE_FLIGHTD"], "--warehouse", str(warehouse), "--listen", f"127.0.0.1:{port}",
                     "--advertise", self.uri, "--peers", ",".join(peers), "--poll-interval", "200ms", *extra]
        self.log_path = log_dir / f"flightd-{port}.log"
        self.proc: "subprocess.Popen[bytes] | None" = None
        self.start()

    def start(self) -> None:
        ready = self.log_path.with_suffix(f".ready-{time.monotonic_ns()}")
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([*self.args, "--ready-file", str(ready)], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.read_text().strip()):
            if self.proc.poll() is not None:
                raise RuntimeError(f"flightd exited with {self.proc.returncode}: {self.log_path.read_text()}")
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"flightd did not serve within 60s: {self.log_path.read_text()}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: a replica that dies."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM, and a clean exit."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            rc = self.proc.wait(timeout=30)
            assert rc == 0, f"flightd exited with {rc} on SIGTERM: {self.log_path.read_text()[-2000:]}"


class Replicas:
    """Two flightd replicas of one warehouse (the demo table in it), each
    advertising itself and listing both as peers: a split window's
    endpoints spread over the two."""

    def __init__(self, warehouse: Path, log_dir: Path, *extra: str) -> None:
        self.warehouse = warehouse
        ports = free_ports(2)
        peers = [f"grpc://127.0.0.1:{p}" for p in ports]
        # The first creates the demo table; the second serves it too.
        self.servers = [Flightd(warehouse, ports[0], peers, log_dir, "--demo", *extra)]
        self.servers.append(Flightd(warehouse, ports[1], peers, log_dir, *extra))

    @property
    def uris(self) -> List[str]:
        return [s.uri for s in self.servers]

    def stop(self) -> None:
        for s in self.servers:
            s.stop()


@pytest.fixture
def replicas(tmp_path: Path):
    r = Replicas(tmp_path / "warehouse", tmp_path)
    yield r
    for s in r.servers:
        s.stop()


def catalog(warehouse: Path):
    """The warehouse's SQL catalog, as flightd reads it."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("sluice", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")


def orders(ids: "List[int] | pa.Array", status: str = "placed", amount: float = 10.0) -> pa.Table:
    """Rows of the orders tables, computed column by column in Arrow (the
    benchmark writes millions): customer "customer <id>", country one of
    four by id, amount plus id modulo 97, created_at a second per id."""
    import pyarrow.compute as pc

    oid = pa.array(ids, pa.int64())
    base_us = int(datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc).timestamp()) * 1_000_000
    return pa.table({
        "order_id": oid,
        "customer": pc.binary_join_element_wise("customer ", pc.cast(oid, pa.string()), ""),
        "country": pc.take(pa.array(["SE", "NO", "FI", "DK"]), pc.remainder(oid, 4)),
        "amount": pc.add(pc.cast(pc.remainder(oid, 97), pa.float64()), amount),
        "status": pa.repeat(pa.scalar(status, pa.string()), len(oid)),
        "created_at": pc.cast(pc.add(pc.multiply(oid, 1_000_000), base_us), pa.timestamp("us", tz="UTC")),
    }, schema=ORDERS)


def create_orders(warehouse: Path, name: str):
    """Create a table of orders with pyiceberg and return it."""
    cat = catalog(warehouse)
    ns = name.split(".")[0]
    try:
        cat.create_namespace(ns)
    except Exception:  # noqa: BLE001 - it exists
        pass
    return cat.create_table(name, schema=ORDERS, properties={"format-version": "2"})


def state_at(tbl, snapshot_id: int) -> Dict[int, tuple]:
    """The table's rows at a snapshot, read by pyiceberg: order_id -> row."""
    t = tbl.scan(snapshot_id=snapshot_id).to_arrow()
    return {r["order_id"]: row_tuple(r) for r in t.to_pylist()}


def row_tuple(r: dict) -> tuple:
    """A data row as a comparable tuple (timestamps in UTC)."""
    ts = r["created_at"]
    if ts is not None and ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return (r["order_id"], r["customer"], r["country"], r["amount"], r["status"],
            None if ts is None else ts.astimezone(timezone.utc))


def apply_flat(state: Dict[int, tuple], rows: List[dict]) -> None:
    """Apply flat change rows, in order, to an order_id -> row state."""
    for r in rows:
        kind = r["_change_type"]
        if kind in ("insert", "update_postimage"):
            state[r["order_id"]] = row_tuple(r)
        elif kind in ("delete", "update_preimage"):
            assert state.pop(r["order_id"], None) is not None, f"{kind} of a row the sink does not hold: {r}"
        else:
            raise AssertionError(f"unknown _change_type {kind!r}")


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """A local[2] SparkSession with the sluice format registered and
    filter pushdown on."""
    from pyspark.sql import SparkSession

    import sluice.spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = (SparkSession.builder.master("local[2]").appName("sluice-e2e")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.warehouse.dir", str(warehouse))
               .config("spark.driver.memory", "1g")
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .getOrCreate())
    sluice.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray of 2 CPUs, reading in order."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    import ray.data

    ray.data.DataContext.get_current().execution_options.preserve_order = True
    yield ray
    ray.shutdown()


def single_read(uri: str, table: str, **request) -> pa.Table:
    """The window in one DoGet, with the sluice client."""
    with sluice.connect(uri) as c:
        return c.changes_table(table, **request)
