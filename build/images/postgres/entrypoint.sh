#!/bin/sh
# Initializes the data directory on first start (a superuser with POSTGRES_PASSWORD, which every
# connection must give), then runs the server in the foreground, its socket in /tmp.
set -eu
: "${POSTGRES_USER:=gshare}"
: "${POSTGRES_DB:=gshare}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
  echo "gshare-postgres: POSTGRES_PASSWORD is required (compose.yaml reads it from .env)" >&2
  exit 2
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=scram-sha-256 \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    PGPASSWORD="$POSTGRES_PASSWORD" createdb --host=/tmp --username="$POSTGRES_USER" "$POSTGRES_DB"
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "gshare-postgres: initialized $PGDATA"
fi
exec postgres -c listen_addresses='*' -c unix_socket_directories=/tmp
