#!/usr/bin/env bash
# `make test-docker`: the console's and the backend's tests in throw-away containers
# (the control plane's Dockerfile's test targets), with no network but their own loopback and nothing mounted
# from this machine, so nothing they write stays. The Kubernetes, image and browser tests need
# the test environment, the engine or Chromium on the host: `make test` runs them.
#   hack/test-docker.sh                  both
#   hack/test-docker.sh console          the console's only
#   hack/test-docker.sh backend [ARGS]   the backend's only, ARGS to pytest in place of its own
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/engine.sh
source "$ROOT/hack/engine.sh"
ensure_engine

which="${1:-all}"
[[ $# -gt 0 ]] && shift
# Throw-away, offline, unprivileged: nothing they do can reach this machine or the network.
run() {
  podman run --rm --network none --cap-drop ALL --security-opt no-new-privileges \
    --tmpfs /tmp:rw,mode=1777 "$@"
}

case "$which" in
all | console | backend) ;;
*)
  echo "usage: hack/test-docker.sh [all|console|backend [pytest arguments]]" >&2
  exit 2
  ;;
esac
if [[ $which != backend ]]; then
  bash "$ROOT/hack/images.sh" test-console
  echo "test-docker: the console's tests" >&2
  run "$PREFIX/test-console:$TAG"
fi
if [[ $which != console ]]; then
  bash "$ROOT/hack/images.sh" test-backend
  echo "test-docker: the backend's tests" >&2
  if (($#)); then
    run "$PREFIX/test-backend:$TAG" /opt/test/bin/pytest -p no:cacheprovider "$@"
  else
    run "$PREFIX/test-backend:$TAG"
  fi
fi
