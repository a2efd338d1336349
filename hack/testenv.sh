#!/usr/bin/env bash
# Builds the Kubernetes test environment from Go modules, with the Go on this machine:
#   etcd, kube-apiserver, kube-scheduler, kube-controller-manager (service accounts, garbage
#   collection), kubectl, kwok and helm, into .cache/testenv/bin, with compose-config (ours, in
#   hack/compose-config: compose.yaml as Docker Compose loads it); and copies the CRDs the Helm
#   chart's objects need (CloudNativePG, external-secrets, the Prometheus operator, Kyverno)
#   from the Go modules that ship them into .cache/testenv/crds.
# And what the real node runs (gshare.devnode): kubelet, rancher's local-path-provisioner,
#   kube-router (for its network policy controller), and our stand-ins for the GPU device
#   plugin and the pause image's program (hack/node-standins).
# Idempotent: a second run with the same versions does nothing. Prints the binary folder.
set -euo pipefail

K8S_VERSION=v1.37.2     # k8s.io/kubernetes; its staging modules are published as v0.37.2
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.7.3     # an etcd release this Kubernetes release supports
KWOK_VERSION=v0.8.0
LOCAL_PATH_VERSION=v0.0.30                  # github.com/rancher/local-path-provisioner
KUBE_ROUTER_VERSION=v2.1.0                  # github.com/cloudnativelabs/kube-router/v2
HELM_VERSION=v3.22.0    # helm.sh/helm/v3; built against client-go v0.37, so Kubernetes 1.37
# module@version path-inside-the-module, one CRD per line
CRDS="
github.com/cloudnative-pg/cloudnative-pg@v1.27.0 config/crd/bases/postgresql.cnpg.io_clusters.yaml
github.com/cloudnative-pg/cloudnative-pg@v1.27.0 config/crd/bases/postgresql.cnpg.io_scheduledbackups.yaml
github.com/external-secrets/external-secrets@v1.3.2 config/crds/bases/external-secrets.io_externalsecrets.yaml
github.com/external-secrets/external-secrets@v1.3.2 config/crds/bases/external-secrets.io_secretstores.yaml
github.com/external-secrets/external-secrets@v1.3.2 config/crds/bases/external-secrets.io_clustersecretstores.yaml
github.com/prometheus-operator/prometheus-operator@v0.85.0 example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml
github.com/kyverno/kyverno@v1.19.1 config/crds/policies.kyverno.io/policies.kyverno.io_imagevalidatingpolicies.yaml
"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${GSHARE_TESTENV_CACHE:-$ROOT/.cache/testenv}"
BIN="$CACHE/bin"
STAMP="$BIN/.versions"
WANT="kubernetes=$K8S_VERSION etcd=$ETCD_VERSION kwok=$KWOK_VERSION with-controller-manager"

command -v go >/dev/null || { echo "testenv: Go is needed to build the test cluster (https://go.dev/dl)" >&2; exit 2; }
mkdir -p "$BIN" "$CACHE/build"
export CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false -trimpath"
started=$(date +%s)

# helm, with the version and Kubernetes version its own Makefile stamps in (without them it
# reports no version and checks charts against Kubernetes 1.20).
if [[ ! -f "$BIN/.helm" || "$(cat "$BIN/.helm")" != "$HELM_VERSION" ]]; then
  echo "testenv: building helm $HELM_VERSION" >&2
  p=helm.sh/helm/v3
  GOBIN="$BIN" go install -ldflags "-s -w -X $p/internal/version.version=$HELM_VERSION \
    -X $p/internal/version.metadata= -X $p/pkg/lint/rules.k8sVersionMajor=1 \
    -X $p/pkg/lint/rules.k8sVersionMinor=37 -X $p/pkg/chartutil.k8sVersionMajor=1 \
    -X $p/pkg/chartutil.k8sVersionMinor=37" "$p/cmd/helm@$HELM_VERSION"
  echo "$HELM_VERSION" > "$BIN/.helm"
fi

# The CRDs, copied out of the module cache (read-only there).
if [[ ! -f "$CACHE/crds/.list" || "$(cat "$CACHE/crds/.list")" != "$(echo "$CRDS")" ]]; then
  mkdir -p "$CACHE/crds"
  while read -r module path; do
    [[ -n "$module" ]] || continue
    dir=$(go mod download -json "$module" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    install -m 0644 "$dir/$path" "$CACHE/crds/$(basename "$path")"
  done <<< "$CRDS"
  echo "$CRDS" > "$CACHE/crds/.list"
fi

# compose-config: compose.yaml loaded as Docker Compose v2 loads it (hack/compose-config), built
# again when its source changes.
compose_id=$(cat "$ROOT"/hack/compose-config/{go.mod,go.sum,main.go} | sha256sum | cut -c1-16)
if [[ ! -f "$BIN/.compose-config" || "$(cat "$BIN/.compose-config")" != "$compose_id" ]]; then
  echo "testenv: building compose-config" >&2
  (cd "$ROOT/hack/compose-config" && go build -o "$BIN/compose-config" .)
  echo "$compose_id" > "$BIN/.compose-config"
fi

# Kubernetes: a small module of ours requires k8s.io/kubernetes and replaces each staging module
# (k8s.io/api, k8s.io/apiserver, ...) by its published version of the same release.
k8s="$CACHE/build/kubernetes"
kubernetes_module() {
  mkdir -p "$k8s"
  local gomod_file
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
}

if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$WANT" ]]; then
  kubernetes_module
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
fi

# The real node's programs, built again when a version or the stand-ins' source changes.
standins_id=$(cd "$ROOT/hack/node-standins" && find . -type f | sort | xargs cat | sha256sum | cut -c1-16)
NODE_WANT="kubelet=$K8S_VERSION local-path=$LOCAL_PATH_VERSION kube-router=$KUBE_ROUTER_VERSION standins=$standins_id"
if [[ ! -f "$BIN/.node" || "$(cat "$BIN/.node")" != "$NODE_WANT" ]]; then
  kubernetes_module
  echo "testenv: building kubelet $K8S_VERSION" >&2
  (cd "$k8s" && go build -o "$BIN/kubelet" k8s.io/kubernetes/cmd/kubelet)
  echo "testenv: building local-path-provisioner $LOCAL_PATH_VERSION" >&2
  GOBIN="$BIN" go install "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION"
  echo "testenv: building kube-router $KUBE_ROUTER_VERSION" >&2
  router="$CACHE/build/kube-router"
  mkdir -p "$router"
  printf 'module gshare.local/testenv/kuberouter\n\ngo 1.24\n\nrequire github.com/cloudnativelabs/kube-router/v2 %s\n' \
    "$KUBE_ROUTER_VERSION" > "$router/go.mod"
  (cd "$router" && go build -o "$BIN/kube-router" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router)
  echo "testenv: building the node stand-ins" >&2
  (cd "$ROOT/hack/node-standins" && go build -o "$BIN/" ./cmd/...)
  echo "$NODE_WANT" > "$BIN/.node"
fi

echo "testenv: ready in $(( $(date +%s) - started ))s" >&2
echo "$BIN"
