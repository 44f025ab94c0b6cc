#!/usr/bin/env bash
# Installs everything the tests need (venv, test extras, Java, DynamoDB Local, SeaweedFS),
# checks types and style, and runs the whole test suite. Extra arguments go to pytest (after ours,
# so they win: `-n 0` runs everything in this one process).
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
bash scripts/bootstrap.sh test
bash scripts/install-test-servers.sh
bash scripts/build-jar.sh --check      # the committed jar is exactly what jars/src builds to
.venv/bin/ruff check sleeper_spark tests bench examples
.venv/bin/mypy sleeper_spark
bash scripts/test-floors.sh            # the core unit tests and tests/cli on the lowest declared pyarrow, pydantic, tenacity, boto3, typer, rich
# The suite starts dozens of JVMs (Spark drivers, servers) that each live seconds to minutes, and
# most of their CPU goes to the JIT's second tier and the parallel collector's threads: C1 alone
# and the serial collector run a small Spark job on 13-16 s of CPU instead of 23-27 s. The
# benchmarks keep Java's defaults.
export JDK_JAVA_OPTIONS="${JDK_JAVA_OPTIONS:+${JDK_JAVA_OPTIONS} }-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# The suite starts hundreds of Python processes that import sleeper_spark; where
# PYTHONDONTWRITEBYTECODE is set, none caches its bytecode and each compiles the package again
# (0.1 s of CPU each): compile it once here, as pip does for an installed package.
.venv/bin/python -m compileall -q sleeper_spark tests > /dev/null
# Every Python process Spark starts imports pyspark from the zips in $SPARK_HOME/python/lib, which
# hold no bytecode, and so compiles it afresh (0.8 s of CPU each, hundreds of times a run): the
# tests run Spark from a home that is pyspark's own plus compiled zips (scripts/spark_home.py),
# made once per Python and pyspark. tests/test_packaging.py starts Spark from the stock one.
python_and_pyspark="$(.venv/bin/python -c 'import sys, pyspark; print(sys.version, pyspark.__version__)')"
home_key="$(echo "${python_and_pyspark}" | cksum | cut -d' ' -f1)"
spark_home="${repo_root}/.venv/spark-home-${home_key}"
[[ -d "${spark_home}" ]] || .venv/bin/python scripts/spark_home.py "${spark_home}" || true
if [[ -d "${spark_home}" ]]; then
    export SPARK_HOME="${spark_home}"
fi
# And they load the same Spark classes: an archive of them (class-data sharing), made once per JDK,
# pyspark and Spark home (it names the jars by their paths), saves about a fifth of each Spark
# JVM's CPU (scripts/spark_class_archive.py). A JVM the archive does not fit runs as without it, silently.
archive_key="$( (java -version 2>&1; echo "${python_and_pyspark}"; echo "${SPARK_HOME:-}") | cksum | cut -d' ' -f1)"
class_archive="${repo_root}/.venv/spark-classes-${archive_key}.jsa"
[[ -f "${class_archive}" ]] || .venv/bin/python scripts/spark_class_archive.py "${class_archive}"
if [[ -f "${class_archive}" ]]; then
    export JDK_JAVA_OPTIONS="${JDK_JAVA_OPTIONS} -XX:SharedArchiveFile=${class_archive} -Xlog:cds=off -Xlog:cds+dynamic=off"
fi
# Four worker processes on two cores: much of the suite waits on servers, subprocesses and
# Spark, and the other workers run meanwhile (measured back to back on one clone: 18 min 8 s with
# three workers, 16 min 21 s with four, the cores 98 % busy). Each worker starts the servers and
# the SparkSession it needs. A worker takes one test module at a time as it frees up (--dist
# loadfile), in the order conftest.py puts them: the modules that start Spark applications and servers of their own
# first, so that the run ends on short modules instead of one long one running alone (the last
# minute and a half of a run handing out small batches in path order, --dist load, kept the
# machine half idle), and a module's fixtures are never set up on two workers.
# --durations=30 lists the slowest tests at the end, so a test that grows slow shows.
exec .venv/bin/python -m pytest -n 4 --dist loadfile --no-loadscope-reorder --durations=30 "$@"
