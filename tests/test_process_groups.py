"""Nothing a test starts outlives the test run: not when pytest is stopped by SIGTERM or Ctrl-C in
the middle of a test, not when an xdist worker dies, and not when what was started left a
daemon behind and exited (as ``start-connect-server.sh`` does).

Each case runs a pytest of its own in a subprocess, with the plugin of ``tests.fixtures.process_groups``,
stops it the hard way, and then looks for the processes its fixtures started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fixtures import process_groups

REPO = Path(__file__).resolve().parents[1]

INNER_TESTS = '''
import faulthandler, os, signal, subprocess, time
from pathlib import Path

import pytest

from tests.fixtures import process_groups

OUT = Path(os.environ["INNER_OUT"])
# Where the run's Python stacks go on SIGUSR1: what a stop that never ends was doing.
STACKS = (OUT / "stacks.txt").open("w")
faulthandler.register(signal.SIGUSR1, file=STACKS, all_threads=True)


@pytest.fixture
def daemon():
    """Like start-connect-server.sh: the started script leaves a process in its group and exits."""
    script = process_groups.start(["bash", "-c", f"sleep 600 & echo $! > {OUT / 'daemon.pid'}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    script.wait()
    yield
    process_groups.stop(script)


def test_waits(daemon):
    (OUT / "ready").write_text(str(os.getpid()))
    time.sleep(600)


def test_waits_with_a_server(daemon, dynamodb_local):
    (OUT / "ready").write_text(str(os.getpid()))
    time.sleep(600)


def test_its_worker_dies(daemon):
    os.kill(os.getpid(), signal.SIGKILL)
'''


def _gone(pid: int) -> bool:
    """No such process, or only its exit status is left (a zombie nobody waited for)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


# How long the stopped processes may take to be gone: a stop waits process_groups.STOP_TIMEOUT_S
# after SIGTERM before it sends SIGKILL, and a loaded machine is slow at both; only a process never
# stopped takes longer.
GONE_WITHIN_S = 60


def _wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def _processes_naming(text: str) -> list[int]:
    """Live processes whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = entry.read_bytes().decode(errors="replace")
        except OSError:
            continue
        if text in command and not _gone(int(entry.parent.name)):
            found.append(int(entry.parent.name))
    return found


class InnerRun:
    """A pytest of its own over INNER_TESTS, in a process group of its own."""

    def __init__(self, folder: Path, *options: str) -> None:
        self.out = folder
        folder.mkdir(parents=True)
        (folder / "test_inner.py").write_text(INNER_TESTS)
        (folder / "pytest.ini").write_text("[pytest]\n")
        environment = {**os.environ, "INNER_OUT": str(folder), "PYTHONPATH": str(REPO)}
        self.log = (folder / "pytest.log").open("wb")
        self.process = process_groups.start(
            [sys.executable, "-m", "pytest", "-c", str(folder / "pytest.ini"), "--rootdir", str(folder),
             "--basetemp", str(folder / "basetemp"), "-p", "no:cacheprovider", "-p", "tests.fixtures.process_groups",
             "-p", "tests.fixtures.servers", *options, str(folder / "test_inner.py")],
            cwd=REPO, env=environment, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_until_ready(self) -> None:
        ready = _wait_until(lambda: (self.out / "ready").exists() or self.process.poll() is not None, 180)
        assert ready and self.process.poll() is None, self.output()

    def daemon_pid(self) -> int:
        return int((self.out / "daemon.pid").read_text())

    def output(self) -> str:
        self.log.flush()
        return (self.out / "pytest.log").read_text(errors="replace")[-3000:]

    def state(self) -> str:
        """Why the run has not ended: its kernel state, its signal masks, and its Python stacks."""
        pid = self.process.pid
        try:
            status = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            return "gone"
        os.kill(pid, signal.SIGUSR1)
        _wait_until(lambda: bool((self.out / "stacks.txt").read_text().strip()), 5)
        lines = [line for line in status if line.startswith(("State", "Threads", "Sig", "ShdPnd"))]
        return "\n".join([*lines, (self.out / "stacks.txt").read_text(), self.output()])

    def stop(self) -> None:
        process_groups.stop(self.process)
        self.log.close()


@pytest.fixture
def inner_pytest(tmp_path: Path) -> Iterator[Callable[..., InnerRun]]:
    """Starts inner runs (the pytest options given) and stops whatever is left of them afterwards."""
    runs: list[InnerRun] = []

    def start(*options: str) -> InnerRun:
        runs.append(InnerRun(tmp_path / f"inner-{len(runs)}", *options))
        return runs[-1]

    yield start
    for run in runs:
        run.stop()


def _stop_while_waiting(run: InnerRun, stop_signal: signal.Signals) -> int:
    """Wait until the inner test waits, send pytest alone the signal; returns the daemon's pid."""
    run.wait_until_ready()
    daemon = run.daemon_pid()
    assert not _gone(daemon)
    os.kill(run.process.pid, stop_signal)
    try:
        run.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"pytest still runs 60 s after {stop_signal.name}:\n{run.state()}")
    return daemon


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_daemon_a_fixture_started_is_gone_once_pytest_is_stopped(
        inner_pytest: Callable[..., InnerRun], stop_signal: signal.Signals) -> None:
    # Given a test waiting while its fixture's script has left a daemon in its process group
    run = inner_pytest("-k", "test_waits and not server")
    # When pytest alone gets the signal, in the middle of the test
    daemon = _stop_while_waiting(run, stop_signal)
    # Then the daemon is gone too, whether the fixture's teardown ran (SIGINT) or not (SIGTERM)
    assert _wait_until(lambda: _gone(daemon), GONE_WITHIN_S), run.output()


def test_a_daemon_a_dead_xdist_worker_started_is_gone_once_the_run_notices(
        inner_pytest: Callable[..., InnerRun]) -> None:
    # Given an xdist worker that starts a daemon and is then SIGKILLed, so no teardown of it runs
    run = inner_pytest("-k", "test_its_worker_dies", "-n", "1")
    run.process.wait(timeout=180)
    assert "crashed" in run.output()
    # Then the run's main process has stopped the daemon the worker recorded
    assert _wait_until(lambda: _gone(run.daemon_pid()), GONE_WITHIN_S), run.output()


@pytest.mark.integration
def test_a_test_server_is_gone_once_pytest_is_terminated(inner_pytest: Callable[..., InnerRun]) -> None:
    # Given a test waiting with DynamoDB Local (a JVM) up
    run = inner_pytest("-k", "test_waits_with_a_server")
    run.wait_until_ready()
    basetemp = str(run.out / "basetemp")
    servers = _processes_naming(basetemp)  # the server's temporary folder is on its command line
    assert servers, run.output()
    # When pytest alone gets SIGTERM
    os.kill(run.process.pid, signal.SIGTERM)
    run.process.wait(timeout=60)
    # Then no process of the server is left
    assert _wait_until(lambda: not _processes_naming(basetemp), GONE_WITHIN_S), run.output()
