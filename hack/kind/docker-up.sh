#!/usr/bin/env bash
# Prepares the Docker engine the kind path needs, and says whether it started
# one: hack/kind/docker-up.sh [STATE_DIR]
#
# - A running engine whose default runtime starts privileged containers is
#   used as it is.
# - Otherwise: installs Debian's docker.io when dockerd is absent, installs
#   hack/kind/runc-nocap as /usr/local/sbin/courier-runc-nocap, registers it
#   in /etc/docker/daemon.json as the default runtime (machines whose
#   capability bounding set lacks CAP_SYS_RESOURCE cannot start privileged
#   containers with plain runc), and starts dockerd. It writes
#   STATE_DIR/dockerd.pid then, and hack/kind/docker-down.sh stops exactly that.
#
# Idempotent: a second run finds the engine up and does nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=${1:-$here/../../_output/kind}
mkdir -p "$state"
log() { echo "docker-up: $*" >&2; }

# needs_wrapper: the capability bounding set lacks CAP_SYS_RESOURCE (bit 24).
needs_wrapper() {
  local bnd
  bnd=$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)
  [ $(( (0x$bnd >> 24) & 1 )) -eq 0 ]
}
# privileged_ok: the engine's default runtime can start privileged containers.
privileged_ok() {
  ! needs_wrapper || [ "$(docker info --format '{{.DefaultRuntime}}' 2>/dev/null)" = runc-nocap ]
}

if timeout 20 docker info >/dev/null 2>&1; then
  if privileged_ok; then log "Docker engine up"; exit 0; fi
  log "the running Docker engine cannot start privileged containers;"
  log "register $here/runc-nocap as its default runtime (see docs/local-clusters.md)"
  exit 1
fi

if [ "$(id -u)" != 0 ]; then log "no Docker engine, and preparing one needs root"; exit 1; fi

if ! command -v dockerd >/dev/null; then
  log "installing docker.io"
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get update -qq
  timeout 600 apt-get install -y -qq docker.io >/dev/null
fi
# A docker.io install may have started its own engine (on machines with
# systemd); use it if so.
if timeout 20 docker info >/dev/null 2>&1 && privileged_ok; then log "Docker engine up"; exit 0; fi

install -m 0755 "$here/runc-nocap" /usr/local/sbin/courier-runc-nocap
mkdir -p /etc/docker
conf=/etc/docker/daemon.json
want='{"runtimes":{"runc-nocap":{"path":"/usr/local/sbin/courier-runc-nocap"}},"default-runtime":"runc-nocap"}'
if [ ! -s "$conf" ]; then
  echo "$want" > "$conf"
elif ! grep -q courier-runc-nocap "$conf"; then
  command -v jq >/dev/null || timeout 300 apt-get install -y -qq jq >/dev/null
  jq --argjson w "$want" '. * $w' "$conf" > "$conf.new" && mv "$conf.new" "$conf"
fi

if timeout 20 docker info >/dev/null 2>&1; then
  log "a Docker engine is up but not configured with runc-nocap: restart it to pick up $conf"
  exit 1
fi
log "starting dockerd (log: $state/dockerd.log)"
# Containers inherit its priority: kind nodes run niced beside other work.
nohup nice -n "${DOCKERD_NICE:-10}" dockerd --pidfile "$state/dockerd.pid" >"$state/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 60); do
  if timeout 5 docker info >/dev/null 2>&1; then log "Docker engine up (started here, pid $(cat "$state/dockerd.pid"))"; exit 0; fi
  sleep 1
done
log "dockerd did not come up in 60s; see $state/dockerd.log"
exit 1
