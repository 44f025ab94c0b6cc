#!/usr/bin/env bash
# Compiles jars/src/**/*.java against the jars bundled with the installed pyspark and writes
# sleeper_spark/jars/sleeper-spark-<version>.jar, which ships inside the Python package.
#
# The jar is kept in the repository, so that every wheel, sdist and checkout carries it and
# installing needs no JDK. The build is reproducible (sorted sources, a fixed timestamp): after a
# change under jars/src, run this and commit the jar with the change.
#
# Needs a JDK (javac) 17 or newer.
# Usage: scripts/build-jar.sh [--check] [python]   (default python: .venv/bin/python)
#   --check: build into a temporary folder and fail unless the result is byte-identical to the
#            committed jar (CI runs this: the shipped jar is the one the sources make).
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
check=false
if [ "${1:-}" = "--check" ]; then
    check=true
    shift
fi
python="${1:-.venv/bin/python}"

pyspark_jars="$("${python}" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
version="$("${python}" -c 'import runpy; print(runpy.run_path("sleeper_spark/version.py")["__version__"])')"
out_dir="sleeper_spark/jars"
name="sleeper-spark-${version}.jar"

if ! command -v javac >/dev/null 2>&1; then
    echo "build-jar: javac not found; install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless)" >&2
    exit 1
fi
build="$(mktemp -d)"
trap 'rm -rf "${build}"' EXIT
mapfile -t sources < <(find jars/src -name '*.java' | LC_ALL=C sort)
javac --release 17 -Xlint:all,-serial,-processing,-options,-path,-classfile -Werror -cp "${pyspark_jars}/*" -d "${build}/classes" "${sources[@]}"
printf 'Implementation-Title: sleeper-spark\nImplementation-Version: %s\n' "${version}" > "${build}/MANIFEST.MF"
# jars/resources holds the service file through which Spark finds format("sleeper").
cp -R jars/resources/. "${build}/classes/"
# A fixed timestamp and entries in sorted order (not the file system's) keep the jar
# byte-identical for identical sources.
entries=()
while IFS= read -r class_file; do
    entries+=(-C "${build}/classes" "${class_file}")
done < <(cd "${build}/classes" && find . -type f | LC_ALL=C sort)
jar --create --file "${build}/${name}" --manifest "${build}/MANIFEST.MF" --date 2024-01-01T00:00:00Z "${entries[@]}"

if ${check}; then
    if ! cmp -s "${build}/${name}" "${out_dir}/${name}"; then
        echo "build-jar: ${out_dir}/${name} is not what jars/src builds to (or is missing);" \
             "run scripts/build-jar.sh and commit the jar" >&2
        exit 1
    fi
    echo "build-jar: ${out_dir}/${name} matches a fresh build of jars/src" >&2
    exit 0
fi
mkdir -p "${out_dir}"
rm -f "${out_dir}"/sleeper-spark-*.jar
cp "${build}/${name}" "${out_dir}/${name}"
echo "build-jar: wrote ${out_dir}/${name}" >&2
