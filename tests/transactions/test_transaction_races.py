"""Multi-table transactions with real processes on every backend: racing, killed, and never torn.

Each test runs tests/transactions/txn_worker.py processes against one catalog:

* racing: transactional writers (each transaction appends to tables ``a`` and ``b``), plain
  appenders on ``a`` and a reader checking every read of ``a`` then ``b`` for a transaction in
  ``a`` but not in ``b``, and ``read_consistent`` both ways round. Every transaction must
  commit (0 failures), no read may be torn, and both tables keep every invariant;
* killed: a transactional writer SIGKILLed at a random moment (while staging, between its
  entries, before or after its decision), with a short lease. The next writer of each table
  must get through within the lease and a bounded margin, every transaction must be whole or
  absent, and the invariants hold with the in-flight transaction allowed 0 or 1 times.

``SLEEPER_TXN_WRITERS`` / ``SLEEPER_TXN_COUNT`` / ``SLEEPER_KILL_TRIALS`` raise the sizes. The races run
on the local disk and on the AWS servers by default, and in a long run (``SLEEPER_LONG_RUN=1``) also
with group-committing appenders and on the object store with each conditional-write strategy
(the decision records of the object stores are in the kill trials of every run).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sleeper_spark as ss
from sleeper_spark.layout import DECISIONS_DIR, INTENT_MARK
from tests.fixtures.catalogs import EVENTS_SCHEMA, catalog_params, events, make_catalog
from tests.invariants import WriteOutcome, check_table_invariants
from tests.reliability import budget
from tests.reliability.crash import delete_lock_records, recover_after_crash
from tests.transactions.checks import check_transactions_whole
from tests.transactions.txn_worker import LEASE_VARIABLE, OPTIONS_VARIABLE, ROWS

pytestmark = [pytest.mark.reliability]

REPO = Path(__file__).parents[2]
KINDS = ("local", "aws", "object_store", "object_store_put_and_verify", "object_store_dynamodb_lock")
WRITERS = int(os.environ.get("SLEEPER_TXN_WRITERS", "4"))
COUNT = int(os.environ.get("SLEEPER_TXN_COUNT", "5"))
KILL_LEASE_S = 1.0
# After a writer died, the next writer of its tables waits at most the lease, then rolls it back;
# the rest is starting a process and a few commits on a busy 2-core machine.
PROCEED_WITHIN_S = KILL_LEASE_S + 15.0
SURVIVOR = 999  # the writer tag of the plain writes after each kill


def recover_decisions(catalog: ss.Catalog) -> None:
    """The locks and intents a dead writer left on the decision records (object-store catalogs)."""
    store = catalog.backend.store
    if catalog.config.conditional_writes == "put-and-verify":
        for info in store.list(f"{DECISIONS_DIR}/"):
            if INTENT_MARK in info.key:
                store.delete(info.key)
    if catalog.config.conditional_writes == "dynamodb-lock":
        delete_lock_records(catalog, [f"{catalog.config.warehouse.rstrip('/')}/{DECISIONS_DIR}/"])


def start(role: str, writer: int, count: int, journal: Path, environment: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "tests.transactions.txn_worker", role, str(writer), str(count),
                             str(journal)], cwd=REPO, env=environment, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def journal_lines(path: Path) -> list[list[str]]:
    return [line.split(" ") for line in path.read_text().splitlines()] if path.exists() else []


def outcomes(path: Path, writer: int) -> list[WriteOutcome]:
    """Each write the journal started: committed (done), not (failed), or unknown (neither)."""
    state: dict[int, bool | None] = {}
    for word, seq, *_ in journal_lines(path):
        state[int(seq)] = {"start": None, "done": True, "failed": False}.get(word)
    return [WriteOutcome(writer, seq, ROWS, committed) for seq, committed in sorted(state.items())]


def environment_for(catalog: ss.Catalog, kind: str, request: pytest.FixtureRequest, lease_s: float = 30.0
                    ) -> dict[str, str]:
    environment = {**os.environ, OPTIONS_VARIABLE: json.dumps(catalog.options()), LEASE_VARIABLE: str(lease_s)}
    if not kind.startswith("local"):
        environment.update(request.getfixturevalue("aws_env"))
    return environment


def wait_all(processes: list[subprocess.Popen[bytes]], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    for process in processes:
        _, stderr = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
        assert process.returncode == 0, f"a worker failed: {stderr.decode()[-3000:]}"


@pytest.mark.timeout(budget.timeout_for(60 + WRITERS * COUNT * 2))
@pytest.mark.parametrize("kind", [*catalog_params(KINDS[:2]), *[
    pytest.param(kind, marks=[*([] if kind.startswith("local") else [pytest.mark.integration]), budget.long_run_only])
    for kind in ("local_group_commit", *KINDS[2:])]])
def test_racing_transactions_and_appends_commit_whole_and_no_read_is_torn(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # local_group_commit: the plain appenders share versions through group commit meanwhile.
    catalog = (ss.Catalog.local(str(tmp_path / "warehouse"), group_commit=True) if kind == "local_group_commit"
               else make_catalog(kind, request, tmp_path))
    catalog.create_table("a", EVENTS_SCHEMA, partition_by=["day"])
    catalog.create_table("b", EVENTS_SCHEMA)
    environment = environment_for(catalog, kind, request)
    appenders = 2
    # On the servers each commit costs more: fewer transactions keep the default run short.
    writers, count = (WRITERS, COUNT) if kind.startswith("local") else (max(2, WRITERS - 1), max(2, COUNT - 2))
    processes = [start("transact", w, count, tmp_path / f"tx-{w}", environment) for w in range(writers)]
    processes += [start("append", 100 + w, count * 2, tmp_path / f"append-{w}", environment) for w in range(appenders)]
    reader = start("read", 0, 8 if kind.startswith("local") else 15, tmp_path / "reader", environment)
    wait_all([*processes, reader], budget.timeout_for(60 + writers * count * 2))

    transactional = [o for w in range(writers) for o in outcomes(tmp_path / f"tx-{w}", w)]
    failures = [line for w in range(writers) for line in journal_lines(tmp_path / f"tx-{w}") if line[0] != "start"
                and line[0] != "done"]
    assert not failures, f"transactions failed under contention: {failures[:5]}"
    assert len(transactional) == writers * count and all(o.committed for o in transactional)
    plain = [o for w in range(appenders) for o in outcomes(tmp_path / f"append-{w}", 100 + w)]
    cold = ss.Catalog(catalog.config)
    check_table_invariants(cold.table("a"), [*transactional, *plain])
    check_table_invariants(cold.table("b"), transactional)
    # Aborted ones are first attempts that appended to both tables at once and lost a race for a
    # number; each tried again, one table at a time, as a new transaction.
    decided = check_transactions_whole(cold, ["a", "b"])
    assert decided["committed"] == writers * count, decided
    (_, reads, _, torn, _, inconsistent), = journal_lines(tmp_path / "reader")
    assert int(reads) > 0 and int(torn) == 0 and int(inconsistent) == 0, journal_lines(tmp_path / "reader")
    request.node.user_properties.append(("race_summary", f"{kind}: {writers}x{count} transactions ({decided}), "
                                         f"{len(plain)} appends, {reads} reads, 0 torn"))


@pytest.mark.timeout(budget.timeout_for(40 * max(budget.kill_trials(kind) for kind in KINDS)))
@pytest.mark.parametrize("kind", catalog_params(KINDS))
def test_a_killed_transactional_writer_leaves_every_transaction_whole_or_absent(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    catalog = make_catalog(kind, request, tmp_path)
    catalog.create_table("a", EVENTS_SCHEMA, partition_by=["day"])
    catalog.create_table("b", EVENTS_SCHEMA)
    environment = environment_for(catalog, kind, request, lease_s=KILL_LEASE_S)
    rng = random.Random(f"{budget.KILL_SEED}-transactions-{kind}")
    written: list[WriteOutcome] = []
    survivors: list[WriteOutcome] = []
    waits: list[float] = []
    for trial in range(budget.kill_trials(kind)):
        journal = tmp_path / f"journal-{trial}"
        process = start("transact", trial, 0, journal, environment)
        # Even trials kill after a first transaction committed (on the slow backends the first one
        # takes longer than a kill window), odd ones as soon as the first began.
        word = "done" if trial % 2 == 0 else "start"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None and not any(
                line[0] == word for line in journal_lines(journal)):
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.5 if kind == "local" else 2.0))
        process.send_signal(signal.SIGKILL)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == -signal.SIGKILL, f"the worker died on its own: {stderr.decode()[-3000:]}"
        written += outcomes(journal, trial)
        # What a dead process leaves under the lock-based strategies (a lock record, an intent file)
        # holds its key for the strategy's own lease (60 s); the operator's clean-up of the other
        # kill trials (tests/reliability/crash.py) removes it, here for the decisions too.
        for name in ("a", "b"):
            recover_after_crash(catalog, name)
        recover_decisions(catalog)
        # The next writer of each table: through within the lease and a margin, whatever the kill left.
        survivor = ss.Catalog(catalog.config)
        started = time.monotonic()
        for name in ("a", "b"):
            survivor.table(name).write(events(SURVIVOR, trial), metadata={"writer": str(SURVIVOR), "seq": str(trial)})
        survivors.append(WriteOutcome(SURVIVOR, trial, 3, committed=True))
        waits.append(time.monotonic() - started)
        assert waits[-1] < PROCEED_WITHIN_S, f"trial {trial}: the next writer waited {waits[-1]:.1f} s"
    cold = ss.Catalog(catalog.config)
    counts = check_transactions_whole(cold, ["a", "b"])
    check_table_invariants(cold.table("a"), [*written, *survivors])
    check_table_invariants(cold.table("b"), [*written, *survivors])
    assert counts.get("committed", 0) >= 1, f"the writers should have committed something: {counts}"
    summary = (f"{kind}: {budget.kill_trials(kind)} kills, transactions {counts}, next writer waited "
               f"{max(waits):.2f} s at most")
    request.node.user_properties.append(("kill_summary", summary))
    print(summary)


@pytest.mark.integration
def test_a_transaction_over_more_tables_than_one_dynamodb_transaction_holds_commits_whole(
        request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """DynamoDB's TransactWriteItems stops at 100 items; this protocol puts one item per table and
    one for the decision, so 101 tables are one transaction like two."""
    catalog = make_catalog("aws", request, tmp_path)
    names = [f"t{i:03d}" for i in range(101)]
    for name in names:
        catalog.create_table(name, EVENTS_SCHEMA)
    with catalog.transaction() as tx:
        for i, name in enumerate(names):
            tx.write(name, events(0, i, rows=1), metadata={"writer": "0", "seq": str(i)})
    cold = ss.Catalog(catalog.config)
    assert [cold.table(name).state().version for name in names] == [2] * len(names)
    assert check_transactions_whole(cold, names) == {"committed": 1}
