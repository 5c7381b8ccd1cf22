#!/usr/bin/env bash
# Stops or starts a kind cluster's control-plane container, for the e2e
# suite's lost-worker spec: hack/kind-worker.sh stop|start NAME
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kubeconfig=$root/_output/kind/$2.kubeconfig
case "$1" in
  stop) timeout 120 docker stop "$2-control-plane" >/dev/null ;;
  start)
    timeout 60 docker start "$2-control-plane" >/dev/null
    deadline=$((SECONDS + 300))
    until "$root/bin/kubectl" --kubeconfig "$kubeconfig" get --raw /readyz >/dev/null 2>&1; do
      [ $SECONDS -lt $deadline ] || { echo "$2: API server not ready after 300s" >&2; exit 1; }
      sleep 1
    done
    # The node's simulated GPUs (hack/e2e-kind.sh), in case the kubelet
    # reset its extended resources when it came back.
    gpus=${KIND_WORKER_GPUS:-32}
    if [ "$gpus" != 0 ]; then
      "$root/bin/kubectl" --kubeconfig "$kubeconfig" patch node "$2-control-plane" --subresource=status --type=json \
        -p "[{\"op\":\"add\",\"path\":\"/status/capacity/nvidia.com~1gpu\",\"value\":\"$gpus\"},{\"op\":\"add\",\"path\":\"/status/allocatable/nvidia.com~1gpu\",\"value\":\"$gpus\"}]" >/dev/null
    fi ;;
  *) echo "usage: $0 stop|start NAME" >&2; exit 2 ;;
esac
