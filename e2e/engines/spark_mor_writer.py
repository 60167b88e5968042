"""Spark writes a merge-on-read Iceberg table (Spark 4.1 with Iceberg's
Spark runtime: make spark-connect installs both), for test_spark_mor.py.

    python spark_mor_writer.py WAREHOUSE JARS

WAREHOUSE is a Hadoop catalog's root; JARS the comma-separated runtime
jars. The table e2e.spark_mor gets an insert of 2,000 rows, then a
DELETE, an UPDATE and a MERGE, each written as delete files
(merge-on-read). Prints the path of the table's last metadata file.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyspark.sql import SparkSession


def main() -> None:
    warehouse, jars = sys.argv[1:3]
    spark = (SparkSession.builder.master("local[2]").appName("sluice-e2e-mor-writer")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.jars", jars)
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.w", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.w.type", "hadoop")
             .config("spark.sql.catalog.w.warehouse", warehouse)
             .getOrCreate())
    mor = ", ".join(f"'write.{op}.mode' = 'merge-on-read'" for op in ("delete", "update", "merge"))
    for sql in [
        "CREATE TABLE w.e2e.spark_mor (id BIGINT, name STRING, qty INT) USING iceberg "
        f"TBLPROPERTIES ('format-version' = '2', {mor})",
        "INSERT INTO w.e2e.spark_mor SELECT id, concat('n', id), CAST(id % 13 AS INT) FROM range(0, 2000)",
        "DELETE FROM w.e2e.spark_mor WHERE id % 10 = 0",
        "UPDATE w.e2e.spark_mor SET qty = qty + 100 WHERE id % 7 = 0",
        "MERGE INTO w.e2e.spark_mor t USING (SELECT id, concat('m', id) AS name, 1 AS qty FROM range(1990, 2010)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.name = s.name WHEN NOT MATCHED THEN INSERT *",
    ]:
        spark.sql(sql)
    files = spark.sql("SELECT content, count(*) FROM w.e2e.spark_mor.files GROUP BY content").collect()
    assert any(r[0] == 1 for r in files), f"no position delete files: {files}"
    spark.stop()
    meta = sorted((Path(warehouse) / "e2e" / "spark_mor" / "metadata").glob("v*.metadata.json"),
                  key=lambda p: int(p.name[1:].split(".")[0]))
    print(meta[-1])


if __name__ == "__main__":
    main()
