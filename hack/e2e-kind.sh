#!/usr/bin/env bash
# Runs Courier's e2e suite on kind clusters: a manager and two workers, the
# pinned Kueue, Trainer and JobSet installed from the manifests in their Go
# modules, and Courier from its Helm chart as a Deployment with its webhooks.
# `make test-e2e` runs the same suite on local process clusters.
#
# Needs no registry and no internet: `make kind-images` (which
# `make test-e2e-kind` runs first) builds every image from pinned sources
# and Debian packages. The nodes pull through a registry container on
# kind's Docker network that this script starts and fills; nothing leaves
# the machine. Where no Docker engine runs, hack/kind/docker-up.sh prepares
# one, and this script stops it again at the end.
#
# Usage: hack/e2e-kind.sh [--keep]   (--keep leaves the clusters up)
# Environment: E2E_ARGS passes flags to `go test` (e.g. -ginkgo.focus=...).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source hack/kind/versions.sh
dir=$root/_output/kind
mkdir -p "$dir"
clusters=(manager worker-1 worker-2)
workers=(worker-1 worker-2)
keep=${1:-}
registry=courier-kind-registry
registry_port=${KIND_REGISTRY_PORT:-5001}
# Each worker's simulated GPUs: as many as its ClusterQueue's quota
# (courier-local configure: 2 nodes of 8 GPUs per worker, times 2 workers).
gpus=32
KUBECTL=$root/bin/kubectl
HELM=$root/bin/helm
KUSTOMIZE=$root/bin/kustomize
start=$SECONDS
step() { echo "e2e-kind: [$((SECONDS - start))s] $*" >&2; }
# phase NAME ends the phase running and starts NAME; the summary at the end
# gives each one's time, the figures the README quotes.
phases=() phase_name= phase_start=$SECONDS
duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
phase() {
  [ -z "$phase_name" ] || phases+=("$phase_name $(duration $((SECONDS - phase_start)))")
  phase_name=$1 phase_start=$SECONDS
}

phase docker
docker_started=
if ! timeout 20 docker info >/dev/null 2>&1; then docker_started=1; fi
hack/kind/docker-up.sh "$dir"

cleanup() {
  rc=$?
  phase teardown
  if [ "$rc" -ne 0 ]; then
    mkdir -p "$root/_artifacts/kind"
    for c in "${clusters[@]}"; do timeout 300 "$KIND" export logs "$root/_artifacts/kind/$c" --name "$c" >/dev/null 2>&1 || true; done
    step "failed; logs in _artifacts/kind"
  fi
  if [ "$keep" != "--keep" ]; then
    for c in "${clusters[@]}"; do timeout 120 "$KIND" delete cluster --name "$c" >/dev/null 2>&1 || true; done
    docker rm -f "$registry" >/dev/null 2>&1 || true
    [ -z "$docker_started" ] || hack/kind/docker-down.sh "$dir"
  else
    step "clusters kept: kubeconfigs in $dir; '$KIND delete cluster --name NAME' and 'docker rm -f $registry' remove them"
  fi
  phase ""
  step "done, rc=$rc"
  # One line to record the run by: the tree it ran, its phases, its result.
  echo "e2e-kind: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo +changes)" \
    "$(date -u +%Y-%m-%dT%H:%MZ): ${phases[*]/%/,} total $(duration $((SECONDS - start))), rc=$rc" >&2
  exit "$rc"
}
trap cleanup EXIT
trap "exit 143" TERM INT

phase images
step "images (make kind-images)"
make --no-print-directory kind-images >&2
go -C tools build -o ../bin/courier-local ./cmd/courier-local

# 1. Clusters. Kubelet v1.36 refuses cgroup v1 unless told otherwise; on
# cgroup v2 hosts the setting changes nothing.
cat > "$dir/cluster.yaml" <<'EOF'
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
kubeadmConfigPatches:
- |
  kind: KubeletConfiguration
  failCgroupV1: false
EOF
phase clusters
for c in "${clusters[@]}"; do
  timeout 120 "$KIND" delete cluster --name "$c" >/dev/null 2>&1 || true
done
for c in "${clusters[@]}"; do
  step "cluster $c"
  timeout 600 "$KIND" create cluster --name "$c" --image "$NODE_IMAGE" --config "$dir/cluster.yaml" --wait 300s
  "$KIND" get kubeconfig --name "$c" > "$dir/$c.kubeconfig"
  # Courier runs in a pod on the manager and reaches workers by container
  # name on kind's network.
  "$KIND" get kubeconfig --internal --name "$c" > "$dir/$c.internal.kubeconfig"
done
k() { "$KUBECTL" --kubeconfig "$dir/$1.kubeconfig" "${@:2}"; }

# 2. The registry the nodes pull through, on kind's network, holding the
# images the manifests and the e2e pods name.
phase peers+chart
step "registry"
docker rm -f "$registry" >/dev/null 2>&1 || true
docker run -d --name "$registry" --network kind -p "127.0.0.1:$registry_port:5000" "$REGISTRY_IMAGE" >/dev/null
for _ in $(seq 30); do curl -fsS "http://127.0.0.1:$registry_port/v2/" >/dev/null 2>&1 && break; sleep 1; done
trainer_dir=$(cd hack/tools && go list -m -f '{{.Dir}}' github.com/kubeflow/trainer/v2)
kueue_dir=$(cd hack/tools && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
jobset_dir=$(cd hack/tools && go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
# ClusterProfile and PlacementDecision, at the version Courier is built with.
inventory_dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-inventory-api)
# The image of Trainer's torch-distributed runtime, which the suite's
# TrainJobs run: busybox stands in for it (its pods run the default command).
torch_image=$(awk '$1 == "image:" { print $2; exit }' "$trainer_dir/manifests/base/runtimes/torch_distributed.yaml")
push() {
  docker tag "$1" "127.0.0.1:$registry_port/$2"
  timeout 300 docker push -q "127.0.0.1:$registry_port/$2" >/dev/null
  docker rmi "127.0.0.1:$registry_port/$2" >/dev/null
}
push "$BUSYBOX_IMAGE" library/busybox:latest
push "$BUSYBOX_IMAGE" "$torch_image"
push "$KUEUE_IMAGE" "kueue/kueue:$KUEUE_VERSION"
push "$JOBSET_IMAGE" "jobset/jobset:$JOBSET_VERSION"
push "$TRAINER_IMAGE" "kubeflow/trainer/trainer-controller-manager:$TRAINER_VERSION"
push "$COURIER_IMAGE" "library/${COURIER_IMAGE%%:*}:${COURIER_IMAGE#*:}"
# Every registry the manifests name resolves to that one, and only to it.
for c in "${clusters[@]}"; do
  for reg in docker.io registry.k8s.io ghcr.io; do
    docker exec -i "$c-control-plane" sh -c "mkdir -p /etc/containerd/certs.d/$reg && cat > /etc/containerd/certs.d/$reg/hosts.toml" <<EOF
server = "http://$registry:5000"
[host."http://$registry:5000"]
  capabilities = ["pull", "resolve"]
EOF
    # Without it a pull would go to the real registry: refuse to go on.
    docker exec "$c-control-plane" grep -q "$registry" "/etc/containerd/certs.d/$reg/hosts.toml"
  done
done

# 3. Kueue everywhere; Trainer and JobSet on the workers, their CRDs on the
# manager (which only holds jobs), with the cluster inventory's
# (ClusterProfile, PlacementDecision). From the pinned modules' manifests.
step "Kueue $KUEUE_VERSION, Trainer $TRAINER_VERSION, JobSet $JOBSET_VERSION"
src=$dir/src; rm -rf "$src"; mkdir -p "$src"
cp -r "$kueue_dir/config" "$src/kueue"; cp -r "$jobset_dir/config" "$src/jobset"; cp -r "$trainer_dir/manifests" "$src/trainer"
chmod -R u+w "$src"
cat >> "$src/kueue/default/kustomization.yaml" <<EOF
images:
- name: us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue
  newName: registry.k8s.io/kueue/kueue
  newTag: $KUEUE_VERSION
EOF
sed -i "s|newName: us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset|newName: registry.k8s.io/jobset/jobset|; s|newTag: .*|newTag: $JOBSET_VERSION|" \
  "$src/jobset/components/manager/kustomization.yaml"
# Each node has this machine's CPUs (2 here) and its control plane asks for
# 0.85 of them; the peers' 500m requests would leave no room for the suite's
# one-CPU pods. Ask for 50m.
sed -i 's/cpu: 500m/cpu: 50m/' "$src/kueue/components/manager/manager.yaml" "$src/jobset/components/manager/manager.yaml"
# Trainer's overlay brings JobSet from a release URL; JobSet comes from its
# module instead.
sed -i '/third-party\/jobset/d' "$src/trainer/overlays/manager/kustomization.yaml"
"$KUSTOMIZE" build "$src/kueue/default" > "$dir/kueue.yaml"
"$KUSTOMIZE" build "$src/jobset/default" > "$dir/jobset.yaml"
"$KUSTOMIZE" build "$src/trainer/overlays/manager" > "$dir/trainer.yaml"
"$KUSTOMIZE" build "$src/trainer/base/crds" > "$dir/trainer-crds.yaml"
"$KUSTOMIZE" build "$src/jobset/components/crd" > "$dir/jobset-crds.yaml"
apply() { k "$1" apply --server-side --force-conflicts -f "$2" >/dev/null; }
# Kueue last: its webhooks (Deployments among its integrations) refuse
# every create they cover until Kueue is up.
apply manager "$dir/trainer-crds.yaml"
apply manager "$dir/jobset-crds.yaml"
for crd in "$inventory_dir"/config/crd/bases/*.yaml; do apply manager "$crd"; done
apply manager "$dir/kueue.yaml"
for w in "${workers[@]}"; do
  apply "$w" "$dir/jobset.yaml"
  apply "$w" "$dir/trainer.yaml"
  apply "$w" "$dir/kueue.yaml"
  # Simulated GPUs: the suite's TrainJobs ask for nvidia.com/gpu.
  k "$w" patch node "$w-control-plane" --subresource=status --type=json \
    -p "[{\"op\":\"add\",\"path\":\"/status/capacity/nvidia.com~1gpu\",\"value\":\"$gpus\"},{\"op\":\"add\",\"path\":\"/status/allocatable/nvidia.com~1gpu\",\"value\":\"$gpus\"}]" >/dev/null
done
for c in "${clusters[@]}"; do
  # One CoreDNS is enough, and leaves a tenth of a CPU to the suite's pods.
  k "$c" -n kube-system scale deployment coredns --replicas=1 >/dev/null
done
for c in "${clusters[@]}"; do
  for ns in kueue-system jobset-system kubeflow-system; do
    k "$c" get ns "$ns" >/dev/null 2>&1 || continue
    k "$c" -n "$ns" wait --for=condition=Available deployment --all --timeout=600s >/dev/null
  done
done

# 4. Courier from its chart, with its webhooks behind their Service.
step "Courier (Helm chart)"
"$HELM" --kubeconfig "$dir/manager.kubeconfig" upgrade --install courier charts/courier \
  --namespace courier-system --create-namespace \
  --set image.repository="${COURIER_IMAGE%%:*}" --set image.tag="${COURIER_IMAGE#*:}" \
  --values e2e/courier-values.yaml --wait --timeout 5m

# 5. Queues and runtime everywhere; config/worker/rbac.yaml on the workers,
# and WorkerClusters on the manager with that ServiceAccount's token, for the
# workers' internal addresses.
step "configure dispatch"
bin/courier-local configure --dir "$dir" --workers 2

phase suite
step "e2e suite"
# shellcheck disable=SC2086
COURIER_E2E_MANAGER_KUBECONFIG=$dir/manager.kubeconfig \
COURIER_E2E_WORKERS="worker-1=$dir/worker-1.kubeconfig,worker-2=$dir/worker-2.kubeconfig" \
COURIER_E2E_STOP_WORKER="$root/hack/kind-worker.sh stop" \
COURIER_E2E_START_WORKER="$root/hack/kind-worker.sh start" \
go test -count=1 -timeout "${E2E_TIMEOUT:-30m}" ./e2e/... ${E2E_ARGS:-}
