#!/usr/bin/env bash
# Compiles jars/src/**/*.java against the jars bundled with the installed pyspark and writes
# sleeper_spark/jars/sleeper-spark-<version>.jar, which ships inside the Python package.
# Needs a JDK (javac) 17 or newer.
# Usage: scripts/build-jar.sh [--if-stale] [python]   (default python: .venv/bin/python)
#   --if-stale: do nothing when the jar exists and is newer than every source file.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
if_stale=false
if [ "${1:-}" = "--if-stale" ]; then
    if_stale=true
    shift
fi
python="${1:-.venv/bin/python}"

pyspark_jars="$("${python}" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
version="$("${python}" -c 'import runpy; print(runpy.run_path("sleeper_spark/version.py")["__version__"])')"
out_dir="sleeper_spark/jars"
jar="${out_dir}/sleeper-spark-${version}.jar"
if ${if_stale} && [ -f "${jar}" ] && [ -z "$(find jars/src scripts/build-jar.sh -newer "${jar}" -print -quit)" ]; then
    exit 0
fi

if ! command -v javac >/dev/null 2>&1; then
    echo "build-jar: javac not found; install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)" >&2
    exit 1
fi
build="$(mktemp -d)"
trap 'rm -rf "${build}"' EXIT
mapfile -t sources < <(find jars/src -name '*.java' | sort)
javac --release 17 -Xlint:all,-serial,-processing,-options,-path,-classfile -Werror -cp "${pyspark_jars}/*" -d "${build}/classes" "${sources[@]}"
printf 'Implementation-Title: sleeper-spark\nImplementation-Version: %s\n' "${version}" > "${build}/MANIFEST.MF"
mkdir -p "${out_dir}"
rm -f "${out_dir}"/sleeper-spark-*.jar
# A fixed timestamp keeps the jar byte-identical for identical sources.
jar --create --file "${jar}" --manifest "${build}/MANIFEST.MF" --date 2024-01-01T00:00:00Z -C "${build}/classes" .
echo "build-jar: wrote ${jar}" >&2
