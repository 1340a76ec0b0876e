#!/bin/sh
# Postgres from the pgserver wheel with the official postgres image's interface (see pgvector-lite.Dockerfile).
# First start (empty PGDATA): initdb as postgres with POSTGRES_USER as superuser and POSTGRES_PASSWORD for
# network connections (scram-sha-256; trust on the local socket), create POSTGRES_DB, run
# /docker-entrypoint-initdb.d/*.sql on a server that listens on no TCP port (so the healthcheck fails until
# initialisation is done). Every start: exec postgres as postgres, listening on all addresses.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}" "${PGDATA:=/var/lib/postgresql/data}"
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }
mkdir -p "$PGDATA"
chown postgres:postgres "$PGDATA"
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "pgvector-lite: POSTGRES_PASSWORD is not set; set it (as for the official postgres image)" >&2
        exit 2
    fi
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    chown postgres "$pwfile"
    as_pg initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --no-locale \
        --auth-local=trust --auth-host=scram-sha-256
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    as_pg pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -k /var/run/postgresql" start
    psql="psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U $POSTGRES_USER -q"
    if [ "$POSTGRES_DB" != "postgres" ]; then
        as_pg $psql -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\""
    fi
    for f in /docker-entrypoint-initdb.d/*.sql; do
        [ -e "$f" ] || continue
        echo "pgvector-lite: running $f"
        as_pg $psql -d "$POSTGRES_DB" -f "$f"
    done
    as_pg pg_ctl -D "$PGDATA" -m fast -w stop
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups -- postgres -D "$PGDATA" \
    -c listen_addresses='*' -k /var/run/postgresql "$@"
