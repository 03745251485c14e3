#!/bin/sh
# The first start initializes $PGDATA as the official image does (superuser
# $POSTGRES_USER with $POSTGRES_PASSWORD, database $POSTGRES_DB); every
# start then runs the server as user postgres, listening on all addresses.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
[ -n "${POSTGRES_PASSWORD:-}" ] || { echo "entrypoint: POSTGRES_PASSWORD is required" >&2; exit 1; }
as_postgres() { setpriv --reuid postgres --regid postgres --init-groups -- "$@"; }
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 0700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    as_postgres createdb -U "$POSTGRES_USER" "$POSTGRES_DB"
  fi
  as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "entrypoint: initialized $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi
[ "$1" = postgres ] && shift && set -- postgres -c listen_addresses='*' "$@"
exec setpriv --reuid postgres --regid postgres --init-groups -- "$@"
