#!/usr/bin/env bash
# install.sh DIR PYSPARK_VERSION MAVEN_PACKAGE
#
# Installs a Spark Connect server for the integration tests into DIR:
#   DIR/venv      a Python venv with pyspark==PYSPARK_VERSION (its wheel
#                 carries Spark's jars, the Connect server's among them)
#   DIR/ivy       the Ivy cache that resolved MAVEN_PACKAGE from Maven
#                 Central only (ivysettings.xml next to this script)
#   DIR/jars      the resolved jars, one path a line (the server's --jars:
#                 starting it needs no network)
#   DIR/.installed written last; its content is the two versions
#
# The Makefile fragment mk/spark.mk calls it; it does nothing when
# DIR/.installed names the same versions. Needs Java 17 or newer.
set -euo pipefail
dir=$(mkdir -p "$1" && cd "$1" && pwd) pyspark=$2 package=$3
python=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
want="pyspark==$pyspark $package"
if [[ -f $dir/.installed && $(cat "$dir/.installed") == "$want" ]]; then
	touch "$dir/.installed" # newer than this script: make is satisfied
	exit 0
fi
command -v java >/dev/null || { echo "install.sh: Spark needs Java 17 or newer on PATH (make java)" >&2; exit 1; }
rm -f "$dir/.installed"
mkdir -p "$dir"
[[ -x $dir/venv/bin/python ]] || "$python" -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "pyspark==$pyspark"
# Resolve the package with spark-submit's own resolver (what --packages
# does) and keep the jar list Spark made of it.
SPARK_LOCAL_IP=127.0.0.1 "$dir/venv/bin/python" - "$package" "$here/ivysettings.xml" "$dir/ivy" "$dir/jars.tmp" <<'PY'
import sys
from pyspark.sql import SparkSession
package, settings, ivy, out = sys.argv[1:]
s = (SparkSession.builder.master("local[1]")
     .config("spark.ui.enabled", "false")
     .config("spark.jars.packages", package)
     .config("spark.jars.ivySettings", settings)
     .config("spark.jars.ivy", ivy)
     .getOrCreate())
jars = [j.removeprefix("file://") for j in s.sparkContext.getConf().get("spark.jars").split(",") if j]
s.stop()
with open(out, "w") as f:
    f.write("\n".join(jars) + "\n")
PY
mv "$dir/jars.tmp" "$dir/jars"
echo "$want" >"$dir/.installed"
