#!/usr/bin/env bash
# The Compose path (compose.yaml) with podman-compose, from Debian's packages:
#   hack/compose.sh up      build the images that are missing, write .env once, start; safe twice
#   hack/compose.sh smoke   wait until the API reports healthy and ready
#   hack/compose.sh stop    stop and remove the containers, keeping the volumes (the data)
#   hack/compose.sh down    stop and remove the containers and the volumes
# GSHARE_COMPOSE_ENV names another settings file than .env (the tests use their own), and
# GSHARE_COMPOSE_PROJECT another project name than gshare, so that runs do not meet.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/engine.sh
source "$ROOT/hack/engine.sh"
ensure_engine
cd "$ROOT"

ENV_FILE="${GSHARE_COMPOSE_ENV:-$ROOT/.env}"
PROJECT="${GSHARE_COMPOSE_PROJECT:-gshare}"
say() { echo "compose: $*" >&2; }
compose() { podman-compose --project-name "$PROJECT" --file "$ROOT/compose.yaml" "$@"; }

# .env from .env.example, with new random passwords, the first time (and the address and port
# given in the environment, if any).
write_env() {
  [[ -f $ENV_FILE ]] && return
  if [[ ${GSHARE_COMPOSE_ADDRESS:-} =~ [^0-9A-Fa-f.:] || ${GSHARE_COMPOSE_PORT:-} =~ [^0-9] ]]; then
    say "GSHARE_COMPOSE_ADDRESS and GSHARE_COMPOSE_PORT must be an IP address and a port number"
    exit 2
  fi
  local db admin
  db=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
  admin=$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')
  sed -e "s|^POSTGRES_PASSWORD=.*|POSTGRES_PASSWORD=$db|" \
    -e "s|^GSHARE_BOOTSTRAP_ADMIN_PASSWORD=.*|GSHARE_BOOTSTRAP_ADMIN_PASSWORD=$admin|" \
    -e "s|^GSHARE_COMPOSE_ADDRESS=.*|GSHARE_COMPOSE_ADDRESS=${GSHARE_COMPOSE_ADDRESS:-127.0.0.1}|" \
    -e "s|^GSHARE_COMPOSE_PORT=.*|GSHARE_COMPOSE_PORT=${GSHARE_COMPOSE_PORT:-8000}|" \
    "$ROOT/.env.example" >"$ENV_FILE.part"
  chmod 0600 "$ENV_FILE.part" && mv "$ENV_FILE.part" "$ENV_FILE"
  say "wrote $ENV_FILE with new passwords; the first admin signs in as" \
    "$(sed -n 's/^GSHARE_BOOTSTRAP_ADMIN_EMAIL=//p' "$ENV_FILE") with the password in it"
}

read_env() {
  set -a
  # shellcheck disable=SC1090
  source "$ENV_FILE"
  set +a
  ADDRESS="${GSHARE_COMPOSE_ADDRESS:-127.0.0.1}"
  PORT="${GSHARE_COMPOSE_PORT:-8000}"
}

# Reads the settings file, refusing in one line what would fail later in a container's log.
load_env() {
  if [[ ! -f $ENV_FILE ]]; then
    say "no $ENV_FILE yet: make compose-up writes it"
    exit 2
  fi
  read_env
  if ! python3 -c 'import ipaddress, sys; ipaddress.ip_address(sys.argv[1])' "$ADDRESS" 2>/dev/null; then
    say "GSHARE_COMPOSE_ADDRESS in $ENV_FILE must be an IP address of this machine, not '$ADDRESS'"
    exit 2
  fi
  if ! [[ $PORT =~ ^[0-9]{1,5}$ ]] || ((10#$PORT < 1 || 10#$PORT > 65535)); then
    say "GSHARE_COMPOSE_PORT in $ENV_FILE must be a port number (1 to 65535), not '$PORT'"
    exit 2
  fi
  if ! [[ ${POSTGRES_PASSWORD:-} =~ ^[A-Za-z0-9_-]{12,}$ ]]; then
    say "POSTGRES_PASSWORD in $ENV_FILE must be 12 or more letters, digits, - or _" \
      "(it is part of the database URL)"
    exit 2
  fi
  if [[ -z ${GSHARE_BOOTSTRAP_ADMIN_PASSWORD:-} || $GSHARE_BOOTSTRAP_ADMIN_PASSWORD == change-me ]]; then
    say "GSHARE_BOOTSTRAP_ADMIN_PASSWORD in $ENV_FILE must be set, and not to the example's"
    exit 2
  fi
}

running() {
  [[ -n "$(podman ps --quiet --filter "label=io.podman.compose.project=$PROJECT" \
    --filter "label=com.docker.compose.service=$1" --filter status=running)" ]]
}

up() {
  write_env
  load_env
  # A port another program holds is said plainly; the API of this project holding it is fine.
  if ! running api && ! python3 - "$ADDRESS" "$PORT" <<'EOF'; then
import socket, sys
with socket.socket() as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((sys.argv[1], int(sys.argv[2])))
    except OSError:
        sys.exit(1)
EOF
    say "port $PORT on $ADDRESS is taken by another program: stop it, or set" \
      "GSHARE_COMPOSE_PORT in $ENV_FILE"
    exit 1
  fi
  local missing=()
  for name in gshare postgres; do
    podman image exists "$PREFIX/$name:$TAG" ||
      missing+=("$name")
  done
  ((${#missing[@]} == 0)) || bash "$ROOT/hack/images.sh" "${missing[@]}"
  # podman-compose reports on stderr what it looked for and did not find yet (the volumes of a
  # first start, systemd for health checks); shown only when starting fails.
  local said
  if ! said=$(compose up --detach 2>&1); then
    echo "$said" >&2
    say "starting failed; the lines above say why"
    exit 1
  fi
  say "started; the console will be at http://$ADDRESS:$PORT (make smoke waits for it)"
}

# Polls until the API answers /healthz and /readyz with 200, or says what is wrong: the
# migrations' failure (a weak first-admin password, say) as soon as they exit with it.
smoke() {
  load_env
  python3 - "http://$ADDRESS:$PORT" "${GSHARE_SMOKE_SECONDS:-180}" "${PROJECT}_migrate_1" <<'EOF'
import subprocess, sys, time, urllib.error, urllib.request

base, limit, migrate = sys.argv[1], float(sys.argv[2]), sys.argv[3]


def migrations_failed():
    state = subprocess.run(
        ["podman", "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", migrate],
        capture_output=True, text=True,
    ).stdout.split()
    if state[:1] != ["exited"] or state[1:] == ["0"]:
        return None
    logs = subprocess.run(["podman", "logs", "--tail", "5", migrate], capture_output=True, text=True)
    return (logs.stdout + logs.stderr).strip()


deadline, last = time.monotonic() + limit, "no answer yet"
while time.monotonic() < deadline:
    try:
        for path in ("/healthz", "/readyz"):
            with urllib.request.urlopen(base + path, timeout=5) as answer:
                answer.read()
        print(f"smoke: {base} is healthy and ready")
        sys.exit(0)
    except urllib.error.HTTPError as exc:
        last = f"{exc.url} answered {exc.code}: {exc.read()[:200].decode(errors='replace')}"
    except OSError as exc:
        last = str(exc)
    failure = migrations_failed()
    if failure is not None:
        print(f"{failure}\nsmoke: the migrations failed (their last lines are above)", file=sys.stderr)
        sys.exit(1)
    time.sleep(1)
print(f"smoke: {base} not ready after {limit:.0f} s ({last}); see podman logs", file=sys.stderr)
sys.exit(1)
EOF
}

case "${1:-}" in
up) up ;;
smoke) smoke ;;
stop)
  load_env
  compose down >/dev/null
  say "stopped; the data are kept in the volumes"
  ;;
down)
  [[ -f $ENV_FILE ]] && read_env
  # Volumes by name too, as podman-compose keeps those of containers it did not start.
  POSTGRES_PASSWORD="${POSTGRES_PASSWORD:-x}" GSHARE_BOOTSTRAP_ADMIN_PASSWORD="${GSHARE_BOOTSTRAP_ADMIN_PASSWORD:-x}" \
    compose down --volumes >/dev/null 2>&1 || true
  for volume in postgres-data gshare-data; do
    podman volume rm --force "${PROJECT}_$volume" >/dev/null 2>&1 || true
  done
  say "stopped and dropped the volumes"
  ;;
*)
  echo "usage: hack/compose.sh up|smoke|stop|down" >&2
  exit 2
  ;;
esac
