#!/usr/bin/env bash
# Builds the Kubernetes test environment from Go modules, with the Go on this machine:
#   etcd, kube-apiserver, kube-scheduler, kube-controller-manager (service accounts, garbage
#   collection), kubectl and kwok, into .cache/testenv/bin.
# Idempotent: a second run with the same versions does nothing. Prints the binary folder.
set -euo pipefail

K8S_VERSION=v1.37.2     # k8s.io/kubernetes; its staging modules are published as v0.37.2
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.7.3     # an etcd release this Kubernetes release supports
KWOK_VERSION=v0.8.0

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${GSHARE_TESTENV_CACHE:-$ROOT/.cache/testenv}"
BIN="$CACHE/bin"
STAMP="$BIN/.versions"
WANT="kubernetes=$K8S_VERSION etcd=$ETCD_VERSION kwok=$KWOK_VERSION with-controller-manager"

command -v go >/dev/null || { echo "testenv: Go is needed to build the test cluster (https://go.dev/dl)" >&2; exit 2; }
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "$BIN"
  exit 0
fi
mkdir -p "$BIN" "$CACHE/build"
export CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false -trimpath"
started=$(date +%s)

# Kubernetes: a small module of ours requires k8s.io/kubernetes and replaces each staging module
# (k8s.io/api, k8s.io/apiserver, ...) by its published version of the same release.
k8s="$CACHE/build/kubernetes"
mkdir -p "$k8s"
gomod_file=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
  echo "module gshare.local/testenv/kubernetes"
  echo
  grep -m1 '^go ' "$gomod_file"
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  echo "replace ("
  grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$gomod_file" \
    | awk -v v="$STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
  echo ")"
} > "$k8s/go.mod"
for cmd in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
  echo "testenv: building $cmd $K8S_VERSION" >&2
  (cd "$k8s" && go build -o "$BIN/$cmd" "k8s.io/kubernetes/cmd/$cmd")
done

echo "testenv: building etcd $ETCD_VERSION" >&2
etcd="$CACHE/build/etcd"
mkdir -p "$etcd"
printf 'module gshare.local/testenv/etcd\n\ngo 1.25\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
  "$ETCD_VERSION" > "$etcd/go.mod"
(cd "$etcd" && go build -o "$BIN/etcd" go.etcd.io/etcd/server/v3)

echo "testenv: building kwok $KWOK_VERSION" >&2
GOBIN="$BIN" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"

echo "$WANT" > "$STAMP"
echo "testenv: built in $(( $(date +%s) - started ))s" >&2
echo "$BIN"
