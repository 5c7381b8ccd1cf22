{{/* Names follow the usual fullname rule: the release name, with the chart's
name appended unless it already contains it, cut to 63 characters. */}}
{{- define "courier.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "courier.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selector labels never change across upgrades: a Deployment's selector
is immutable. */}}
{{- define "courier.selectorLabels" -}}
app.kubernetes.io/name: {{ include "courier.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "courier.labels" -}}
{{ include "courier.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "courier.serviceAccountName" -}}
{{- default (include "courier.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The objects Courier manages or reads by name, as a dict. Suffixes keep
the Configuration's defaults for a release named "courier". */}}
{{- define "courier.objectNames" -}}
{{- $fullname := include "courier.fullname" . -}}
config: {{ printf "%s-config" $fullname }}
metricsService: {{ printf "%s-metrics" $fullname | trunc 63 | trimSuffix "-" }}
webhookService: {{ printf "%s-webhook-service" $fullname | trunc 63 | trimSuffix "-" }}
secret: {{ printf "%s-webhook-server-cert" $fullname }}
mutating: {{ printf "%s-mutating-webhook-configuration" $fullname }}
validating: {{ printf "%s-validating-webhook-configuration" $fullname }}
issuer: {{ printf "%s-selfsigned-issuer" $fullname }}
certificate: {{ printf "%s-serving-cert" $fullname }}
extraRole: {{ printf "%s-extra" $fullname }}
metricsReader: {{ printf "%s-metrics-reader" $fullname }}
metricsCertificate: {{ printf "%s-metrics-cert" $fullname }}
metricsSecret: {{ printf "%s-metrics-server-cert" $fullname }}
{{- end -}}

{{/* Whether metrics are served over HTTPS to authorized clients: the
Configuration's metrics.secureServing if given, else metrics.secureServing. */}}
{{- define "courier.metricsSecure" -}}
{{- $metrics := default dict (default dict .Values.configuration).metrics -}}
{{- if hasKey $metrics "secureServing" -}}
{{- toString $metrics.secureServing -}}
{{- else -}}
{{- toString .Values.metrics.secureServing -}}
{{- end -}}
{{- end -}}

{{/* Where the pod mounts the metrics certificate that cert-manager
issues beside the webhook's: only with webhooks under CertManager and HTTPS
metrics. Empty otherwise. */}}
{{- define "courier.metricsCertDir" -}}
{{- if and .Values.webhook.enable (eq .Values.webhook.certManagement "CertManager") (eq (include "courier.metricsSecure" .) "true") -}}
/tmp/k8s-metrics-server/serving-certs
{{- end -}}
{{- end -}}

{{/* The Configuration file: the user's configuration value with the fields
the chart owns set over it, so that Courier manages the objects this
release created. */}}
{{- define "courier.configuration" -}}
{{- $names := include "courier.objectNames" . | fromYaml -}}
{{- $cfg := deepCopy (default dict .Values.configuration) -}}
{{- $le := default dict $cfg.leaderElection -}}
{{- if and (gt (int .Values.replicas) 1) (eq (toString $le.leaderElect) "false") -}}
{{- fail "configuration.leaderElection.leaderElect is false with replicas > 1: every replica would dispatch the same jobs. Remove it, or set replicas to 1." -}}
{{- end -}}
{{- if gt (int .Values.replicas) 1 -}}
{{- $_ := set $le "leaderElect" true -}}
{{- end -}}
{{- if $le -}}
{{- $_ := set $cfg "leaderElection" $le -}}
{{- end -}}
{{- $_ := set $cfg "namespace" .Release.Namespace -}}
{{- /* The container ports follow metrics.port and health.port, and
HTTPS metrics.secureServing; what configuration sets itself (a local
process, say) is kept. */ -}}
{{- $metrics := dict "bindAddress" (printf ":%d" (int .Values.metrics.port)) "secureServing" .Values.metrics.secureServing -}}
{{- with include "courier.metricsCertDir" . -}}
{{- $_ := set $metrics "certDir" . -}}
{{- end -}}
{{- /* Not merge: it would replace a false the user set. */ -}}
{{- $userMetrics := default dict $cfg.metrics -}}
{{- range $key, $value := $metrics -}}
{{- if not (hasKey $userMetrics $key) -}}
{{- $_ := set $userMetrics $key $value -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "metrics" $userMetrics -}}
{{- $_ := set $cfg "health" (merge (default dict $cfg.health) (dict "bindAddress" (printf ":%d" (int .Values.health.port)))) -}}
{{- $certManagement := ternary "Internal" "External" (eq .Values.webhook.certManagement "Internal") -}}
{{- $_ := set $cfg "webhook" (dict
  "enable" .Values.webhook.enable
  "port" (int .Values.webhook.port)
  "certDir" "/tmp/k8s-webhook-server/serving-certs"
  "certManagement" $certManagement
  "serviceName" $names.webhookService
  "secretName" $names.secret
  "mutatingConfigurationName" $names.mutating
  "validatingConfigurationName" $names.validating) -}}
apiVersion: config.courier.dev/v1alpha1
kind: Configuration
{{ toYaml $cfg }}
{{- end -}}

{{/* The webhook entries' selectors, per the contract: only jobs with a
queue, never in kube-system or Courier's namespace, so that Courier being
down blocks no unrelated workload. */}}
{{- define "courier.jobWebhookSelectors" -}}
objectSelector:
  matchExpressions:
  - {key: kueue.x-k8s.io/queue-name, operator: Exists}
namespaceSelector:
  matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: [kube-system, {{ .Release.Namespace }}]
{{- end -}}

{{- define "courier.webhookClientConfig" -}}
{{- $names := include "courier.objectNames" .ctx | fromYaml -}}
clientConfig:
  service:
    name: {{ $names.webhookService }}
    namespace: {{ .ctx.Release.Namespace }}
    path: {{ .path }}
    port: 443
{{- end -}}

{{- define "courier.webhookAnnotations" -}}
{{- if eq .Values.webhook.certManagement "CertManager" -}}
{{- $names := include "courier.objectNames" . | fromYaml -}}
cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace $names.certificate }}
{{- end -}}
{{- end -}}

{{/* rules renames the resourceNames of generated rules after the release;
unless Courier manages its certificate itself, drops the rules that only
certificate management needs: writing webhook configurations and its
Secret; and with plain HTTP metrics, the token and access reviews that
only secure metrics make. */}}
{{- define "courier.rules" -}}
{{- $ctx := .ctx -}}
{{- $names := include "courier.objectNames" $ctx | fromYaml -}}
{{- $renamed := dict
  "courier-mutating-webhook-configuration" $names.mutating
  "courier-validating-webhook-configuration" $names.validating
  "courier-webhook-server-cert" $names.secret -}}
{{- $internal := and $ctx.Values.webhook.enable (eq $ctx.Values.webhook.certManagement "Internal") -}}
{{- $secureMetrics := eq (include "courier.metricsSecure" $ctx) "true" -}}
{{- $out := list -}}
{{- range $rule := .rules -}}
{{- $rule = deepCopy $rule -}}
{{- if and (not $secureMetrics) (or (has "tokenreviews" $rule.resources) (has "subjectaccessreviews" $rule.resources)) -}}
{{- $rule = dict -}}
{{- else if and (not $internal) (has "admissionregistration.k8s.io" $rule.apiGroups) -}}
{{- $rule = dict -}}
{{- else if and (not $internal) (has "secrets" $rule.resources) -}}
{{- $verbs := without $rule.verbs "create" "update" -}}
{{- if $verbs -}}
{{- $_ := set $rule "verbs" $verbs -}}
{{- else -}}
{{- $rule = dict -}}
{{- end -}}
{{- end -}}
{{- if $rule.resourceNames -}}
{{- $names := list -}}
{{- range $rule.resourceNames -}}
{{- $names = append $names (get $renamed . | default .) -}}
{{- end -}}
{{- $_ := set $rule "resourceNames" $names -}}
{{- end -}}
{{- if $rule -}}
{{- $out = append $out $rule -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}
