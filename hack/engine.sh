# Sourced by hack/images.sh and hack/compose.sh: makes sure podman can run here, with the
# project's settings, or says in one line what to install.
# shellcheck shell=bash

ROOT="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export CONTAINERS_CONF="$ROOT/hack/containers.conf"
# The images' names: $PREFIX/<name>:$TAG (compose.yaml reads the same two variables).
PREFIX="${GSHARE_IMAGE_PREFIX:-localhost/gshare}"
TAG="${GSHARE_IMAGE_TAG:-dev}"
ENGINE_PACKAGES="podman runc debootstrap podman-compose"

# The tools missing from this machine, installed when root can (as `make e2e-deps` installs
# Chromium), else one line naming them.
ensure_engine() {
  local missing=()
  for tool in podman runc debootstrap podman-compose; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  if ((${#missing[@]})); then
    if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
      echo "engine: installing ${missing[*]} from Debian's packages" >&2
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $ENGINE_PACKAGES >/dev/null
    else
      echo "engine: ${missing[*]} missing; as root on Debian: apt-get install $ENGINE_PACKAGES" >&2
      exit 2
    fi
  fi
  if [[ $EUID -ne 0 ]]; then
    echo "engine: the images and Compose path run as root here (podman with runc, debootstrap); run as root" >&2
    exit 2
  fi
}
