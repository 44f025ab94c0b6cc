#!/usr/bin/env bash
# Runs examples/quickstart.py on an embedded local warehouse: no AWS, no network at run time.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "${repo_root}/scripts/bootstrap.sh" ""
exec "${repo_root}/.venv/bin/python" "${repo_root}/examples/quickstart.py" "${1:-${repo_root}/warehouse}"
