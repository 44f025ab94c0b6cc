#!/usr/bin/env bash
# Runs the core unit tests (models, state, data files, commit loop: no servers, no Spark) and the
# command line's tests (tests/cli) on the lowest versions of pyarrow, pydantic, tenacity, boto3,
# typer and rich that pyproject.toml declares (scripts/floors.txt), in a venv of their own
# (.venv-floors), so that the declared floors are versions a test runs on.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
python="${PYTHON:-python3}"
venv=.venv-floors
stamp="${venv}/.installed"
if [ ! -x "${venv}/bin/python" ]; then
    "${python}" -m venv "${venv}"
fi
if [ ! -f "${stamp}" ] || [ scripts/floors.txt -nt "${stamp}" ] || [ pyproject.toml -nt "${stamp}" ] \
        || [ scripts/test-floors.sh -nt "${stamp}" ]; then
    "${venv}/bin/python" -m pip install --quiet --upgrade pip
    "${venv}/bin/python" -m pip install --quiet -r scripts/floors.txt "pytest>=8" "pytest-timeout>=2.3" "pytest-xdist>=3.5" \
        "hypothesis>=6.100"
    touch "${stamp}"
fi
# The package from the checkout, on top of the pinned floors (its own dependency ranges are not
# resolved again), and the `sleeper-spark` command the CLI tests run, as installing the package
# makes it (an entry point of pyproject.toml), finding the checkout without PYTHONPATH.
cat > "${venv}/bin/sleeper-spark" <<SCRIPT
#!${repo_root}/${venv}/bin/python
import sys
sys.path.insert(0, "${repo_root}")
from sleeper_spark.cli.main import main
sys.exit(main())
SCRIPT
chmod +x "${venv}/bin/sleeper-spark"
# Two workers: the CLI tests mostly wait for the command's processes. Left out: the one CLI test
# that needs moto (an AWS catalog); the full suite runs it.
PYTHONPATH="${repo_root}" exec "${venv}/bin/python" -m pytest -q -p no:cacheprovider -n 2 \
    tests/models tests/state tests/datafiles tests/commit tests/cli \
    --deselect tests/cli/test_hints.py::test_an_aws_catalog_before_init_names_the_init_command
