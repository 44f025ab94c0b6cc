#!/usr/bin/env bash
# Runs the core unit tests (models, state, data files, commit loop: no servers, no Spark) on the
# lowest versions of pyarrow, pydantic, tenacity and boto3 that pyproject.toml declares
# (scripts/floors.txt), in a venv of their own (.venv-floors), so that the declared floors are
# versions a test runs on.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
python="${PYTHON:-python3}"
venv=.venv-floors
stamp="${venv}/.installed"
if [ ! -x "${venv}/bin/python" ]; then
    "${python}" -m venv "${venv}"
fi
if [ ! -f "${stamp}" ] || [ scripts/floors.txt -nt "${stamp}" ] || [ pyproject.toml -nt "${stamp}" ]; then
    "${venv}/bin/python" -m pip install --quiet --upgrade pip
    "${venv}/bin/python" -m pip install --quiet -r scripts/floors.txt "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
    touch "${stamp}"
fi
# The package from the checkout, on top of the pinned floors (its own dependency ranges are not resolved again).
PYTHONPATH="${repo_root}" exec "${venv}/bin/python" -m pytest -q -p no:cacheprovider \
    tests/models tests/state tests/datafiles tests/commit
