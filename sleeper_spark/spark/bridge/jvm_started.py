"""The Python side of a driver whose JVM started it (``python -m sleeper_spark.spark.bridge.jvm_started``).

A Spark Connect server, or a JVM application, has the jar but no Python driver to call; the jar's
``sleeper.spark.bridge.PythonSide`` then starts this module with a py4j gateway's port and secret in
``PYSPARK_GATEWAY_PORT`` / ``PYSPARK_GATEWAY_SECRET``, as Spark's ``PythonRunner`` starts a Python
application. It attaches a Python ``SparkContext`` to the JVM's running one (PySpark connects to
an existing gateway when those variables are set), connects the bridge the jar calls
(:mod:`sleeper_spark.spark.bridge.format_bridge`), and then only serves the bridge's calls, on py4j's
threads. It exits when its JVM is gone: a check every few seconds, besides the JVM's shutdown hook
that stops it.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

log = logging.getLogger(__name__)

_CHECK_EVERY_S = 2.0


def attach() -> Any:
    """A Python SparkSession over the JVM's default session, on the gateway of the environment."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    gateway = launch_gateway()  # type: ignore[no-untyped-call]  # connects to PYSPARK_GATEWAY_PORT
    jvm = gateway.jvm
    jsc = jvm.org.apache.spark.api.java.JavaSparkContext.fromSparkContext(
        jvm.org.apache.spark.SparkContext.getOrCreate())
    context = SparkContext(conf=SparkConf(_jconf=jsc.getConf()), gateway=gateway, jsc=jsc)
    jsession = jvm.org.apache.spark.sql.classic.SparkSession.builder().getOrCreate()
    return SparkSession(context, jsession)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="sleeper_spark python side: %(levelname)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # a line per call otherwise
    from sleeper_spark.spark.bridge.format_bridge import connect
    from sleeper_spark.spark.common.jvm import jar_entry

    spark = attach()
    entry = jar_entry(spark)
    if entry is None:
        log.error("the JVM that started this process has no sleeper_spark jar of this package's version")
        return 2
    connect(spark, entry)
    log.info("connected to the driver's JVM (Spark %s)", spark.version)
    gateway = spark.sparkContext._gateway
    while True:
        time.sleep(_CHECK_EVERY_S)
        try:
            gateway.jvm.java.lang.System.currentTimeMillis()
        except Exception:  # the JVM is gone (or its gateway): nothing left to serve
            log.info("the driver's JVM is gone; exiting")
            return 0


if __name__ == "__main__":
    sys.exit(main())
