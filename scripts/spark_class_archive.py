"""Writes a class-data-sharing archive of the classes a small Spark job loads, for the test run.

    .venv/bin/python scripts/spark_class_archive.py ARCHIVE

The test suite starts dozens of short-lived JVMs on pyspark's own classpath (Spark drivers, the
Connect server, a standalone cluster, the Hive metastore); each spends about half its start-up
loading and verifying the same Spark classes. A JVM given the archive (``-XX:SharedArchiveFile``,
which scripts/test.sh sets) maps them instead: a small Spark job then takes 6-8 s instead of
14-15 s on two cores. A JVM on another classpath (DynamoDB Local) or another JDK finds the
archive does not fit and runs as without it. The job here writes and reads Parquet through
Spark's own writer and reader, and a sleeper table through the ``sleeper`` source and SQL, so
that the classes those paths load are in it. Writing the archive fails quietly: the tests run
without one then, only slower.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

JOB = """
import sys
import pyarrow as pa
from pyspark.sql import SparkSession
import sleeper_spark as ss

work = sys.argv[1]
catalog = ss.Catalog.local(work + "/warehouse")
spark = (ss.configure_spark(SparkSession.builder, catalogs={"lake": catalog}).master("local[2]")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
frame = spark.range(1000).selectExpr("id", "cast(id % 3 as string) as part", "current_timestamp() as at")
frame.write.mode("overwrite").partitionBy("part").parquet(work + "/plain")
spark.read.parquet(work + "/plain").groupBy("part").count().collect()
spark.sql("CREATE TABLE lake.t (id BIGINT, part STRING) USING sleeper PARTITIONED BY (part)")
frame.select("id", "part").writeTo("lake.t").append()
spark.sql("MERGE INTO lake.t USING (SELECT 1 AS id, '1' AS part) s ON t.id = s.id "
          "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
spark.table("lake.t").where("part = '1'").count()
spark.stop()
"""


def main(archive: Path) -> int:
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sleeper-cds-") as work:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
               "JDK_JAVA_OPTIONS": f"{os.environ.get('JDK_JAVA_OPTIONS', '')} -XX:ArchiveClassesAtExit={archive}"
                                   " -Xlog:cds=off -Xlog:cds+dynamic=off".strip()}
        done = subprocess.run([sys.executable, "-c", JOB, work], env=env, capture_output=True, text=True,
                              timeout=600, check=False)
    if done.returncode != 0 or not archive.exists():
        archive.unlink(missing_ok=True)
        print(f"no class-data-sharing archive (the tests run without it): {done.stderr[-1500:]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
