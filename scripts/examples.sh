#!/usr/bin/env bash
# Runs one of examples/ with everything it needs:
#
#     bash scripts/examples.sh NAME [ARGS...]      e.g. bash scripts/examples.sh spark_job /tmp/wh
#     bash scripts/examples.sh                     lists the examples
#
# The first run creates .venv with the project and its `examples` extra (PySpark, moto) and
# installs Java if it is missing; later runs start the example at once. Afterwards
# `.venv/bin/python examples/NAME.py` works too.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${repo_root}/.venv/bin/python"

if [ "$#" -eq 0 ]; then
    printf 'usage: bash scripts/examples.sh NAME [ARGS...]; the examples:\n' >&2
    for example in "${repo_root}"/examples/*.py; do
        printf '  %s\n' "$(basename "${example}" .py)" >&2
    done
    exit 2
fi
name="$(basename "${1}" .py)"
shift
example="${repo_root}/examples/${name}.py"
if [ ! -f "${example}" ]; then
    printf 'examples.sh: there is no examples/%s.py; run it without arguments for the list\n' "${name}" >&2
    exit 2
fi

# Installing is skipped when .venv already has what the examples import (a test setup has it too).
# Found, not imported: importing moto's server and PySpark took a second before every example.
if ! command -v java >/dev/null 2>&1 || ! "${python}" -c "import importlib.util as u, sys
sys.exit(0 if all(u.find_spec(m) for m in ('moto', 'flask', 'flask_cors', 'pyspark')) else 1)" >/dev/null 2>&1; then
    bash "${repo_root}/scripts/bootstrap.sh" examples
fi

# Spark starts its Python workers with PYSPARK_PYTHON: it must be the interpreter that has
# sleeper_spark installed, not whichever python3 is first on PATH.
export PYSPARK_PYTHON="${python}"
exec "${python}" "${example}" "$@"
