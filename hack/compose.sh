#!/usr/bin/env bash
# The Compose path (compose.yaml) with podman-compose, from Debian's packages:
#   hack/compose.sh up      build the images that are missing, write .env once, start; safe twice
#   hack/compose.sh smoke   wait until the API reports healthy and ready
#   hack/compose.sh stop    stop and remove the containers, keeping the volumes (the data)
#   hack/compose.sh down    stop and remove the containers, their network and the volumes
# GSHARE_COMPOSE_ENV names another settings file than .env (the tests use their own), and
# GSHARE_COMPOSE_PROJECT another project name than gshare, so that runs do not meet.
#
# The settings file is read as Compose reads it (python-dotenv, which podman-compose uses), never
# run as shell. podman-compose reads the .env beside its compose file and lets it override the
# environment, so it runs on a private copy of compose.yaml beside a copy of the settings file,
# and reads nothing else.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/engine.sh
source "$ROOT/hack/engine.sh"
ensure_engine
cd "$ROOT"

ENV_FILE="${GSHARE_COMPOSE_ENV:-$ROOT/.env}"
PROJECT="${GSHARE_COMPOSE_PROJECT:-gshare}"
if ! [[ $PROJECT =~ ^[a-z0-9][a-z0-9_-]{0,62}$ ]]; then
  echo "compose: GSHARE_COMPOSE_PROJECT must be lower-case letters, digits, - and _" >&2
  exit 2
fi
WORK="$ROOT/.cache/compose/$PROJECT"
# podman-compose's own Python, which has python-dotenv.
ENV_PYTHON=$(sed -n '1s/^#! *//p' "$(command -v podman-compose)")
say() { echo "compose: $*" >&2; }
compose() { podman-compose --project-name "$PROJECT" --file "$WORK/compose.yaml" "$@"; }
SERVICES=(postgres migrate api worker)
container_of() { echo "${PROJECT}_$1_1"; }

# One compose.sh at a time on this machine: two `up`s would write two .env files.
mkdir -p "$ROOT/.cache/compose"
exec 8>"$ROOT/.cache/compose/.lock"
flock 8

# settings write|check: writes the settings file from .env.example with new random passwords
# (the first time; from Python, so no password is ever on a command line), or checks it and
# prints the address and port, refusing in one line what would fail later in a container.
settings() {
  "$ENV_PYTHON" - "$1" "$ENV_FILE" "$ROOT/.env.example" <<'EOF'
import ipaddress, os, re, secrets, sys, tempfile
from dotenv import dotenv_values

action, path, example = sys.argv[1:]


def refuse(message):
    print(f"compose: {message}", file=sys.stderr)
    sys.exit(2)


def check(values, where):
    try:
        ipaddress.IPv4Address(values.get("GSHARE_COMPOSE_ADDRESS") or "127.0.0.1")
    except ValueError:
        refuse(f"GSHARE_COMPOSE_ADDRESS in {where} must be an IPv4 address of this machine")
    port = values.get("GSHARE_COMPOSE_PORT") or "8000"
    if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        refuse(f"GSHARE_COMPOSE_PORT in {where} must be a port number (1 to 65535), not '{port}'")


if action == "write":
    if os.path.exists(path):
        sys.exit(0)
    given = {k: os.environ[k] for k in ("GSHARE_COMPOSE_ADDRESS", "GSHARE_COMPOSE_PORT") if k in os.environ}
    check(given, "the environment")
    replace = {
        "POSTGRES_PASSWORD": secrets.token_urlsafe(24),
        "GSHARE_BOOTSTRAP_ADMIN_PASSWORD": secrets.token_urlsafe(18),
        **given,
    }
    lines = []
    for line in open(example, encoding="utf-8").read().splitlines():
        name = line.split("=", 1)[0]
        lines.append(f"{name}={replace[name]}" if "=" in line and name in replace else line)
    folder = os.path.dirname(os.path.abspath(path))
    handle, part = tempfile.mkstemp(dir=folder, prefix=".env.", suffix=".part")  # 0600
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(part, path)
    email = dotenv_values(path).get("GSHARE_BOOTSTRAP_ADMIN_EMAIL")
    print(f"compose: wrote {path} with new passwords; the first admin signs in as {email} "
          "with the password in it", file=sys.stderr)
    sys.exit(0)

if not os.path.isfile(path):
    refuse(f"no {path} yet: make compose-up writes it")
values = dotenv_values(path)
check(values, path)
if not re.fullmatch(r"[A-Za-z0-9_-]{12,}", values.get("POSTGRES_PASSWORD") or ""):
    refuse(f"POSTGRES_PASSWORD in {path} must be 12 or more letters, digits, - or _ "
           "(it is part of the database URL)")
if (values.get("GSHARE_BOOTSTRAP_ADMIN_PASSWORD") or "change-me") == "change-me":
    refuse(f"GSHARE_BOOTSTRAP_ADMIN_PASSWORD in {path} must be set, and not to the example's")
print(values.get("GSHARE_COMPOSE_ADDRESS") or "127.0.0.1", values.get("GSHARE_COMPOSE_PORT") or "8000")
EOF
}

load_env() {
  local checked
  checked=$(settings check)
  read -r ADDRESS PORT <<<"$checked"
  install -d -m 0700 "$WORK"
  install -m 0644 "$ROOT/compose.yaml" "$WORK/compose.yaml"
  install -m 0600 "$ENV_FILE" "$WORK/.env"
}

# Whether the port is free on the address, or one line saying why it is not.
port_free() {
  "$ENV_PYTHON" - "$ADDRESS" "$PORT" "$ENV_FILE" <<'EOF'
import errno, socket, sys

address, port, where = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with socket.socket() as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((address, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            print(f"compose: port {port} on {address} is taken by another program: stop it, or "
                  f"set GSHARE_COMPOSE_PORT in {where}", file=sys.stderr)
        elif exc.errno == errno.EADDRNOTAVAIL:
            print(f"compose: {address} is not an address of this machine: set "
                  f"GSHARE_COMPOSE_ADDRESS in {where}", file=sys.stderr)
        else:
            print(f"compose: cannot listen on {address}:{port}: {exc.strerror}", file=sys.stderr)
        sys.exit(1)
EOF
}

state() { podman inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$(container_of "$1")" 2>/dev/null || true; }

up() {
  settings write
  load_env
  # The API of this project holding the port is fine (a second up); anything else is said.
  if [[ $(state api) != running* ]]; then
    port_free || exit 1
  fi
  local missing=()
  for name in gshare postgres; do
    podman image exists "$PREFIX/$name:$TAG" || missing+=("$name")
  done
  ((${#missing[@]} == 0)) || bash "$ROOT/hack/images.sh" "${missing[@]}"
  # podman-compose prints every command it runs, passwords included, and carries on when one
  # fails: its output stays in a private file, and each container's state says what happened.
  compose up --detach >"$WORK/up.log" 2>&1 || true
  local failed=() now
  for service in "${SERVICES[@]}"; do
    now=$(state "$service")
    case "$now" in
    running* | "exited 0") ;;
    exited*)
      podman logs --tail 5 "$(container_of "$service")" >&2 2>&1 || true
      failed+=("$service (exited with status ${now#exited })")
      ;;
    "") failed+=("$service (not created)") ;;
    *) failed+=("$service ($now)") ;;
    esac
  done
  if ((${#failed[@]})); then
    # podman's own errors, without podman-compose's lookups of volumes it is about to create.
    grep '^Error' "$WORK/up.log" | grep -v 'no such volume' | sort -u >&2 || true
    say "not started: ${failed[*]}; the lines above say why"
    exit 1
  fi
  say "started; the console will be at http://$ADDRESS:$PORT (make smoke waits for it)"
}

# Polls until the API answers /healthz and /readyz with 200, or says what is wrong: the
# migrations' failure (a weak first-admin password, say) as soon as they exit with it.
smoke() {
  load_env
  local limit="${GSHARE_SMOKE_SECONDS:-180}"
  if ! [[ $limit =~ ^[0-9]{1,5}$ ]]; then
    say "GSHARE_SMOKE_SECONDS must be a number of seconds, not '$limit'"
    exit 2
  fi
  "$ENV_PYTHON" - "http://$ADDRESS:$PORT" "$limit" "$(container_of migrate)" <<'EOF'
import subprocess, sys, time, urllib.error, urllib.request

base, limit, migrate = sys.argv[1], float(sys.argv[2]), sys.argv[3]
# Straight to the API: a proxy in the environment must not answer for it.
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


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
            with opener.open(base + path, timeout=5) as answer:
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

# Stops and removes the containers and their network (as `docker compose down` does), giving
# PostgreSQL time to shut down; with --volumes, the volumes too.
remove() {
  if [[ -f $WORK/compose.yaml ]]; then
    # Interpolation needs the passwords even to stop; the copy of the settings has them.
    POSTGRES_PASSWORD=- GSHARE_BOOTSTRAP_ADMIN_PASSWORD=- compose down --timeout 30 "$@" \
      >/dev/null 2>&1 || true
  fi
  for service in "${SERVICES[@]}"; do
    podman rm --force --time 30 "$(container_of "$service")" >/dev/null 2>&1 || true
  done
  podman network rm --force "${PROJECT}_default" >/dev/null 2>&1 || true
}

case "${1:-}" in
up) up ;;
smoke) smoke ;;
stop)
  remove
  say "stopped; the data are kept in the volumes"
  ;;
down)
  remove --volumes
  for volume in postgres-data gshare-data; do
    podman volume rm --force "${PROJECT}_$volume" >/dev/null 2>&1 || true
  done
  rm -rf "$WORK"
  say "stopped and dropped the volumes"
  ;;
*)
  echo "usage: hack/compose.sh up|smoke|stop|down" >&2
  exit 2
  ;;
esac
