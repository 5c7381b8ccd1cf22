{{/* The objects keep config/worker's names: Courier's kubeconfig minting
(hack/mint-worker-kubeconfig.sh) and docs/fence.md name them, and a worker
holds one install. */}}
{{- define "courier-worker.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* objects parses one of files/ (copies of config/worker) into its
objects, as {"items": [...]}, leaving out the Namespace, which
templates/namespace.yaml renders. */}}
{{- define "courier-worker.objects" -}}
{{- $items := list -}}
{{- range $doc := regexSplit "(?m)^---$" (.ctx.Files.Get .file) -1 -}}
{{- $obj := fromYaml $doc -}}
{{- if and $obj.kind (ne $obj.kind "Namespace") -}}
{{- $items = append $items $obj -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "items" $items) -}}
{{- end -}}

{{/* place moves an object of config/worker, and the ServiceAccounts it
binds, from courier-system into the namespace value (a RoleBinding of
courier-worker-write into .bindIn), and adds the chart's labels. */}}
{{- define "courier-worker.place" -}}
{{- $ctx := .ctx -}}
{{- $obj := deepCopy .obj -}}
{{- $meta := $obj.metadata -}}
{{- if $meta.namespace -}}
{{- $_ := set $meta "namespace" (default $ctx.Values.namespace .bindIn) -}}
{{- end -}}
{{- $_ := set $meta "labels" (merge (default dict $meta.labels) (include "courier-worker.labels" $ctx | fromYaml)) -}}
{{- range $obj.subjects -}}
{{- if eq .kind "ServiceAccount" -}}
{{- $_ := set . "namespace" $ctx.Values.namespace -}}
{{- end -}}
{{- end -}}
{{- toYaml $obj -}}
{{- end -}}
