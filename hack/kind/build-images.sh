#!/usr/bin/env bash
# Builds the kind path's images from the binaries hack/kind/build-bins.sh made
# and Debian packages, with no registry: root filesystems made with
# debootstrap and brought in with `docker import`. An image whose tag exists
# is not rebuilt (REBUILD=1 rebuilds all).
#
#   courier-kind/base:bookworm       glibc, CA certificates, users; the base of the others
#   courier-kind/node:v1.36.3        the kind node image (kind's images/base layout)
#   courier-kind/kueue, trainer-controller-manager, jobset at the pinned versions
#   courier:kind                     Courier, from Dockerfile.offline
#
# Needs root (debootstrap, chroot) and a Docker engine (hack/kind/docker-up.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.sh"
root=$_kind_root
work=$KIND_CACHE/work
mkdir -p "$work"
log() { echo "build-images: $*" >&2; }
have() { [ -z "${REBUILD:-}" ] && docker image inspect "$1" >/dev/null 2>&1; }
# A Docker engine: the one running, or one started here and stopped at the end.
cpid= docker_started=
if ! timeout 20 docker info >/dev/null 2>&1; then docker_started=1; "$here/docker-up.sh"; fi
cleanup() {
  [ -z "$cpid" ] || kill "$cpid" 2>/dev/null || true
  [ -z "$docker_started" ] || "$here/docker-down.sh"
}
trap cleanup EXIT
kindsrc=$(cd /tmp && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')/images/base/files

# 1. The node's root filesystem, cached by suite and package list.
pkg_hash=$(echo "$DEBIAN_SUITE $NODE_PACKAGES" | sha256sum | cut -c1-12)
rootfs=$KIND_CACHE/rootfs-$DEBIAN_SUITE-$pkg_hash
if [ ! -d "$rootfs" ]; then
  command -v debootstrap >/dev/null || { DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq debootstrap >/dev/null; }
  log "debootstrap $DEBIAN_SUITE (minbase + $NODE_PACKAGES)"
  rm -rf "$rootfs.tmp"
  timeout 1200 debootstrap --variant=minbase --include="$NODE_PACKAGES" "$DEBIAN_SUITE" "$rootfs.tmp" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { log "debootstrap failed; see $work/debootstrap.log"; exit 1; }
  rm -rf "$rootfs.tmp"/var/cache/apt/archives/*.deb "$rootfs.tmp"/var/lib/apt/lists/*
  mv "$rootfs.tmp" "$rootfs"
fi

# 2. The base of the single-binary images: what distroless/base has.
b=$work/base
if ! have "$BASE_IMAGE" || [ ! -d "$b" ]; then
  log "image $BASE_IMAGE"
  rm -rf "$b"; mkdir -p "$b"/{etc,tmp,usr/lib/x86_64-linux-gnu,usr/lib64,etc/ssl/certs,home/nonroot}
  chmod 1777 "$b/tmp"
  ln -s usr/lib "$b/lib"; ln -s usr/lib64 "$b/lib64"; ln -s usr/bin "$b/bin"; mkdir -p "$b/usr/bin" "$b/usr/local/bin"
  cp -L "$rootfs"/usr/lib/x86_64-linux-gnu/{libc.so.6,ld-linux-x86-64.so.2,libpthread.so.0,libdl.so.2,libm.so.6,libresolv.so.2} "$b/usr/lib/x86_64-linux-gnu/"
  ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$b/usr/lib64/ld-linux-x86-64.so.2"
  cp -L "$rootfs/etc/ssl/certs/ca-certificates.crt" "$b/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$b/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' > "$b/etc/group"
  echo 'hosts: files dns' > "$b/etc/nsswitch.conf"
  chown 65532:65532 "$b/home/nonroot"
  tar -C "$b" -c . | docker import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - "$BASE_IMAGE" >/dev/null
fi

# single IMAGE ENTRYPOINT_JSON USER FILE...: the base plus FILEs in /usr/local/bin.
single() {
  local image=$1 entry=$2 user=$3; shift 3
  have "$image" && return 0
  log "image $image"
  local d=$work/img; rm -rf "$d"; mkdir -p "$d/usr/local/bin"
  cp -a "$b/." "$d/"
  cp -L "$@" "$d/usr/local/bin/"
  [ -z "${EXTRA_DIR:-}" ] || cp -a "$EXTRA_DIR/." "$d/"
  # Upstream's manifests run the controllers as /manager.
  [ -z "${AS_MANAGER:-}" ] || ln -s "usr/local/bin/$(basename "$1")" "$d/manager"
  tar -C "$d" -c . | docker import \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change "USER $user" \
    --change "ENTRYPOINT $entry" - "$image" >/dev/null
}
bins=$KIND_CACHE

# 3. The images kubeadm and the node need, and the peers.
k8s=registry.k8s.io
single "$k8s/kube-apiserver:$K8S_VERSION" '["kube-apiserver"]' 0 "$root/bin/kube-apiserver"
single "$k8s/kube-controller-manager:$K8S_VERSION" '["kube-controller-manager"]' 0 "$root/bin/kube-controller-manager"
single "$k8s/kube-scheduler:$K8S_VERSION" '["kube-scheduler"]' 0 "$root/bin/kube-scheduler"
single "$k8s/etcd:$ETCD_IMAGE_TAG" '["etcd"]' 0 "$root/bin/etcd"
single "$k8s/coredns/coredns:$COREDNS_VERSION" '["/usr/local/bin/coredns"]' 0 "$bins/coredns-$COREDNS_VERSION/coredns"
single "$k8s/pause:$PAUSE_VERSION" '["/usr/local/bin/pause"]' 65535 "$bins/pause-$PAUSE_VERSION/pause"
AS_MANAGER=1 single "$KUEUE_IMAGE" '["/manager"]' 65532 "$root/bin/kueue"
AS_MANAGER=1 single "$TRAINER_IMAGE" '["/manager"]' 65532 "$root/bin/trainer-controller-manager"
AS_MANAGER=1 single "$JOBSET_IMAGE" '["/manager"]' 65532 "$root/bin/jobset"
# The registry the nodes pull through (hack/e2e-kind.sh runs it).
r=$work/registry-extra; rm -rf "$r"; mkdir -p "$r/etc/distribution" "$r/var/lib/registry"
cat > "$r/etc/distribution/config.yml" <<'YAML'
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: /var/lib/registry
  delete:
    enabled: true
http:
  addr: :5000
YAML
EXTRA_DIR=$r single "$REGISTRY_IMAGE" '["/usr/local/bin/registry", "serve", "/etc/distribution/config.yml"]' 0 \
  "$bins/registry-$REGISTRY_VERSION/registry"
# busybox, from Debian's busybox-static: the e2e suite's Job and JobSet pods
# run it, and it stands in for the image of Trainer's torch-distributed
# runtime (its pods run the image's default command, which exits 0).
if ! have "$BUSYBOX_IMAGE"; then
  log "image $BUSYBOX_IMAGE"
  d=$work/busybox; rm -rf "$d"; mkdir -p "$d/deb"
  (cd "$d/deb" && timeout 300 apt-get download busybox-static >/dev/null 2>&1) ||
    { timeout 300 apt-get update -qq && (cd "$d/deb" && timeout 300 apt-get download busybox-static >/dev/null); }
  dpkg-deb -x "$d"/deb/busybox-static_*.deb "$d/x"
  mkdir -p "$d/root"; cp -a "$b/." "$d/root/"; rm -rf "$d/root/bin"; mkdir -p "$d/root/bin"
  install -m 0755 "$d/x/bin/busybox" "$d/root/bin/busybox"
  for a in $("$d/root/bin/busybox" --list); do [ -e "$d/root/bin/$a" ] || ln -s busybox "$d/root/bin/$a"; done
  tar -C "$d/root" -c . | docker import --change 'ENV PATH=/bin:/usr/bin:/usr/local/bin' \
    --change 'CMD ["sh"]' - "$BUSYBOX_IMAGE" >/dev/null
  rm -rf "$d"
fi
# kube-proxy runs iptables: it gets the node's Debian root filesystem.
kp=$k8s/kube-proxy:$K8S_VERSION
if ! have "$kp"; then
  log "image $kp"
  tar -C "$rootfs" -c --exclude=./var/cache --exclude=./usr/share/doc --exclude=./usr/share/man . |
    docker import --change 'ENTRYPOINT ["/usr/local/bin/kube-proxy"]' - "$kp.rootfs" >/dev/null
  d=$work/kp; rm -rf "$d"; mkdir -p "$d"
  cp "$bins/kubernetes-$K8S_VERSION/kube-proxy" "$d/"
  printf 'FROM %s\nCOPY kube-proxy /usr/local/bin/kube-proxy\n' "$kp.rootfs" > "$d/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q -t "$kp" "$d" >/dev/null 2>&1
  docker rmi "$kp.rootfs" >/dev/null
fi

# 4. Courier, from Dockerfile.offline, from the tree as it is: rebuilt every
# time (Go and Docker's layer cache make an unchanged tree cost seconds).
log "image $COURIER_IMAGE"
mkdir -p "$root/_output/kind/image"
(cd "$root" && go build -o _output/kind/image/courier ./cmd/courier && go build -o _output/kind/image/courier-fence ./cmd/courier-fence &&
  go build -o _output/kind/image/secretreader sigs.k8s.io/cluster-inventory-api/plugins/secretreader/cmd/plugin)
DOCKER_BUILDKIT=0 docker build -q -f "$root/Dockerfile.offline" --build-arg "BASE_IMAGE=$BASE_IMAGE" \
  -t "$COURIER_IMAGE" "$root/_output/kind/image" >/dev/null 2>&1

# 5. The node image: kind's images/base layout on the Debian root filesystem,
# the Kubernetes binaries, and every image above that a node runs, in
# containerd's store.
if ! have "$NODE_IMAGE"; then
  log "image $NODE_IMAGE"
  n=$work/node; rm -rf "$n"; cp -a "$rootfs" "$n"
  install -m 0755 "$kindsrc"/usr/local/bin/* "$n/usr/local/bin/"
  mkdir -p "$n/kind/bin" "$n/kind/manifests" "$n/etc/containerd" "$n/etc/kubernetes/manifests" "$n/opt/cni/bin" "$n/etc/cni/net.d"
  cp -r "$kindsrc/kind/." "$n/kind/"; chmod 0755 "$n"/kind/bin/*
  for f in crictl.yaml; do install -m 0644 "$kindsrc/etc/$f" "$n/etc/"; done
  install -m 0644 "$kindsrc"/etc/default/* "$n/etc/default/"
  install -m 0644 "$kindsrc"/etc/sysctl.d/* "$n/etc/sysctl.d/"
  install -m 0644 "$kindsrc"/etc/systemd/system/*.service "$kindsrc"/etc/systemd/system/*.slice "$n/etc/systemd/system/"
  mkdir -p "$n/etc/systemd/system/kubelet.service.d"
  install -m 0644 "$kindsrc"/etc/systemd/system/kubelet.service.d/* "$n/etc/systemd/system/kubelet.service.d/"
  rm -f "$n/etc/systemd/system/containerd-fuse-overlayfs.service"
  # containerd: kind's config without the fuse-overlayfs proxy (not built),
  # sandbox image as kubeadm $K8S_VERSION names it, and oom_score_adj kept
  # no lower than containerd's own: lowering it needs CAP_SYS_RESOURCE, and
  # without it every sandbox fails ("failed to update /proc/self/oom_score_adj:
  # Permission denied"). Where the capability exists, containerd runs at -999
  # (its unit's OOMScoreAdjust) and nothing changes.
  sed -e '/^\[proxy_plugins\]/,/^  address = /d' -e '/^# fuse-overlayfs is used for rootless/d' \
    -e 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' \
    -e "s|sandbox_image = .*|sandbox_image = \"$k8s/pause:$PAUSE_VERSION\"|" \
    "$kindsrc/etc/containerd/config.toml" > "$n/etc/containerd/config.toml"
  # Registry hosts (mirrors) come from /etc/containerd/certs.d/<registry>/hosts.toml.
  printf '\n[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/etc/containerd/certs.d"\n' >> "$n/etc/containerd/config.toml"
  mkdir -p "$n/etc/containerd/certs.d"
  install -m 0755 "$bins/containerd-$CONTAINERD_VERSION"/* "$n/usr/local/bin/"
  "$bins/containerd-$CONTAINERD_VERSION/ctr" oci spec |
    jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
    jq 'del(.process.rlimits)' > "$n/etc/containerd/cri-base.json"
  # runc behind the capability wrapper: privileged pods start where the
  # bounding set lacks CAP_SYS_RESOURCE.
  install -m 0755 "$bins/runc-$RUNC_VERSION/runc" "$n/usr/local/sbin/runc.real"
  install -m 0755 "$here/runc-nocap" "$n/usr/local/sbin/runc"
  install -m 0755 "$bins/crictl-$CRICTL_VERSION/crictl" "$n/usr/local/bin/"
  install -m 0755 "$bins/cni-plugins-$CNI_PLUGINS_VERSION"/* "$n/opt/cni/bin/"
  install -m 0644 "$here/node/10-courier-bridge.conflist" "$n/etc/cni/net.d/"
  install -m 0755 "$bins/kubernetes-$K8S_VERSION"/{kubeadm,kubelet} "$root/bin/kubectl" "$n/usr/bin/"
  echo -n "$K8S_VERSION" > "$n/kind/version"
  install -m 0644 "$here/node/default-cni.yaml" "$here/node/default-storage.yaml" "$n/kind/manifests/"
  # As kind's base Dockerfile does.
  rm -f "$n"/lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service \
    "$n"/lib/systemd/system/multi-user.target.wants/* "$n"/etc/systemd/system/*.wants/* \
    "$n"/lib/systemd/system/local-fs.target.wants/* "$n"/lib/systemd/system/sockets.target.wants/*udev* \
    "$n"/lib/systemd/system/sockets.target.wants/*initctl* "$n"/lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >> "$n/etc/systemd/journald.conf"
  ln -sf /usr/lib/systemd/systemd "$n/sbin/init"
  chroot "$n" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
  chroot "$n" systemctl mask systemd-binfmt.service >/dev/null 2>&1
  # Preload the images into the node's containerd store, as kind's image
  # build does, with a containerd run here against the node's /var/lib/containerd.
  c=$work/containerd; rm -rf "$c"; mkdir -p "$c"
  printf 'version = 3\ndisabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime"]\n' > "$c/config.toml"
  "$bins/containerd-$CONTAINERD_VERSION/containerd" --config "$c/config.toml" --root "$n/var/lib/containerd" \
    --state "$c/state" --address "$c/sock" >"$c/log" 2>&1 &
  cpid=$!
  for _ in $(seq 30); do [ -S "$c/sock" ] && break; sleep 1; done
  for img in "$k8s/kube-apiserver:$K8S_VERSION" "$k8s/kube-controller-manager:$K8S_VERSION" \
    "$k8s/kube-scheduler:$K8S_VERSION" "$kp" "$k8s/etcd:$ETCD_IMAGE_TAG" \
    "$k8s/coredns/coredns:$COREDNS_VERSION" "$k8s/pause:$PAUSE_VERSION"; do
    docker save "$img" | "$bins/containerd-$CONTAINERD_VERSION/ctr" -a "$c/sock" --namespace=k8s.io images import \
      --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests - >/dev/null
  done
  "$bins/containerd-$CONTAINERD_VERSION/ctr" -a "$c/sock" --namespace=k8s.io images list -q > "$work/node-images.txt"
  kill "$cpid"; wait "$cpid" 2>/dev/null || true; cpid=
  tar -C "$n" -c . | docker import - "$NODE_IMAGE.rootfs" >/dev/null
  # docker import takes no STOPSIGNAL: a Dockerfile of metadata only adds it.
  d=$work/node-meta; rm -rf "$d"; mkdir -p "$d"
  printf 'FROM %s\nENV container=docker\nSTOPSIGNAL SIGRTMIN+3\nENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]\n' \
    "$NODE_IMAGE.rootfs" > "$d/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q -t "$NODE_IMAGE" "$d" >/dev/null 2>&1
  docker rmi "$NODE_IMAGE.rootfs" >/dev/null
  rm -rf "$n"
fi
log "images ready: $NODE_IMAGE $COURIER_IMAGE $KUEUE_IMAGE $TRAINER_IMAGE $JOBSET_IMAGE"
