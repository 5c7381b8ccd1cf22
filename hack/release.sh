#!/usr/bin/env bash
# Writes a release of Courier into one folder (`make release VERSION=vX.Y.Z`
# runs it, then checks what it wrote with test/release):
#
#   kubectl-courier_VERSION_OS_ARCH.tar.gz   the plugin for linux and darwin, amd64 and arm64
#   kubectl-courier.yaml                     its krew manifest, naming each archive and its sha256
#   courier-X.Y.Z.tgz                        the chart, version X.Y.Z, appVersion VERSION
#   courier-worker-X.Y.Z.tgz                 the worker chart (config/worker), likewise
#   courier.yaml                             config/default rendered, the image set to the release's
#   courier-image_VERSION_linux_amd64.tar    the controller image as an OCI archive, built offline
#                                            from Dockerfile.offline; only where a Docker engine runs
#   SHA256SUMS                               the sha256 of each file above
#
# Usage: hack/release.sh VERSION OUT_DIR. IMAGE_REPOSITORY (default
# "courier") names the image in the chart, the YAML and the archive;
# BIN is where helm and kustomize are (default bin/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${1:?usage: hack/release.sh VERSION OUT_DIR}
out=${2:?usage: hack/release.sh VERSION OUT_DIR}
repository=${IMAGE_REPOSITORY:-courier}
bin=${BIN:-$root/bin}
base_image=${BASE_IMAGE:-courier-kind/base:bookworm}
download=${DOWNLOAD_URL:-https://github.com/courierdev/courier/releases/download}
log() { echo "release: $*" >&2; }

if ! [[ $version =~ ^v([0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?)$ ]]; then
  log "VERSION must be vMAJOR.MINOR.PATCH, with an optional -prerelease; got '$version'"
  exit 1
fi
chart_version=${BASH_REMATCH[1]}
revision=$(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet HEAD || echo -dirty)
ldflags="-X github.com/courierdev/courier/pkg/version.version=$version -X github.com/courierdev/courier/pkg/version.revision=$revision"
image="$repository:$version"

rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# tgz writes a gzipped tar of files in dir that depends only on their
# contents, so that two releases of one commit have the same checksums.
tgz() {
  local archive=$1 dir=$2; shift 2
  tar -C "$dir" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - "$@" | gzip -n -9 > "$archive"
}

# 1. The plugin, one archive per platform, with the licence krew asks for.
platforms=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
for platform in "${platforms[@]}"; do
  os=${platform%/*} arch=${platform#*/}
  log "kubectl-courier $os/$arch"
  d=$work/plugin-$os-$arch
  mkdir -p "$d"
  (cd "$root" && GOOS=$os GOARCH=$arch CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$d/kubectl-courier" ./cmd/kubectl-courier)
  cp "$root/LICENSE" "$d/"
  tgz "$out/kubectl-courier_${version}_${os}_${arch}.tar.gz" "$d" kubectl-courier LICENSE
done

# 2. The krew manifest, pointing at the archives as the release page serves them.
log "krew manifest"
{
  cat <<EOF
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: courier
spec:
  version: $version
  homepage: https://github.com/courierdev/courier
  shortDescription: Where Courier dispatched a job across clusters, and why it waits
  description: |
    kubectl courier reads, on a Kueue manager cluster, what Courier records
    about jobs and worker clusters: where each job runs, its admission
    check, its worker's connection and why a waiting job waits. It never
    reaches the workers, so it needs no access to their credentials.
  platforms:
EOF
  for platform in "${platforms[@]}"; do
    os=${platform%/*} arch=${platform#*/}
    archive=kubectl-courier_${version}_${os}_${arch}.tar.gz
    cat <<EOF
  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $download/$version/$archive
    sha256: $(sha256sum "$out/$archive" | cut -d' ' -f1)
    bin: kubectl-courier
    files:
    - from: kubectl-courier
      to: .
    - from: LICENSE
      to: .
EOF
  done
} > "$out/kubectl-courier.yaml"

# 3. The charts, naming the release's image: their version without the v,
# their appVersion the release's, which is the image's default tag. The
# worker chart's fence runs the same image.
for chart in courier courier-worker; do
  log "chart $chart $chart_version"
  cp -r "$root/charts/$chart" "$work/$chart"
  sed -i "s|^  repository: courier\$|  repository: $repository|" "$work/$chart/values.yaml"
  grep -q "^  repository: $repository\$" "$work/$chart/values.yaml" || { log "could not set image.repository in $chart's values"; exit 1; }
  "$bin/helm" package "$work/$chart" --version "$chart_version" --app-version "$version" --destination "$out" >/dev/null
done

# 4. The kustomize install, rendered with the release's image.
log "courier.yaml"
cp -r "$root/config" "$work/config"
(cd "$work/config/manager" && "$bin/kustomize" edit set image "courier=$image")
"$bin/kustomize" build "$work/config/default" > "$out/courier.yaml"

# 5. The controller image, offline, as an OCI archive. An engine older than
# Docker 25 saves Docker's own format: hack/ociarchive turns it into an OCI
# image layout. The image is removed from the engine again: the archive is
# the artifact.
if timeout 20 docker info >/dev/null 2>&1; then
  if ! docker image inspect "$base_image" >/dev/null 2>&1; then
    log "the offline base image $base_image is missing; make kind-images builds it"
    exit 1
  fi
  log "image $image"
  mkdir -p "$work/image"
  (cd "$root" && export GOOS=linux GOARCH=amd64 CGO_ENABLED=0 &&
    go build -trimpath -ldflags "$ldflags" -o "$work/image/courier" ./cmd/courier &&
    go build -trimpath -ldflags "$ldflags" -o "$work/image/courier-fence" ./cmd/courier-fence &&
    go build -trimpath -o "$work/image/secretreader" sigs.k8s.io/cluster-inventory-api/plugins/secretreader/cmd/plugin)
  DOCKER_BUILDKIT=0 docker build -q -f "$root/Dockerfile.offline" --build-arg "BASE_IMAGE=$base_image" -t "$image" "$work/image" >/dev/null 2>&1
  saved=0
  docker save -o "$work/image.tar" "$image" && saved=1
  docker rmi "$image" >/dev/null
  [ "$saved" = 1 ] || { log "docker save $image failed"; exit 1; }
  (cd "$root" && go run ./hack/ociarchive --in "$work/image.tar" --out "$out/courier-image_${version}_linux_amd64.tar" --name "$image")
else
  log "no Docker engine runs: skipping the image archive, and only it; start one (hack/kind/docker-up.sh) and run make release again for it"
fi

# 6. The checksums.
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | sort | xargs sha256sum > SHA256SUMS)
log "wrote $out:"
ls -l "$out" >&2
