"""What a user installs carries the jar: a wheel and an sdist built from the checkout, and a wheel
installed into a new virtual environment, outside the checkout, reads through Spark's own
Parquet reader and leaves ``format("sleeper")`` registered."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

from sleeper_spark.version import __version__

REPO = Path(__file__).resolve().parents[1]
JAR = f"sleeper_spark/jars/sleeper-spark-{__version__}.jar"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel and an sdist of the checkout, built by this environment's setuptools (no download)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(out), str(REPO)], check=True, cwd=out)
    subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})"],
                   check=True, cwd=REPO, capture_output=True)
    return out


def test_the_wheel_and_the_sdist_carry_the_jar_the_sources_build(dist: Path) -> None:
    committed = (REPO / JAR).read_bytes()

    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(JAR) == committed
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(f"sleeper_spark-{__version__}/{JAR}")
        assert member is not None and member.read() == committed


_NATIVE_READ = textwrap.dedent("""
    import sys
    import pyarrow as pa
    import sleeper_spark as ss
    from pyspark.sql import SparkSession

    spark = ss.configure_spark(SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")).getOrCreate()
    catalog = ss.Catalog.local(sys.argv[1])
    catalog.write(pa.table({"id": range(10), "day": ["a", "b"] * 5}), "t", partition_by=["day"])
    df = catalog.read(spark, "t").where("day = 'a'")
    print("package", ss.__file__)
    print("rows", df.count())
    print("plan", df._jdf.queryExecution().executedPlan().toString().replace(chr(10), " "))
    # No ss.register(spark): the helper read registered the format
    spark.range(3).selectExpr("id", "'c' AS day").write.format("sleeper").options(**catalog.options()) \
        .mode("append").save("t")
    loaded = spark.read.format("sleeper").options(**catalog.options()).load("t")
    print("format", loaded.count())
    print("format_plan", loaded._jdf.queryExecution().executedPlan().toString().replace(chr(10), " "))
    spark.stop()
""")


@pytest.mark.spark
def test_a_wheel_in_a_new_environment_reads_through_spark_parquet_reader(dist: Path, tmp_path: Path) -> None:
    # Given a new virtual environment with only the wheel installed in it; pyspark and the other
    # dependencies come from this environment's site-packages (a .pth line), not from the checkout
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (wheel,) = dist.glob("*.whl")
    # Nothing from the checkout on the path: with it, pip finds the package installed already
    environment = {**os.environ, "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python)}
    environment.pop("PYTHONPATH", None)
    environment.pop("SPARK_HOME", None)  # the new environment's pyspark finds its own home
    # (this environment's pip installs into it: bootstrapping a pip of its own takes longer than the job)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, env=environment)
    script = tmp_path / "job.py"
    script.write_text(_NATIVE_READ)

    # When a job outside the checkout reads a table with the jar from the installed package
    done = subprocess.run([str(python), str(script), str(tmp_path / "warehouse")], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)

    # Then the package (and so its jar) came from the new environment and Spark's reader did the read
    assert lines["package"].startswith(str(venv))
    assert lines["rows"] == "5"
    assert "FileScan parquet" in lines["plan"] and "SleeperFileIndex" in lines["plan"]
    # And a helper call left format("sleeper") registered in the session, on Spark's own reader too
    assert lines["format"] == "13"
    assert "FileScan parquet" in lines["format_plan"] and "SleeperFileIndex" in lines["format_plan"]
