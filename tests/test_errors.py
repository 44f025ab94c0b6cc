"""Every error a user can meet is a SleeperSparkError from errors.py, exported from the package,
and bad input at the edges (constructor arguments, a damaged registry entry or data file) gets
one of them, never a pydantic, JSON or Arrow exception."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import sleeper_spark as ss
from sleeper_spark import errors


def package_modules() -> list[str]:
    names = ["sleeper_spark"]
    for info in pkgutil.walk_packages(ss.__path__, "sleeper_spark."):
        if info.name != "sleeper_spark.__main__":  # runs the command line when imported
            names.append(info.name)
    return names


def test_every_error_class_is_defined_in_errors_and_exported() -> None:
    # Given every class of the package (pyspark-free modules and the spark layer alike)
    defined_elsewhere = []
    for name in package_modules():
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name \
                    and name != "sleeper_spark.errors" and issubclass(value, ss.SleeperSparkError):
                defined_elsewhere.append(f"{name}.{attribute}")

    # Then no error class lives outside errors.py, and errors.py's are all in the package root
    assert defined_elsewhere == []
    hierarchy = [n for n, v in vars(errors).items() if inspect.isclass(v) and issubclass(v, ss.SleeperSparkError)]
    assert set(hierarchy) <= set(ss.__all__)
    assert set(hierarchy) == set(errors.__all__)


@pytest.mark.parametrize("construct", [
    lambda: ss.Catalog.local("/tmp/warehouse", no_such_setting=1),
    lambda: ss.Catalog.local("/tmp/warehouse", retry={"max_attempts": "many"}),
    lambda: ss.Catalog.aws(warehouse="s3://bucket/prefix", region=5),
    lambda: ss.Catalog.aws(warehouse="s3://bucket/prefix", transactions_table=None),
    lambda: ss.Catalog.object_store("s3://bucket/prefix", conditional_writes="maybe"),
    lambda: ss.Catalog.object_store("s3://bucket/prefix", lock_table=["a", "b"]),
    lambda: ss.Catalog.from_options({"warehouse": "/tmp/warehouse", "retry.max_attempts": "many"}),
], ids=["local-unknown", "local-type", "aws-region", "aws-table", "object-store-mode", "object-store-lock",
        "options"])
def test_bad_constructor_arguments_are_config_errors(construct: Callable[[], ss.Catalog]) -> None:
    with pytest.raises(ss.ConfigError) as raised:
        construct()
    assert type(raised.value) is ss.ConfigError


@pytest.mark.parametrize("damage", [b"{not json", b'{"name": "events"}', b"\xff\xfe"], ids=["json", "fields", "bytes"])
def test_a_damaged_registry_entry_is_a_corrupt_log_error_naming_it(tmp_path: Path, damage: bytes) -> None:
    # Given a table whose catalog entry was damaged on disk
    catalog = ss.Catalog.local(str(tmp_path))
    catalog.create_table("events", pa.schema([("id", pa.int64())]))
    entry = tmp_path / "_catalog" / "events.json"
    assert entry.is_file()
    entry.write_bytes(damage)

    # When the table is opened, then the error is typed and names the entry
    with pytest.raises(ss.CorruptLogError, match=r"catalog entry of table 'events'.*events\.json"):
        ss.Catalog.local(str(tmp_path)).table("events")


def test_a_damaged_data_file_is_a_corrupt_data_file_error(tmp_path: Path) -> None:
    catalog = ss.Catalog.local(str(tmp_path))
    table = catalog.create_table("events", pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": list(range(10))}))
    (file,) = table.files()
    path = tmp_path / "events" / file.path
    path.write_bytes(path.read_bytes()[:-3])

    with pytest.raises(ss.CorruptDataFileError, match=r"is damaged \(size"):
        table.scan()
    assert not isinstance(ss.CorruptDataFileError("x"), ss.CorruptLogError)
