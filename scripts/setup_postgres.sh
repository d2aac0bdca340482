#!/usr/bin/env bash
# Installs what the PostgreSQL side of the benchmarks needs
# (`strata bench smooth-scan postgres`, `strata bench tpch --with-postgres`,
# the ignored tests in crates/bench/src/postgres/): Debian's PostgreSQL 15
# server binaries under /usr/lib/postgresql/15/bin, and the unprivileged OS
# user `postgres` that the benchmark runs the server as when it runs as
# root (PostgreSQL refuses to run as root).
#
# The benchmark itself only looks for the binaries and starts a private
# cluster of its own (initdb, pg_ctl on a free port on 127.0.0.1); it never
# installs anything. Safe to run again: installed packages and an existing
# user are left as they are.
#
# Usage: sudo scripts/setup_postgres.sh   (or as root)
#   PG_MAJOR=16 scripts/setup_postgres.sh  another major version, where the
#                                          package exists
set -euo pipefail

major="${PG_MAJOR:-15}"
bin="/usr/lib/postgresql/$major/bin"
user=postgres

if [ "$(id -u)" -ne 0 ]; then
    echo "setup_postgres.sh: run as root (sudo $0)" >&2
    exit 1
fi

if [ -x "$bin/postgres" ] && [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ]; then
    echo "PostgreSQL $major is installed ($bin)"
else
    export DEBIAN_FRONTEND=noninteractive
    echo "installing postgresql-$major (apt-get)"
    # A stale package list is the usual reason for a failed install.
    if ! apt-get install -y -q "postgresql-$major"; then
        apt-get update -q
        apt-get install -y -q "postgresql-$major"
    fi
    if [ ! -x "$bin/postgres" ]; then
        echo "setup_postgres.sh: postgresql-$major installed but $bin/postgres is missing" >&2
        exit 1
    fi
fi

# Debian's package creates the user; make sure of it (a package installed
# elsewhere, or the user removed since).
if id -u "$user" >/dev/null 2>&1; then
    echo "OS user $user exists"
else
    echo "creating the OS user $user"
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$user"
fi

"$bin/postgres" --version
