#!/usr/bin/env bash
# A real Kubernetes for the kubernetes backend's tests (a local cluster of emulated machines,
# tests/integration/k8s_cluster.py). Self-contained; idempotent; run as root.
#
#   - kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl
#     v1.34.4, built from the k8s.io/kubernetes module through the Go module proxy: a module of
#     ours requires k8s.io/kubernetes v1.34.4 and replaces each k8s.io/<staging> module (the
#     `=> ./staging/...` lines of its go.mod, which the module zip does not carry) by the
#     published v0.34.4; version stamped with -X k8s.io/component-base/version.gitVersion.
#   - flanneld v0.28.10 (github.com/flannel-io/flannel, Go module proxy) for the VXLAN CNI setup,
#     built without its Tencent Cloud VPC backend, whose SDK module the proxy does not serve.
#   - the pause image, built from the pause.c that ships in the k8s.io/kubernetes module
#     (gcc -static), as a Docker-format image archive for `ctr images import`.
#   - Debian: containerd 1.6.20 and runc 1.1.5 (the CRI runtime), etcd-server 3.4.23 (the
#     apiserver's store: packaged and needs no build; kine would add a build and a SQL layer
#     between the apiserver and its store that real clusters do not have), the CNI plugins
#     1.1.1 (containernetworking-plugins: bridge, host-local, loopback, portmap in /usr/lib/cni)
#     and conntrack. Their system services are kept from starting: the tests start private ones.
#
# Everything built goes to /var/cache/vnetbench/kubernetes-v1.34.4/{bin,images}; BUILD-INFO
# there records what was built, how long it took and the sizes. Go builds run at nice 19
# with a build cache of their own (removed once the binaries are in place). With everything
# present, the script only checks and prints one line per piece. Remove that directory to
# build again.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"

. scripts/lib.sh
K8S_VERSION=v1.34.4
STAGING_VERSION=v0.34.4
FLANNEL_VERSION=v0.28.10
PAUSE_IMAGE=localhost/vnetbench/pause:3.10.1
CACHE=/var/cache/vnetbench/kubernetes-$K8S_VERSION
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
who=60-kubernetes

apt_install $who --services-stay-down containerd runc etcd-server containernetworking-plugins \
  conntrack gcc libc6-dev
mkdir -p "$CACHE/bin" "$CACHE/images"

built_ok() {  # every Kubernetes binary there and stamped with the version
  local b
  for b in "${BINARIES[@]}"; do
    [ -x "$CACHE/bin/$b" ] || return 1
  done
  "$CACHE/bin/kubelet" --version 2>/dev/null | grep -qx "Kubernetes $K8S_VERSION"
}

go_env() {  # a private build cache; the module cache is Go's usual one
  export GOCACHE="$CACHE/.gocache" CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
}

build_kubernetes() {
  require $who go "install a current Go from https://go.dev/dl into /usr/local/go, then run setup again" version
  local src="$CACHE/src" start staging
  rm -rf "$src"
  mkdir -p "$src"
  go_env
  (cd "$src" && go mod init vnetbench.local/kubernetes-build >/dev/null 2>&1)
  local modfile
  modfile=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
            | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  staging=$(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$modfile")
  [ -n "$staging" ] || { echo "$who: no staging modules found in $modfile" >&2; exit 1; }
  {
    echo "module vnetbench.local/kubernetes-build"
    echo
    echo "go 1.24.0"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m $STAGING_VERSION"; done
    echo ")"
  } > "$src/go.mod"
  echo "$who: building Kubernetes $K8S_VERSION (${BINARIES[*]}) from the Go module proxy," \
       "$(echo $staging | wc -w) staging modules at $STAGING_VERSION; this takes several minutes"
  start=$(date +%s)
  local pkgs=() b
  for b in "${BINARIES[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  (cd "$src" && nice -n 19 go build -mod=mod -trimpath -o "$CACHE/bin/" \
     -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34 -X k8s.io/component-base/version.gitTreeState=clean" \
     "${pkgs[@]}")
  echo "kubernetes_build_s=$(( $(date +%s) - start ))" >> "$CACHE/BUILD-INFO"
  echo "kubernetes_gocache_mb=$(du -sm "$GOCACHE" | cut -f1)" >> "$CACHE/BUILD-INFO"
}

build_flannel() {
  # flannel's main.go imports every backend; the Tencent Cloud VPC one needs an SDK module the
  # Go proxy does not serve (403), so main.go is built from a copy without that one import;
  # its udp backend is C (cgo), as in flannel's own builds
  go_env
  local src="$CACHE/flannel-src" start dir
  start=$(date +%s)
  echo "$who: building flanneld $FLANNEL_VERSION from the Go module proxy (without its tencentvpc backend)"
  dir=$(go mod download -json "github.com/flannel-io/flannel@$FLANNEL_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
  rm -rf "$src"
  mkdir -p "$src"
  grep -v 'flannel/pkg/backend/tencentvpc"' "$dir/main.go" > "$src/main.go"
  printf 'module vnetbench.local/flannel-build\n\ngo 1.26.0\n\nrequire github.com/flannel-io/flannel %s\n' \
    "$FLANNEL_VERSION" > "$src/go.mod"
  cp "$dir/go.sum" "$src/go.sum"
  (cd "$src" && CGO_ENABLED=1 nice -n 19 go build -mod=mod -trimpath -o "$CACHE/bin/flanneld" \
     -ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION" .)
  rm -rf "$src"
  echo "flannel_build_s=$(( $(date +%s) - start ))" >> "$CACHE/BUILD-INFO"
}

build_pause() {
  local dir src tmp sum cfg
  dir=$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION
  [ -f "$dir/build/pause/linux/pause.c" ] || go mod download "k8s.io/kubernetes@$K8S_VERSION"
  src="$dir/build/pause/linux/pause.c"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  gcc -Os -Wall -Werror -static -DVERSION="v3.10.1-vnetbench" -o "$CACHE/bin/pause" "$src"
  strip "$CACHE/bin/pause"
  # a Docker-format image archive (what `docker save` writes; ctr imports it with its name)
  mkdir -p "$tmp/rootfs" "$tmp/img"
  install -m 0755 "$CACHE/bin/pause" "$tmp/rootfs/pause"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$tmp/rootfs" -cf "$tmp/layer.tar" pause
  sum=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
  mkdir -p "$tmp/img/$sum"
  mv "$tmp/layer.tar" "$tmp/img/$sum/layer.tar"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"scripts/setup.d/60-kubernetes.sh: pause.c of k8s.io/kubernetes %s"}]}' \
    "$sum" "$K8S_VERSION" > "$tmp/config.json"
  cfg=$(sha256sum "$tmp/config.json" | cut -d' ' -f1)
  mv "$tmp/config.json" "$tmp/img/$cfg.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cfg" "$PAUSE_IMAGE" "$sum" \
    > "$tmp/img/manifest.json"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$tmp/img" -cf "$CACHE/images/pause.tar" .
  echo "$PAUSE_IMAGE" > "$CACHE/images/pause.name"
}

if built_ok; then
  echo "$who: Kubernetes $K8S_VERSION binaries cached in $CACHE/bin"
else
  build_kubernetes
  built_ok || { echo "$who: the build left no working kubelet in $CACHE/bin" >&2; exit 1; }
fi
if [ ! -x "$CACHE/bin/flanneld" ]; then
  build_flannel
fi
if [ ! -f "$CACHE/images/pause.tar" ] || [ ! -x "$CACHE/bin/pause" ]; then
  build_pause
fi
if [ -d "$CACHE/.gocache" ]; then
  rm -rf "$CACHE/.gocache" "$CACHE/src"
fi
grep -q '^cache_mb=' "$CACHE/BUILD-INFO" 2>/dev/null \
  || echo "cache_mb=$(du -sm "$CACHE" | cut -f1)" >> "$CACHE/BUILD-INFO"
echo "$who: $("$CACHE/bin/kubelet" --version), $("$CACHE/bin/kubectl" version --client 2>/dev/null | head -n 1)"
echo "$who: flanneld $("$CACHE/bin/flanneld" --version 2>&1 | head -n 1); pause image $(cat "$CACHE/images/pause.name") ($CACHE/images/pause.tar)"
echo "$who: $(containerd --version | cut -d' ' -f1-3), runc $(runc --version | sed -n 's/^runc version //p'), etcd $(etcd --version | sed -n 's/^etcd Version: //p'), CNI plugins $(dpkg-query -W -f='${Version}' containernetworking-plugins) (/usr/lib/cni)"
echo "$who: cache $(du -sh "$CACHE" | cut -f1) in $CACHE ($(tr '\n' ' ' < "$CACHE/BUILD-INFO"))"
