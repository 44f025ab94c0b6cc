#!/usr/bin/env bash
# Creates .venv with the project installed (editable), with the extras named as arguments,
# and Java when Spark needs it and it is missing. Safe to run again.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
extras="${1:-}"

log() { printf 'bootstrap: %s\n' "$*" >&2; }

# The test extras also build the jar (scripts/build-jar.sh), which needs javac, not only java.
java_package=openjdk-17-jre-headless
java_command=java
if [ "${extras}" = "test" ]; then
    java_package=openjdk-17-jdk-headless
    java_command=javac
fi
if ! command -v "${java_command}" >/dev/null 2>&1; then
    log "${java_command} not found; installing ${java_package} (Spark and DynamoDB Local need Java)"
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    ${sudo_cmd} apt-get update
    DEBIAN_FRONTEND=noninteractive ${sudo_cmd} apt-get install -y --no-install-recommends "${java_package}"
fi

python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    log "creating .venv with $(${python} --version)"
    "${python}" -m venv .venv
fi
stamp=".venv/.installed-${extras:-base}"
if [ ! -f "${stamp}" ] || [ pyproject.toml -nt "${stamp}" ]; then
    log "installing sleeper-spark${extras:+[${extras}]} into .venv"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".${extras:+[${extras}]}"
    touch "${stamp}"
fi
