#!/bin/sh
# Initializes the data directory on first start, then runs the server in the foreground, its
# socket in /tmp. The database superuser (postgres) signs in only through the socket, as the
# postgres user of this container; POSTGRES_USER owns POSTGRES_DB, signs in with
# POSTGRES_PASSWORD, and is not a superuser.
set -eu
: "${POSTGRES_USER:=gshare}"
: "${POSTGRES_DB:=gshare}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
  echo "gshare-postgres: POSTGRES_PASSWORD is required (compose.yaml reads it from .env)" >&2
  exit 2
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  initdb --username=postgres --auth-local=peer --auth-host=scram-sha-256 --encoding=UTF8 \
    --locale=C.UTF-8 >/dev/null
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w start >/dev/null
  # psql quotes the name and password itself (:"user", :'password'), whatever they hold.
  psql --host=/tmp --username=postgres --dbname=postgres --quiet --set ON_ERROR_STOP=1 \
    --set user="$POSTGRES_USER" --set password="$POSTGRES_PASSWORD" --set db="$POSTGRES_DB" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"user";
SQL
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "gshare-postgres: initialized $PGDATA"
fi
exec postgres -c listen_addresses='*' -c unix_socket_directories=/tmp
