#!/usr/bin/env bash
# Stops or starts a kind cluster's control-plane container: hack/kind-worker.sh stop|start NAME
set -euo pipefail
case "$1" in
  stop) docker stop "$2-control-plane" >/dev/null ;;
  start) docker start "$2-control-plane" >/dev/null
         until kubectl --kubeconfig "$(dirname "$0")/../_output/kind/$2.kubeconfig" get --raw /readyz >/dev/null 2>&1; do sleep 1; done ;;
  *) echo "usage: $0 stop|start NAME" >&2; exit 2 ;;
esac
