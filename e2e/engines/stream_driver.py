"""A Spark driver that streams a table into the idempotent sink (sinks.py),
for test_spark_restart.py to kill and start again.

    python stream_driver.py URI TABLE CHECKPOINT SINK CONTROL

It appends "written <batch id>" to CONTROL/log once a micro-batch is in
the sink. When CONTROL/hold names a batch id, that batch waits after its
write, before Spark can commit it, for the test to kill the driver
there. It stops cleanly when CONTROL/stop appears.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

import sluice.spark
from sinks import write_batch


def main() -> None:
    uri, table, checkpoint, sink, control = sys.argv[1:6]
    sink_dir, control_dir = Path(sink), Path(control)
    sink_dir.mkdir(parents=True, exist_ok=True)
    spark = (SparkSession.builder.master("local[2]").appName("sluice-e2e-driver")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "1g")
             .getOrCreate())
    sluice.spark.register(spark)
    hold = control_dir / "hold"

    def write(df, batch_id):
        write_batch(sink_dir, batch_id, df.toArrow().to_pylist())
        with open(control_dir / "log", "a") as f:
            f.write(f"written {batch_id}\n")
        if hold.exists() and hold.read_text().strip() == str(batch_id):
            time.sleep(600)  # killed here, before Spark commits the batch

    query = (spark.readStream.format("sluice").option("uri", uri).option("table", table)
             .option("starting", "earliest").option("max_endpoints", "4").load()
             .writeStream.foreachBatch(write).option("checkpointLocation", checkpoint)
             .trigger(processingTime="1 second").start())
    with open(control_dir / "log", "a") as f:
        f.write("started\n")
    while not (control_dir / "stop").exists():
        if query.exception() is not None:
            raise query.exception()
        time.sleep(0.2)
    query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
