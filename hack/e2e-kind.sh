#!/usr/bin/env bash
# Runs Courier's e2e suite on kind clusters, for machines with Docker: a
# manager and two workers, the pinned Kueue, Trainer and JobSet releases,
# and Courier from its chart. `make test-e2e` runs the same suite on local
# process clusters where there is no Docker.
#
# Needs: docker, kind, kubectl, helm, go. Usage: hack/e2e-kind.sh [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=$root/_output/kind
mkdir -p "$dir"
tools=$root/hack/tools/go.mod
version() { awk -v m="$1" '$1 == m { print $2; exit }' "$tools"; }
KUEUE=$(version sigs.k8s.io/kueue)
TRAINER=$(version github.com/kubeflow/trainer/v2)
JOBSET=$(version sigs.k8s.io/jobset)
clusters=(manager worker-1 worker-2)
keep=${1:-}

cleanup() {
  rc=$?
  if [ "$rc" -ne 0 ]; then
    mkdir -p "$root/_artifacts/kind"
    for c in "${clusters[@]}"; do kind export logs "$root/_artifacts/kind/$c" --name "$c" >/dev/null 2>&1 || true; done
  fi
  if [ "$keep" != "--keep" ]; then
    for c in "${clusters[@]}"; do kind delete cluster --name "$c" >/dev/null 2>&1 || true; done
  fi
  exit "$rc"
}
trap cleanup EXIT

for c in "${clusters[@]}"; do
  kind create cluster --name "$c" --wait 120s
  kind get kubeconfig --name "$c" > "$dir/$c.kubeconfig"
  # Courier runs in a pod on the manager and reaches workers on kind's network.
  kind get kubeconfig --internal --name "$c" > "$dir/$c.internal.kubeconfig"
done

# Trainer's manager overlay brings its own JobSet release into
# kubeflow-system; a second JobSet would run two controllers. Check that it
# is the JobSet version we pin.
trainer_dir=$(cd hack/tools && go list -m -f '{{.Dir}}' github.com/kubeflow/trainer/v2)
if ! grep -q "jobset/releases/download/$JOBSET/" "$trainer_dir/manifests/third-party/jobset/kustomization.yaml"; then
  echo "Trainer $TRAINER installs another JobSet than the pinned $JOBSET; align hack/tools/go.mod" >&2
  exit 1
fi

k() { kubectl --kubeconfig "$dir/$1.kubeconfig" "${@:2}"; }
for c in "${clusters[@]}"; do
  k "$c" apply --server-side -f "https://github.com/kubernetes-sigs/kueue/releases/download/$KUEUE/manifests.yaml"
  k "$c" apply --server-side -k "github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=$TRAINER"
done
for c in "${clusters[@]}"; do
  for ns in kueue-system kubeflow-system; do
    k "$c" -n "$ns" wait --for=condition=Available deployment --all --timeout=300s
  done
done

docker build -t courier:e2e .
kind load docker-image courier:e2e --name manager
helm --kubeconfig "$dir/manager.kubeconfig" upgrade --install courier charts/courier \
  --namespace courier-system --create-namespace \
  --set image.repository=courier --set image.tag=e2e --values e2e/courier-values.yaml --wait --timeout 3m

# Queues and runtime everywhere; config/worker/rbac.yaml on the workers, and
# WorkerClusters on the manager with that ServiceAccount's token.
go build -o bin/courier-local ./cmd/courier-local
bin/courier-local configure --dir "$dir" --workers 2

COURIER_E2E_MANAGER_KUBECONFIG=$dir/manager.kubeconfig \
COURIER_E2E_WORKERS="worker-1=$dir/worker-1.kubeconfig,worker-2=$dir/worker-2.kubeconfig" \
COURIER_E2E_STOP_WORKER="$root/hack/kind-worker.sh stop" \
COURIER_E2E_START_WORKER="$root/hack/kind-worker.sh start" \
go test -count=1 -timeout 30m ./e2e/...
