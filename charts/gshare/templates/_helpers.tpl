{{/* Labels every object carries. */}}
{{- define "gshare.labels" -}}
app.kubernetes.io/part-of: gshare
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{- define "gshare.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The restricted Pod Security shape, for a pod and for each container. */}}
{{- define "gshare.podSecurity" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "gshare.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The database URL, from the Secret the chosen database mode provides. */}}
{{- define "gshare.databaseEnv" -}}
- name: GSHARE_DATABASE_URL
  valueFrom:
    secretKeyRef:
{{- if eq .Values.database.mode "cloudnativepg" }}
      name: gshare-db-app
      key: uri
{{- else }}
      name: {{ .Values.database.external.secretName }}
      key: {{ .Values.database.external.secretKey }}
{{- end }}
{{- end }}

{{/* What the API, the worker and the migration share: the database, a writable data dir. */}}
{{- define "gshare.commonEnv" -}}
{{ include "gshare.databaseEnv" . }}
- name: GSHARE_DATA_DIR
  value: /var/lib/gshare
- name: GSHARE_SESSIONS_NAMESPACE
  value: {{ .Values.namespaces.sessions }}
- name: GSHARE_SECRETS_NAMESPACE
  value: {{ .Values.namespaces.secrets }}
{{- if .Values.localCluster.name }}
{{- /* The worker registers it; the API refuses to register or remove it by hand. */}}
- name: GSHARE_LOCAL_CLUSTER
  value: {{ .Values.localCluster.name | quote }}
- name: GSHARE_LOCAL_SESSIONS_DOMAIN
  value: {{ .Values.sessions.domain | quote }}
{{- end }}
{{- end }}

{{/* The metrics endpoint of a container: its environment and its port. */}}
{{- define "gshare.metricsEnv" -}}
{{- if .Values.metrics.enabled }}
- name: GSHARE_METRICS_HOST
  value: 0.0.0.0
- name: GSHARE_METRICS_PORT
  value: {{ .Values.metrics.port | quote }}
{{- end }}
{{- end }}

{{- define "gshare.metricsPort" -}}
{{- if .Values.metrics.enabled }}
- name: metrics
  containerPort: {{ .Values.metrics.port }}
{{- end }}
{{- end }}

{{/* Where every control plane writes an operator's short-lived token (key `token`): the
Secret gshare-operator-token in the system namespace, as src/gshare/clusters/kube.py names it. */}}
{{- define "gshare.operatorTokenSecret" -}}
gshare-operator-token
{{- end }}

{{/* "true" when the values say where the console's TLS ends: at its Ingress
(console.tlsSecretName) or in front of it (console.tlsTerminatedInFront); empty otherwise. */}}
{{- define "gshare.consoleTls" -}}
{{- if or .Values.console.tlsSecretName .Values.console.tlsTerminatedInFront }}true{{ end }}
{{- end }}

{{/* GSHARE_COOKIE_SECURE: always over HTTPS, which console.https states or, left empty, the TLS
values imply; otherwise auto (Secure on the requests that came over HTTPS). */}}
{{- define "gshare.cookieSecure" -}}
{{- $https := dig "https" nil .Values.console }}
{{- if kindIs "invalid" $https }}
{{- $https = eq (include "gshare.consoleTls" .) "true" }}
{{- end }}
{{- ternary "always" "auto" $https }}
{{- end }}

{{/* Metadata that makes `helm uninstall` leave a resource that holds data in place
(namespaces.keepOnUninstall); a later install of the same release takes it over. */}}
{{- define "gshare.keepOnUninstall" -}}
{{- if .Values.namespaces.keepOnUninstall -}}
annotations:
  helm.sh/resource-policy: keep
{{- end }}
{{- end }}
