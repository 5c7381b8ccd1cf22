#!/usr/bin/env bash
# Stops the dockerd that hack/kind/docker-up.sh started, and nothing else:
# hack/kind/docker-down.sh [STATE_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=${1:-$here/../../_output/kind}
pidfile=$state/dockerd.pid
[ -s "$pidfile" ] || exit 0
pid=$(cat "$pidfile")
if kill -0 "$pid" 2>/dev/null && grep -q dockerd "/proc/$pid/comm" 2>/dev/null; then
  kill "$pid"
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
fi
rm -f "$pidfile"
echo "docker-down: stopped dockerd $pid" >&2
