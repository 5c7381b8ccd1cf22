# Versions of everything the kind path builds. Sourced by hack/kind/*.sh.
# Kubernetes, etcd, Kueue, Trainer and JobSet come from hack/tools/go.mod (the
# versions the process clusters run); the node's own components follow what
# kind's base image pins (sigs.k8s.io/kind images/base/Dockerfile).
_kind_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
_tool_version() { awk -v m="$1" '$1 == m { print $2; exit }' "$_kind_root/hack/tools/go.mod"; }
K8S_VERSION=$(_tool_version k8s.io/kubernetes)
ETCD_VERSION=$(_tool_version go.etcd.io/etcd/server/v3)
KUEUE_VERSION=$(_tool_version sigs.k8s.io/kueue)
TRAINER_VERSION=$(_tool_version github.com/kubeflow/trainer/v2)
JOBSET_VERSION=$(_tool_version sigs.k8s.io/jobset)

KIND_VERSION=v0.33.0
CONTAINERD_VERSION=v2.3.4
RUNC_VERSION=v1.4.3
CRICTL_VERSION=v1.36.0
CNI_PLUGINS_VERSION=v1.9.1
# A registry on kind's network that the nodes' containerd uses for every
# registry: pods whose images are pulled Always (busybox:latest) start offline.
REGISTRY_VERSION=v3.1.2
# The images kubeadm $K8S_VERSION asks for (kubeadm config images list).
COREDNS_VERSION=v1.14.2
PAUSE_VERSION=3.10.2
ETCD_IMAGE_TAG=${ETCD_VERSION#v}-0
# The node's root filesystem: Debian packages only.
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
NODE_PACKAGES=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,ca-certificates,curl,jq,procps,e2fsprogs,socat

# Image names. The node image's tag carries everything that goes into it.
IMAGE_PREFIX=${IMAGE_PREFIX:-courier-kind}
NODE_IMAGE=$IMAGE_PREFIX/node:$K8S_VERSION
BASE_IMAGE=$IMAGE_PREFIX/base:$DEBIAN_SUITE
COURIER_IMAGE=${COURIER_IMAGE:-courier:kind}
KUEUE_IMAGE=$IMAGE_PREFIX/kueue:$KUEUE_VERSION
TRAINER_IMAGE=$IMAGE_PREFIX/trainer-controller-manager:$TRAINER_VERSION
JOBSET_IMAGE=$IMAGE_PREFIX/jobset:$JOBSET_VERSION
REGISTRY_IMAGE=$IMAGE_PREFIX/registry:$REGISTRY_VERSION
BUSYBOX_IMAGE=$IMAGE_PREFIX/busybox:$DEBIAN_SUITE

KIND_CACHE=${KIND_CACHE:-$_kind_root/bin/kind-cache}
KIND=$KIND_CACHE/kind-$KIND_VERSION/kind
