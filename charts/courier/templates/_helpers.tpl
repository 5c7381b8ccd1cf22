{{- define "courier.labels" -}}
app.kubernetes.io/name: courier
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
