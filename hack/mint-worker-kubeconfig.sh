#!/usr/bin/env bash
# Mints a kubeconfig for Courier's ServiceAccount on a worker cluster and
# prints the manager-side Secret that a WorkerCluster's
# spec.kubeconfig.secretRef names (key "kubeconfig"): see
# docs/worker-clusters.md. Apply config/worker/rbac.yaml on the worker first.
#
#   hack/mint-worker-kubeconfig.sh --context worker-1 > worker-1-kubeconfig.yaml
#   kubectl --context manager apply -f worker-1-kubeconfig.yaml
#
# The token is a bound token from `kubectl create token` (--duration, 8760h
# by default; mint a new one before it expires), or with --long-lived the
# token of a kubernetes.io/service-account-token Secret, valid until that
# Secret is deleted.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: mint-worker-kubeconfig.sh --context CONTEXT [options]

  --context CONTEXT          kubeconfig context of the worker cluster (required)
  --namespace NS             namespace of Courier's ServiceAccount on the worker (courier-system)
  --service-account NAME     Courier's ServiceAccount on the worker (courier)
  --duration DURATION        lifetime of a bound token, e.g. 720h (8760h)
  --long-lived               use a service-account-token Secret instead of a bound token
  --token-secret NAME        that Secret's name (courier-token, as config/worker/rbac.yaml creates)
  --server URL               worker API address as Courier's pod reaches it (the context's server)
  --name NAME                name of the worker in the kubeconfig (the context)
  --secret-name NAME         name of the manager Secret (NAME-kubeconfig)
  --manager-namespace NS     Courier's namespace on the manager (courier-system)
USAGE
}

die() { echo "mint-worker-kubeconfig: $*" >&2; exit 1; }

context="" namespace=courier-system service_account=courier duration=8760h
long_lived=false token_secret=courier-token server="" name="" secret_name=""
manager_namespace=courier-system
while [ $# -gt 0 ]; do
  case "$1" in
    --context|--namespace|--service-account|--duration|--token-secret|--server|--name|--secret-name|--manager-namespace)
      [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"
      case "$1" in
        --context) context=$2 ;;
        --namespace) namespace=$2 ;;
        --service-account) service_account=$2 ;;
        --duration) duration=$2 ;;
        --token-secret) token_secret=$2 ;;
        --server) server=$2 ;;
        --name) name=$2 ;;
        --secret-name) secret_name=$2 ;;
        --manager-namespace) manager_namespace=$2 ;;
      esac
      shift 2 ;;
    --long-lived) long_lived=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument $1" ;;
  esac
done
[ -n "$context" ] || { usage >&2; die "--context is required: the worker's kubeconfig context"; }
name=${name:-$context}
secret_name=${secret_name:-$name-kubeconfig}

k() { kubectl --context "$context" "$@"; }

# The CA must be inline: Courier refuses kubeconfigs that reference files.
ca=$(k config view --minify --raw -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
[ -n "$ca" ] || die "context $context has no certificate-authority-data; Courier needs the worker's CA inline (run 'kubectl config view --flatten' to embed it)"
if [ -z "$server" ]; then
  server=$(k config view --minify -o 'jsonpath={.clusters[0].cluster.server}')
  [ -n "$server" ] || die "context $context has no server; pass --server"
fi

if [ "$long_lived" = true ]; then
  k apply -f - >/dev/null <<SECRET
apiVersion: v1
kind: Secret
metadata:
  name: $token_secret
  namespace: $namespace
  annotations:
    kubernetes.io/service-account.name: $service_account
type: kubernetes.io/service-account-token
SECRET
  # The token controller fills the Secret in shortly after it is created.
  token=""
  for _ in $(seq 1 30); do
    token=$(k -n "$namespace" get secret "$token_secret" -o 'jsonpath={.data.token}')
    [ -n "$token" ] && break
    sleep 1
  done
  [ -n "$token" ] || die "Secret $namespace/$token_secret on $context got no token within 30s; does ServiceAccount $namespace/$service_account exist?"
  token=$(printf '%s' "$token" | base64 -d)
else
  token=$(k -n "$namespace" create token "$service_account" --duration "$duration")
  [ -n "$token" ] || die "kubectl create token $namespace/$service_account on $context returned no token"
fi

kubeconfig=$(cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: "$server"
    certificate-authority-data: "$ca"
users:
- name: courier
  user:
    token: "$token"
contexts:
- name: $name
  context:
    cluster: $name
    user: courier
current-context: $name
KUBECONFIG
)

cat <<MANIFEST
apiVersion: v1
kind: Secret
metadata:
  name: $secret_name
  namespace: $manager_namespace
type: Opaque
data:
  kubeconfig: $(printf '%s\n' "$kubeconfig" | base64 | tr -d '\n')
MANIFEST
