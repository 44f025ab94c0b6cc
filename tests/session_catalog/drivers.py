"""Spark drivers of metastore_driver.py, each a process of its own, as the tests start and collect them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.fixtures import process_groups
from tests.fixtures.hive_servers import hive_environment

HERE = Path(__file__).parent
DRIVER_TIMEOUT_S = 600.0


def error_lines(stderr: str) -> str:
    """The lines of a failed driver's output that say what failed, not where in Spark."""
    return "\n".join(line for line in stderr.splitlines() if not line.lstrip().startswith(("at ", "...")))[-4000:]


class Driver:
    """A running ``metastore_driver.py ROLE CONFIG``; its output goes to files in ``folder``."""

    def __init__(self, name: str, role: str, config: dict[str, Any], folder: Path) -> None:
        self.name = name
        self.out = folder / f"{name}.out"
        self.err = folder / f"{name}.err"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = process_groups.start(
                [sys.executable, str(HERE / "metastore_driver.py"), role, json.dumps(config)],
                env=hive_environment(folder), cwd=folder, stdin=subprocess.DEVNULL,
                stdout=out, stderr=err, preexec_fn=process_groups.die_with_parent())

    def failure(self) -> str:
        return f"driver {self.name} exited with {self.process.returncode}:\n{error_lines(self.err.read_text())}"

    def wait_for(self, path: Path) -> None:
        """Until the driver creates ``path``; fails at once if it exits first."""
        deadline = time.monotonic() + DRIVER_TIMEOUT_S
        while not path.exists():
            assert self.process.poll() is None, self.failure()
            assert time.monotonic() < deadline, f"driver {self.name} never created {path.name}"
            time.sleep(0.1)

    def result(self) -> dict[str, Any]:
        """The JSON line the driver printed last, once it exited successfully."""
        self.process.wait(timeout=DRIVER_TIMEOUT_S)
        assert self.process.returncode == 0, self.failure()
        return json.loads(self.out.read_text().strip().splitlines()[-1])  # type: ignore[no-any-return]

    def stop(self) -> None:
        process_groups.stop(self.process)
