"""Writes a class-data-sharing archive of the classes a small Spark job loads, for the test run.

    .venv/bin/python scripts/spark_class_archive.py ARCHIVE

The test suite starts dozens of short-lived JVMs on pyspark's own classpath (Spark drivers, the
Connect server, a standalone cluster, the Hive metastore); each spends much of its start-up
loading and verifying the same Spark classes. A JVM given the archive (``-XX:SharedArchiveFile``,
which scripts/test.sh sets) maps them instead. Measured on two cores: a small Parquet job used 9 s
of CPU instead of 12 (7.5 s of wall time instead of 14.5), tests/spark/messages_job.py 24 s
instead of 30, and the suite's JVM-heavy modules (spark-submit, the standalone cluster, Connect,
the metastores, the clean-exit runs) ran in 210 s instead of 253. A JVM on another classpath
(DynamoDB Local) or another JDK finds that the archive does not fit and runs as without it. The
job here writes and reads Parquet through Spark's own writer and reader, and a sleeper table
through SQL (MERGE too) and through the ``sleeper`` Python data source, so that the classes those
paths load are in it. Writing the archive fails quietly: the tests then run without one, only
slower.
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
spark.conf.set("spark.sleeper_spark.native", "false")  # the Python data source's path too
frame.select("id", "part").write.format("sleeper").options(**catalog.options()).mode("append").save("t")
spark.read.format("sleeper").options(**catalog.options()).load("t").groupBy("part").count().collect()
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
