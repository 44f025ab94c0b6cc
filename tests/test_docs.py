"""The documentation is true: its snippets run, and the facts it lists match the code.

Every fenced ``python`` and shell (``bash``, ``sh``, ``shell``) block of README.md and docs/ runs
in reading order, as a newcomer would run them: the README first, then the pages in the order of
the mkdocs nav, every block in a subprocess whose working directory is one temporary folder
shared by all of them, with each ``/tmp/<name>warehouse`` path replaced by a folder in it. So a
later block may use a table an earlier one created, and two pages that use one warehouse must
agree about its tables. A block whose first line is ``# not run: <why>``, or that follows the
line ``<!-- not run: <why> -->`` (where a reader won't take the marker as advice), is skipped; the
reason is required, and a test it names must exist.
Shell blocks that run may only call ``sleeper-spark`` (the one installed next to this
interpreter) or ``python -m sleeper_spark``, and set variables with ``export``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import botocore.session
import typer
from botocore import xform_name

import sleeper_spark as ss
from sleeper_spark.cli.main import app
from sleeper_spark.config import OPTIONS
from sleeper_spark.log.aws.dynamodb_log_tables import EXPIRES_AT, SNAPSHOTS_KEYS, TRANSACTIONS_KEYS
from sleeper_spark.option_specs import OptionSpec
from sleeper_spark.storage import lock_table

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"
DOCUMENTS = [REPO_ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
BIN_DIR = Path(sys.executable).parent
NOT_RUN = "# not run:"
_NOT_RUN_COMMENT = re.compile(r"^\s*<!-- not run: (?P<reason>.*) -->\s*$")
KINDS = {"python": "python", "py": "python", "bash": "shell", "sh": "shell", "shell": "shell"}
SHELL_COMMANDS = ("sleeper-spark", "python -m sleeper_spark", "export ")
WAREHOUSES = re.compile(r"/tmp/(?P<name>[\w-]*warehouse)\b")
SNIPPET_TIMEOUT_S = 120
# Pages whose code blocks are fragments (``store``, ``ss`` defined elsewhere), kept true by the
# tests of the code they describe: docs/conditional-writes.md by tests/storage/ (the request
# counts by test_request_counts.py, the locks by test_locks.py).
FRAGMENTS = {DOCS / "conditional-writes.md"}

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<language>[\w+-]*)\s*$")


@dataclass(frozen=True)
class Snippet:
    document: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    skipped_because: str | None = None  # the reason of a ``<!-- not run: ... -->`` line above the block

    @property
    def kind(self) -> str | None:
        return KINDS.get(self.language)

    @property
    def not_run_reason(self) -> str | None:
        if self.skipped_because is not None:
            return self.skipped_because
        first = self.code.lstrip().splitlines()[0] if self.code.strip() else ""
        return first[len(NOT_RUN):].strip() if first.startswith(NOT_RUN) else None

    @property
    def runs(self) -> bool:
        return self.kind is not None and self.not_run_reason is None

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(REPO_ROOT)}:{self.line}"


def snippets(document: Path) -> list[Snippet]:
    """The fenced code blocks of a Markdown file, with list indentation removed."""
    found: list[Snippet] = []
    lines = document.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, start = len(opening.group("indent")), index
        body: list[str] = []
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            body.append(lines[index][indent:])
            index += 1
        marker = _NOT_RUN_COMMENT.match(lines[start - 1]) if start > 0 else None
        found.append(Snippet(document, start + 1, opening.group("language"), "\n".join(body) + "\n",
                             marker.group("reason").strip() if marker else None))
        index += 1
    return found


def all_snippets() -> Iterator[Snippet]:
    for document in DOCUMENTS:
        if document not in FRAGMENTS:
            yield from snippets(document)


def reading_order() -> list[Path]:
    """README.md, then the pages in the order of the mkdocs nav."""
    nav = re.findall(r":\s*([\w/.-]+\.md)\s*$", (REPO_ROOT / "mkdocs.yml").read_text(), re.MULTILINE)
    return [REPO_ROOT / "README.md", *(DOCS / page for page in nav)]


def shell_commands(code: str) -> list[str]:
    """Logical lines of a shell snippet: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\s*\\\n\s*", " ", code)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


# -- the snippets run ----------------------------------------------------------------------


def test_the_snippets_run_in_reading_order_in_shared_warehouses(tmp_path: Path) -> None:
    # Given one folder standing in for /tmp, and the installed command on the PATH
    env = {**os.environ, "PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    env.pop("SLEEPER_SPARK_WAREHOUSE", None)
    ran: list[str] = []

    for document in reading_order():
        if document in FRAGMENTS:
            continue
        for snippet in (s for s in snippets(document) if s.runs):
            # When each snippet runs, the README's first, then every page's as a reader meets them
            code = WAREHOUSES.sub(lambda m: str(tmp_path / m.group("name")), snippet.code)
            script = tmp_path / f"snippet_{len(ran)}.{'py' if snippet.kind == 'python' else 'sh'}"
            script.write_text(code)
            command = [sys.executable, str(script)] if snippet.kind == "python" else ["bash", "-euo", "pipefail",
                                                                                       str(script)]
            done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=SNIPPET_TIMEOUT_S)

            # Then it succeeds after everything before it
            assert done.returncode == 0, (f"{snippet.where} failed ({done.returncode}) after {ran}:\n"
                                          f"{done.stdout}\n{done.stderr}")
            ran.append(snippet.where)
    assert any(where.startswith("README.md") for where in ran) and any(w.startswith("docs/usage.md") for w in ran)


def test_every_page_is_in_the_reading_order() -> None:
    assert sorted(reading_order()) == sorted(DOCUMENTS)


def test_every_snippet_that_does_not_run_says_why_and_the_tests_it_names_exist() -> None:
    for snippet in all_snippets():
        reason = snippet.not_run_reason
        if snippet.kind is None or reason is None:
            continue
        assert len(reason) >= 15, f"{snippet.where}: say why the snippet is not run"
        for path, names in re.findall(r"(tests/[\w/]+\.py)((?:(?:,| and)? ?::\w+)*)", reason):
            test_file = REPO_ROOT / path
            assert test_file.is_file(), f"{snippet.where}: {path} does not exist"
            defined = {node.name for node in ast.walk(ast.parse(test_file.read_text()))
                       if isinstance(node, ast.FunctionDef)}
            for name in re.findall(r"::(\w+)", names):
                assert name in defined, f"{snippet.where}: {path} has no {name}"


def test_spark_snippets_that_do_not_run_name_the_test_that_covers_them() -> None:
    for snippet in all_snippets():
        if snippet.kind == "python" and not snippet.runs and re.search(r"\bspark\.|\bdf\.", snippet.code):
            first = snippet.not_run_reason or ""
            needs_cluster = any(word in first for word in ("S3A", "S3 bucket", "cluster"))
            assert needs_cluster or "tests/" in first, f"{snippet.where}: name the Spark test that covers it"


def test_shell_snippets_that_run_only_call_the_documented_commands() -> None:
    for snippet in all_snippets():
        if snippet.kind == "shell" and snippet.runs:
            for command in shell_commands(snippet.code):
                assert command.startswith(SHELL_COMMANDS), f"{snippet.where}: {command!r} needs a '{NOT_RUN}' reason"


def test_json_snippets_parse() -> None:
    for snippet in all_snippets():
        if snippet.language == "json":
            json.loads(snippet.code)  # a typo here would be a policy or config that AWS refuses


# -- the facts match the code --------------------------------------------------------------


def _create_table_commands() -> list[list[str]]:
    commands: list[list[str]] = []
    for snippet in snippets(DOCS / "aws.md"):
        if snippet.kind == "shell":
            commands += [shlex.split(c) for c in shell_commands(snippet.code) if c.startswith("aws dynamodb")]
    return commands


def _values(words: list[str], option: str) -> list[str]:
    start = words.index(option) + 1
    values: list[str] = []
    for word in words[start:]:
        if word.startswith("--"):
            break
        values.append(word)
    return values


def _pairs(word: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in word.split(","))


def test_the_documented_create_table_commands_match_the_code() -> None:
    # Given the key schemas the code creates and checks
    expected = {"sleeper-transactions": TRANSACTIONS_KEYS, "sleeper-snapshots": SNAPSHOTS_KEYS,
                "sleeper-locks": lock_table.KEYS}
    ttl = {"sleeper-transactions": EXPIRES_AT, "sleeper-locks": lock_table.TTL_ATTRIBUTE}
    created: dict[str, tuple[tuple[str, str, str], ...]] = {}
    documented_ttl: dict[str, str] = {}

    # When the documented AWS CLI commands are read
    for words in _create_table_commands():
        name = _values(words, "--table-name")[0]
        if words[2] == "create-table":
            types = {p["AttributeName"]: p["AttributeType"] for p in map(_pairs, _values(words, "--attribute-definitions"))}
            keys = [_pairs(w) for w in _values(words, "--key-schema")]
            created[name] = tuple((k["AttributeName"], types[k["AttributeName"]], k["KeyType"]) for k in keys)
            assert _values(words, "--billing-mode") == ["PAY_PER_REQUEST"]
        elif words[2] == "update-time-to-live":
            documented_ttl[name] = _pairs(_values(words, "--time-to-live-specification")[0])["AttributeName"]

    # Then they create exactly those keys, and turn TTL on where the code does
    assert {name: sorted(keys) for name, keys in created.items()} == {n: sorted(k) for n, k in expected.items()}
    assert documented_ttl == ttl


# Which IAM action allows each S3 API operation the code may call.
S3_ACTIONS = {
    "GetObject": "s3:GetObject",
    "HeadObject": "s3:GetObject",
    "PutObject": "s3:PutObject",
    "DeleteObject": "s3:DeleteObject",
    "DeleteObjects": "s3:DeleteObject",
    "ListObjectsV2": "s3:ListBucket",
    "HeadBucket": "s3:ListBucket",
}
WAITERS = {"table_exists": "DescribeTable"}


def aws_operations_called() -> dict[str, set[str]]:
    """The botocore operations named in the modules that import boto3 or botocore, by service."""
    session = botocore.session.get_session()
    by_name = {service: {xform_name(op): op for op in session.get_service_model(service).operation_names}
               for service in ("s3", "dynamodb")}
    called: dict[str, set[str]] = {"s3": set(), "dynamodb": set()}
    for module in (REPO_ROOT / "sleeper_spark").rglob("*.py"):
        source = module.read_text()
        if "botocore" not in source and "boto3" not in source:
            continue
        names = set(re.findall(r"\.([a-z][a-z0-9_]*)\(", source))
        # client methods handed to a pager rather than called in place (``self._client.query``)
        names |= set(re.findall(r"_client\.([a-z][a-z0-9_]*)\b", source))
        names |= set(re.findall(r"get_paginator\(\"(\w+)\"\)", source))
        for service, operations in by_name.items():
            called[service] |= {operations[name] for name in names if name in operations}
        for waiter in re.findall(r"get_waiter\(\"(\w+)\"\)", source):
            called["dynamodb"].add(WAITERS[waiter])
    return called


def documented_actions() -> set[str]:
    actions: set[str] = set()
    for snippet in snippets(DOCS / "aws.md"):
        if snippet.language == "json" and "Statement" in snippet.code:
            for statement in json.loads(snippet.code)["Statement"]:
                listed = statement["Action"]
                actions |= {listed} if isinstance(listed, str) else set(listed)
    return actions


def test_the_documented_iam_policy_allows_exactly_what_the_code_calls() -> None:
    called = aws_operations_called()
    unknown = called["s3"] - set(S3_ACTIONS)
    assert not unknown, f"map these S3 operations to IAM actions here and in docs/aws.md: {unknown}"
    needed = {S3_ACTIONS[op] for op in called["s3"]} | {f"dynamodb:{op}" for op in called["dynamodb"]}
    assert documented_actions() == needed


@dataclass(frozen=True)
class OptionRow:
    """One row of an option table in the docs: the option, where it applies, its default."""

    name: str
    scopes: frozenset[str] | None  # None where the table has no "applies to" column
    default: str


def option_rows(document: Path) -> list[OptionRow]:
    """The rows of every table in ``document`` whose header starts ``| option |``."""
    rows: list[OptionRow] = []
    header: list[str] | None = None
    for line in document.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            header = None
        elif cells[0] == "option":
            header = cells
        elif header is not None and not set(cells[0]) <= {"-", " "}:
            row = dict(zip(header, cells, strict=False))
            scopes = frozenset(s.strip() for s in row["applies to"].split(",")) if "applies to" in row else None
            for name in re.findall(r"`([^`]+)`", row["option"]):
                rows.append(OptionRow(name, scopes, row["default"]))
    return rows


def _default_matches(spec: OptionSpec, documented: str) -> bool:
    # A value in backticks is read as the option would read it; else the words say which default.
    value = re.match(r"`([^`]*)`", documented)
    if value is not None:
        return not spec.required and spec.default is not None and spec.parse(value.group(1)) == spec.default
    return documented.split(":")[0].split(" ")[0] == spec.default_text


def test_the_options_table_lists_exactly_the_registered_options() -> None:
    # Given the options table of docs/usage.md and the registry
    rows = {row.name: row for row in option_rows(DOCS / "usage.md")}
    registered = {spec.name: spec for spec in OPTIONS}

    # Then every option is documented, and nothing that is not an option
    assert sorted(set(registered) - set(rows)) == [], "options missing from the table in docs/usage.md"
    assert sorted(set(rows) - set(registered)) == [], "docs/usage.md lists options that do not exist"
    # And each row says where the option applies and its default, as the registry does
    for name, spec in registered.items():
        assert rows[name].scopes == spec.scopes, f"docs/usage.md: where {name!r} applies"
        assert _default_matches(spec, rows[name].default), f"docs/usage.md: the default of {name!r}"


def test_other_pages_option_tables_name_registered_options_with_their_defaults() -> None:
    # Tables of command-line flags (--dest DIR) are the CLI's, checked by the CLI tests.
    for document in DOCUMENTS:
        if document == DOCS / "usage.md":
            continue
        for row in (row for row in option_rows(document) if not row.name.startswith("-")):
            spec = OPTIONS.find(row.name)
            assert spec is not None, f"{document.name} documents an option that does not exist: {row.name!r}"
            assert _default_matches(spec, row.default), f"{document.name}: the default of {row.name!r}"


def _cli_commands(group: typer.Typer, prefix: str = "") -> Iterator[str]:
    for command in group.registered_commands:
        yield prefix + (command.name or "")
    for sub in group.registered_groups:
        assert sub.typer_instance is not None
        yield from _cli_commands(sub.typer_instance, f"{prefix}{sub.name} ")


def test_every_cli_command_is_in_the_reference() -> None:
    usage = (DOCS / "usage.md").read_text()
    reference = usage[usage.index("## The `sleeper-spark` command"):]
    missing = [name for name in _cli_commands(app) if f"| `{name}" not in reference]
    assert not missing, f"docs/usage.md has no row for {missing}"


def test_every_error_is_explained() -> None:
    troubleshooting = (DOCS / "troubleshooting.md").read_text()
    errors = [name for name in ss.__all__
              if isinstance(getattr(ss, name), type) and issubclass(getattr(ss, name), ss.SleeperSparkError)
              and name != "SleeperSparkError"]
    missing = [name for name in errors if f"## `{name}`" not in troubleshooting]
    assert not missing, f"docs/troubleshooting.md has no section for {missing}"


# -- the pages hang together ---------------------------------------------------------------


def _nav_files() -> set[str]:
    return set(re.findall(r":\s*([\w/.-]+\.md)\s*$", (REPO_ROOT / "mkdocs.yml").read_text(), re.MULTILINE))


def test_mkdocs_nav_lists_every_page() -> None:
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    nav = _nav_files()
    assert pages == nav, f"pages missing from mkdocs.yml: {pages - nav}; missing pages it names: {nav - pages}"


def slug(heading: str) -> str:
    """The anchor MkDocs gives a heading (Python-Markdown's toc slugify)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(document: Path) -> set[str]:
    inside_fence = False
    anchors: set[str] = set()
    for line in document.read_text().splitlines():
        if _FENCE.match(line) or line.strip() == "```":
            inside_fence = not inside_fence
        elif not inside_fence and line.startswith("#"):
            anchors.add(slug(line.lstrip("#").strip()))
    return anchors


def test_links_between_pages_resolve() -> None:
    for document in DOCUMENTS:
        text = re.sub(r"```.*?```", "", document.read_text(), flags=re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if "://" in target:
                continue
            path, _, anchor = target.partition("#")
            linked = (document.parent / path).resolve() if path else document
            assert linked.exists(), f"{document.relative_to(REPO_ROOT)} links to missing {target}"
            if anchor and linked.suffix == ".md":
                assert anchor in _anchors(linked), f"{document.relative_to(REPO_ROOT)}: no heading for {target}"


# -- the extractor itself ------------------------------------------------------------------


def test_snippets_are_found_with_their_line_and_indentation_removed(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nprint(1)\n```\n\n- item\n\n  ```bash\n  # not run: needs a cluster\n"
                    "  spark-submit job.py\n  ```\n\n<!-- not run: installs things -->\n```bash\nbash x.sh\n```\n")

    found = snippets(page)

    assert [(s.line, s.language, s.runs) for s in found] == [(3, "python", True), (9, "bash", False),
                                                             (15, "bash", False)]
    assert [s.not_run_reason for s in found] == [None, "needs a cluster", "installs things"]
    assert found[1].code == "# not run: needs a cluster\nspark-submit job.py\n"
    assert shell_commands("a \\\n  --b c\n# comment\n\nd\n") == ["a --b c", "d"]
