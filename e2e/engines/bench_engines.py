"""The engine readers at scale: one window read by Spark (local[2]) and
Ray (2 CPUs) through one flightd and through two replicas, by pyarrow
through one stream, and by Spark's own Iceberg changelog view on a
copy-on-write copy of the table (issue 23's benchmark; make bench-engines).

    python bench_engines.py --flightd BIN --rows N [--spark41 DIR] [--max-endpoints 8] [--out FILE]

It writes a table of N rows in 4 appends with pyiceberg (the window is its
whole history), then runs each arm in a process of its own against fresh
flightd processes. For each arm: the read's wall time (the engine's start
apart), the CPU of the reader's process tree (Spark: the Python driver,
its JVM and Python workers; Ray: the driver, its raylet and workers) and
of flightd, from /proc, and the peak RSS of the reader's tree (the largest
sum of its processes' RSS, sampled every 100 ms) and flightd's VmHWM.
Prints a Markdown table, and the load average before and after.

The changelog arm needs Spark with Iceberg's Spark runtime: DIR is make
spark-connect's Spark 4.1 install (its venv's pyspark and the runtime
jars listed in DIR/jars). Its table is a Hadoop-catalog copy of the
table's metadata (the same data files) with the write modes set to
copy-on-write, which the changelog view requires; the arm runs
create_changelog_view over the whole history and reads the view with
Spark's noop sink, as the Spark arm reads Sluice. Without --spark41 the
arm is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
TABLE = "bench.orders"
TICK = os.sysconf("SC_CLK_TCK")


# -- the arms, each run as: python bench_engines.py --arm NAME --uri URI ...


def arm_pyarrow(uri: str, max_endpoints: int, jars: str) -> Dict[str, float]:
    import sluice

    t0 = time.monotonic()
    with sluice.connect(uri) as c:
        rows = sum(b.num_rows for b in c.changes(TABLE, layout="flat"))
    return {"rows": rows, "read_s": time.monotonic() - t0, "start_s": 0.0}


def arm_spark(uri: str, max_endpoints: int, jars: str) -> Dict[str, float]:
    from pyspark.sql import SparkSession

    import sluice.spark

    t0 = time.monotonic()
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "2g").getOrCreate())
    sluice.spark.register(spark)
    started = time.monotonic()
    df = (spark.read.format("sluice").option("uri", uri).option("table", TABLE)
          .option("max_endpoints", str(max_endpoints)).load())
    df.write.format("noop").mode("overwrite").save()  # every partition read, nothing kept
    read_s = time.monotonic() - started
    parts = df.rdd.getNumPartitions()
    spark.stop()
    return {"rows": -1, "read_s": read_s, "start_s": started - t0, "parts": parts}


def arm_ray(uri: str, max_endpoints: int, jars: str) -> Dict[str, float]:
    import ray

    import sluice.ray

    t0 = time.monotonic()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=OBJECT_STORE)
    started = time.monotonic()
    ds = sluice.ray.read_changes(uri, TABLE, max_endpoints=max_endpoints).materialize()
    read_s = time.monotonic() - started
    rows = ds.count()
    parts = ds.num_blocks()
    ray.shutdown()
    return {"rows": rows, "read_s": read_s, "start_s": started - t0, "parts": parts}


def arm_changelog(warehouse: str, max_endpoints: int, jars: str) -> Dict[str, float]:
    """Spark's own change feed: Iceberg's create_changelog_view on the
    copy-on-write copy in the Hadoop catalog at warehouse."""
    from pyspark.sql import SparkSession

    t0 = time.monotonic()
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "2g").config("spark.jars", jars)
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.cow", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.cow.type", "hadoop")
             .config("spark.sql.catalog.cow.warehouse", warehouse)
             .getOrCreate())
    started = time.monotonic()
    spark.sql(f"CALL cow.system.create_changelog_view(table => '{TABLE}', changelog_view => 'changes')")
    df = spark.table("changes")
    df.write.format("noop").mode("overwrite").save()
    read_s = time.monotonic() - started
    parts = df.rdd.getNumPartitions()
    spark.stop()
    return {"rows": -1, "read_s": read_s, "start_s": started - t0, "parts": parts}


ARMS = {"pyarrow": arm_pyarrow, "spark": arm_spark, "ray": arm_ray, "changelog": arm_changelog}
# Ray's object store: the materialized window (about 1 GiB at 10M rows)
# fits without spilling to disk.
OBJECT_STORE = 2 << 30
CHANGELOG = "Spark 4.1 + Iceberg 1.11 create_changelog_view, copy-on-write copy"
# The arms a run measures, in order (label, arm, flightd replicas): the
# changelog arm second and the replica arms after both engines'
# single-flightd ones, so a run cut short still compares every reader.
ARMS_RUN = {"pyarrow": ("pyarrow, one stream", "pyarrow", 1), "changelog": (CHANGELOG, "changelog", 0),
            "spark1": ("Spark local[2]", "spark", 1), "ray1": ("Ray, 2 CPUs", "ray", 1),
            "spark2": ("Spark local[2]", "spark", 2), "ray2": ("Ray, 2 CPUs", "ray", 2)}
ARM_KEYS = list(ARMS_RUN)


# -- the harness


def children() -> Dict[int, List[int]]:
    kids: Dict[int, List[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree(pid: int) -> List[int]:
    kids, out, todo = children(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_s(pid: int) -> float:
    """utime + stime of a process (not of its children: each is sampled)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in f[11:13]) / TICK


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def hwm_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def start_flightd(binary: str, warehouse: Path, n: int, log: Path) -> List[Tuple[subprocess.Popen, str]]:
    """n replicas of the warehouse, each advertising itself and listing
    all as peers; returns each process with its URI."""
    sys.path.insert(0, str(HERE))
    from conftest import free_ports

    ports = free_ports(n)
    peers = ",".join(f"grpc://127.0.0.1:{p}" for p in ports)
    out = []
    for p in ports:
        ready = log.with_name(f"ready-{p}")
        with open(log, "ab") as f:
            proc = subprocess.Popen([binary, "--warehouse", str(warehouse), "--listen", f"127.0.0.1:{p}",
                                     "--advertise", f"grpc://127.0.0.1:{p}", "--peers", peers,
                                     "--ready-file", str(ready)], stdout=f, stderr=subprocess.STDOUT)
        out.append((proc, f"grpc://127.0.0.1:{p}"))
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"flightd did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)
    return out


def run_arm(arm: str, uri: str, max_endpoints: int, python: str = sys.executable, jars: str = "",
            env: Optional[Dict[str, str]] = None) -> Dict[str, float]:
    """Run an arm in a process of its own (python: its interpreter); sample its tree."""
    errlog = tempfile.TemporaryFile()
    proc = subprocess.Popen([python, __file__, "--arm", arm, "--uri", uri, "--max-endpoints", str(max_endpoints),
                             "--jars", jars], stdout=subprocess.PIPE, stderr=errlog, env=env)
    cpu: Dict[int, float] = {}
    peak = 0
    while proc.poll() is None:
        pids = tree(proc.pid)
        for p in pids:
            c = cpu_s(p)
            if c:
                cpu[p] = max(cpu.get(p, 0.0), c)
        peak = max(peak, sum(rss_bytes(p) for p in pids))
        time.sleep(0.1)
    out = proc.stdout.read().decode() if proc.stdout else ""
    if proc.returncode != 0:
        errlog.seek(0)
        raise RuntimeError(f"arm {arm} exited with {proc.returncode}: {out}\n{errlog.read().decode()[-4000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result.update(cpu_s=sum(cpu.values()), peak_rss=peak)
    return result


def write_table(warehouse: Path, rows: int) -> str:
    """The table of rows orders in 4 appends; returns its metadata file."""
    import numpy as np
    import pyarrow as pa

    sys.path.insert(0, str(HERE))
    from conftest import create_orders, orders

    tbl = create_orders(warehouse, TABLE)
    step = rows // 4
    for k in range(4):
        tbl.append(orders(pa.array(np.arange(k * step, rows if k == 3 else (k + 1) * step, dtype=np.int64))))
    return str(tbl.metadata_location)


def copy_on_write_copy(metadata: str, dst: Path) -> None:
    """The table in a Hadoop catalog at dst: its metadata file, with the
    write modes set to copy-on-write, as dst's version 1 of the table (the
    data and manifest files are the original's, by absolute path)."""
    doc = json.loads(Path(metadata.removeprefix("file://")).read_text())
    doc.setdefault("properties", {}).update({f"write.{op}.mode": "copy-on-write" for op in ("delete", "update", "merge")})
    meta = dst.joinpath(*TABLE.split("."), "metadata")
    meta.mkdir(parents=True)
    (meta / "v1.metadata.json").write_text(json.dumps(doc))
    (meta / "version-hint.text").write_text("1")


def loadavg() -> str:
    return ", ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arm")
    ap.add_argument("--uri")
    ap.add_argument("--flightd")
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--max-endpoints", type=int, default=8)
    ap.add_argument("--spark41", help="make spark-connect's Spark 4.1 install, for the changelog arm")
    ap.add_argument("--jars", default="")
    ap.add_argument("--arms", default=",".join(ARM_KEYS), help="the arms to run, of " + ",".join(ARM_KEYS))
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.arm:
        print(json.dumps(ARMS[a.arm](a.uri, a.max_endpoints, a.jars)))
        return
    load_before = loadavg()
    print(f"load average at the start: {load_before}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="sluice-bench-engines-") as tmp:
        warehouse = Path(tmp) / "warehouse"
        warehouse.mkdir()
        t0 = time.monotonic()
        metadata = write_table(warehouse, a.rows)
        print(f"wrote {a.rows} rows in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
        lines = ["| reader | flightd | parts | rows | engine start | read | rate | CPU reader | CPU flightd "
                 "| peak RSS reader | peak RSS flightd |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        wanted = a.arms.split(",")
        if unknown := set(wanted) - set(ARM_KEYS):
            raise SystemExit(f"--arms: no arm {sorted(unknown)}; the arms are {','.join(ARM_KEYS)}")
        for label, arm, n in (ARMS_RUN[k] for k in ARM_KEYS if k in wanted):
            if arm == "changelog" and not a.spark41:
                print("no --spark41: the changelog arm is left out", file=sys.stderr)
                continue
            r = (run_changelog_arm(Path(a.spark41), metadata, Path(tmp) / "cow") if arm == "changelog"
                 else run_sluice_arm(a, warehouse, Path(tmp), arm, n))
            lines.append(row(label, n, a.rows, r))
            print(lines[-1], file=sys.stderr, flush=True)
    lines.append("")
    lines.append(f"load average (1, 5, 15 min): {load_before} at the start, {loadavg()} at the end")
    report = "\n".join(lines)
    print(report)
    if a.out:
        Path(a.out).write_text(report + "\n")


def run_changelog_arm(spark41: Path, metadata: str, cow: Path) -> Dict[str, float]:
    """The changelog arm on a copy-on-write copy at cow, with Spark 4.1's
    venv and Iceberg's runtime jars (not this venv's pyspark or sluice)."""
    copy_on_write_copy(metadata, cow)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    return run_arm("changelog", str(cow), 0, python=str(spark41 / "venv" / "bin" / "python"),
                   jars=(spark41 / "jars").read_text().strip(), env=env)


def run_sluice_arm(a: argparse.Namespace, warehouse: Path, tmp: Path, arm: str, n: int) -> Dict[str, float]:
    """An arm reading Sluice through n fresh flightd replicas; adds their CPU and VmHWM."""
    servers = start_flightd(a.flightd, warehouse, n, tmp / "flightd.log")
    try:
        before = sum(cpu_s(s.pid) for s, _ in servers)
        r = run_arm(arm, servers[0][1], a.max_endpoints if arm != "pyarrow" else 1)
        r["flightd_cpu_s"] = sum(cpu_s(s.pid) for s, _ in servers) - before
        r["flightd_rss"] = sum(hwm_bytes(s.pid) for s, _ in servers)
    finally:
        for s, _ in servers:
            s.terminate()
            s.wait(timeout=60)
    return r


def row(label: str, n: int, want_rows: int, r: Dict[str, float]) -> str:
    """A Markdown row of an arm's result (n: its flightd replicas, 0 for none)."""
    rows = int(r["rows"]) if r["rows"] >= 0 else want_rows
    fl_cpu = f"{r['flightd_cpu_s']:.1f} s" if n else "-"
    fl_rss = f"{r['flightd_rss'] / 2**20:.0f} MiB" if n else "-"
    return (f"| {label} | {n or '-'} | {r.get('parts', 1)} | {rows} | {r['start_s']:.1f} s | {r['read_s']:.2f} s "
            f"| {rows / r['read_s'] / 1e6:.2f}M/s | {r['cpu_s']:.1f} s | {fl_cpu} | {r['peak_rss'] / 2**20:.0f} MiB "
            f"| {fl_rss} |")


if __name__ == "__main__":
    main()
