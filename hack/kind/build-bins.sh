#!/usr/bin/env bash
# Builds every binary the kind path needs from pinned Go modules (and pause
# from its C source in the Kubernetes module) into bin/kind-cache/NAME-VERSION/.
# A directory that exists is not rebuilt. Run niced: builds share the machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.sh"
root=$_kind_root
export GONOSUMDB=sigs.k8s.io/scheduler-library GOFLAGS=-trimpath
mkdir -p "$KIND_CACHE"
log() { echo "build-bins: $*" >&2; }

# done_or_build DIR CMD...: runs CMD into DIR.tmp, then renames it to DIR.
done_or_build() {
  local dir=$1; shift
  [ -d "$dir" ] && return 0
  log "building $(basename "$dir")"
  rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
  local start=$SECONDS
  (out=$dir.tmp; "$@") || { rm -rf "$dir.tmp"; log "FAILED: $(basename "$dir")"; return 1; }
  mv "$dir.tmp" "$dir"
  log "built $(basename "$dir") in $((SECONDS - start))s"
}

# moddir MODULE@VERSION: the module's directory in the module cache.
moddir() { go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }

k8s_ldflags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
-X k8s.io/component-base/version.gitMajor=1 \
-X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) \
-X k8s.io/component-base/version.gitTreeState=clean \
-X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"

b_kind() { GOBIN=$out CGO_ENABLED=0 go install "sigs.k8s.io/kind@$KIND_VERSION"; }

# The node's Kubernetes binaries, from hack/kind/tools (Kubernetes as pinned
# in hack/tools), static. The control-plane images reuse the bin/ builds
# (make test-binaries e2e-binaries), which link glibc: the image base has it.
b_k8s() {
  cd "$here/tools"
  for b in kubeadm kubelet kube-proxy; do
    CGO_ENABLED=0 go build -ldflags "$k8s_ldflags" -o "$out/$b" "k8s.io/kubernetes/cmd/$b"
  done
}

# containerd, ctr and the runc shim, as kind's base image builds them.
b_containerd() {
  cd "$(moddir "github.com/containerd/containerd/v2@$CONTAINERD_VERSION")"
  local ld="-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
  CGO_ENABLED=0 go build -tags "no_aufs no_zfs no_btrfs no_devmapper" -ldflags "$ld" -o "$out/" \
    ./cmd/containerd ./cmd/ctr ./cmd/containerd-shim-runc-v2
}

# runc needs cgo and libseccomp (Debian's libseccomp-dev).
b_runc() {
  if ! [ -e /usr/include/seccomp.h ]; then
    log "installing libseccomp-dev for runc"
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq libseccomp-dev >/dev/null
  fi
  cd "$(moddir "github.com/opencontainers/runc@$RUNC_VERSION")"
  CGO_ENABLED=1 go build -tags "seccomp urfave_cli_no_docs" \
    -ldflags "-X main.version=${RUNC_VERSION#v}" -o "$out/runc" .
}

b_crictl() {
  cd "$(moddir "github.com/kubernetes-sigs/cri-tools@$CRICTL_VERSION")"
  CGO_ENABLED=0 go build -mod=mod -ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" \
    -o "$out/crictl" ./cmd/crictl
}

b_cni() {
  cd "$(moddir "github.com/containernetworking/plugins@$CNI_PLUGINS_VERSION")"
  CGO_ENABLED=0 go build -mod=mod -o "$out/" ./plugins/ipam/host-local ./plugins/main/loopback \
    ./plugins/main/bridge ./plugins/main/ptp ./plugins/meta/portmap
}

b_registry() {
  cd "$(moddir "github.com/distribution/distribution/v3@$REGISTRY_VERSION")"
  CGO_ENABLED=0 go build -o "$out/registry" ./cmd/registry
}

b_coredns() { cd "$here/coredns" && CGO_ENABLED=0 go build -o "$out/coredns" .; }

b_pause() {
  local src
  src=$(cd "$here/tools" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux
  gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION-courier" -o "$out/pause" "$src/pause.c"
  strip "$out/pause"
}

# A simple binary built from source already sits in bin/ for these.
b_bin() { make -C "$root" --no-print-directory "$@" >&2; }

done_or_build "$KIND_CACHE/kind-$KIND_VERSION" b_kind
done_or_build "$KIND_CACHE/kubernetes-$K8S_VERSION" b_k8s
done_or_build "$KIND_CACHE/containerd-$CONTAINERD_VERSION" b_containerd
done_or_build "$KIND_CACHE/runc-$RUNC_VERSION" b_runc
done_or_build "$KIND_CACHE/crictl-$CRICTL_VERSION" b_crictl
done_or_build "$KIND_CACHE/cni-plugins-$CNI_PLUGINS_VERSION" b_cni
done_or_build "$KIND_CACHE/coredns-$COREDNS_VERSION" b_coredns
done_or_build "$KIND_CACHE/pause-$PAUSE_VERSION" b_pause
done_or_build "$KIND_CACHE/registry-$REGISTRY_VERSION" b_registry
# Control plane, etcd and the peers: the builds the process clusters use.
b_bin "$root/bin/kube-apiserver" "$root/bin/kube-controller-manager" "$root/bin/kube-scheduler" \
  "$root/bin/kubectl" "$root/bin/etcd" "$root/bin/kueue" "$root/bin/trainer-controller-manager" \
  "$root/bin/jobset" "$root/bin/helm" "$root/bin/kustomize"
log "all binaries in $KIND_CACHE and $root/bin"
