"""A merge-on-read Iceberg table that Spark wrote (DELETE, UPDATE and MERGE
as position delete files), read by Spark through sluice in parallel from
two replicas: the rows of one DoGet, and applied in order they give the
table's final state.

The writer is Spark 4.1 with Iceberg's Spark runtime (Iceberg has none for
Spark 4.2, which reads), installed by make spark-connect; make
test-engines passes its directory in SLUICE_SPARK41.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import apply_flat, catalog, single_read
from sluice.parallel import Connection, plan
from test_spark_batch import assert_same_rows, load

HERE = Path(__file__).resolve().parent


def expected_state() -> dict:
    """The table after spark_mor_writer.py's statements, worked out here."""
    rows = {i: (f"n{i}", i % 13 + (100 if i % 7 == 0 else 0)) for i in range(2000) if i % 10 != 0}
    for i in range(1990, 2010):
        rows[i] = (f"m{i}", rows[i][1]) if i in rows else (f"m{i}", 1)
    return rows


def test_spark_written_merge_on_read_table(spark, replicas, tmp_path):
    spark41 = Path(os.environ["SLUICE_SPARK41"])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    out = subprocess.run([str(spark41 / "venv" / "bin" / "python"), str(HERE / "spark_mor_writer.py"),
                          str(tmp_path / "hadoop"), (spark41 / "jars").read_text().strip()],
                         capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    metadata = out.stdout.strip().splitlines()[-1]
    cat = catalog(replicas.warehouse)
    cat.create_namespace_if_not_exists("e2e")
    cat.register_table("e2e.spark_mor", f"file://{metadata}")

    uri = replicas.uris[0]
    p = plan(Connection(uri), "e2e.spark_mor", max_endpoints=8, layout="flat")
    assert len(p.parts) >= 4 and {x.locations[0] for x in p.parts} == set(replicas.uris)
    want = single_read(uri, "e2e.spark_mor", identity=["id"], layout="flat")
    got = load(spark, uri, "e2e.spark_mor", identity="id", max_endpoints=8).toArrow()
    assert_same_rows(got, want)
    kinds = {r["_change_type"] for r in want.to_pylist()}
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}, kinds

    state: dict = {}
    rows = got.to_pylist()
    for r in rows:
        r["order_id"], r["created_at"] = r["id"], None  # apply_flat's key and row shape
        r["customer"], r["country"], r["amount"], r["status"] = r["name"], None, None, str(r["qty"])
    apply_flat(state, rows)
    assert {k: (v[1], int(v[4])) for k, v in state.items()} == expected_state()


pytestmark = pytest.mark.skipif(not os.environ.get("SLUICE_SPARK41"),
                                reason="needs Spark 4.1 with Iceberg's runtime (make test-engines passes SLUICE_SPARK41)")
