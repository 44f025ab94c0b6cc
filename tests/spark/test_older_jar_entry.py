"""What a jar older than the package meets when it starts the Python side by its old module name."""

from __future__ import annotations

import subprocess
import sys

from sleeper_spark.version import __version__


def test_the_old_entry_point_says_the_jar_is_older_than_the_package_and_exits_with_an_error() -> None:
    done = subprocess.run([sys.executable, "-m", "sleeper_spark.spark.jvm_started"], capture_output=True, text=True,
                          timeout=60, env={"PYSPARK_GATEWAY_PORT": "1", "PATH": ""})
    assert done.returncode == 2
    assert "jar on this JVM's class path is older than the sleeper_spark package " + __version__ in done.stderr
    assert "jar_path()" in done.stderr
    assert "Traceback" not in done.stderr
