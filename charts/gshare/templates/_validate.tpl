{{/* Rules across values that values.schema.json cannot state; each failure says what to set.
templates/validate.yaml includes it, so that every render checks them. */}}
{{- define "gshare.validate" -}}
{{- $https := dig "https" nil .Values.console }}
{{- if and .Values.controlPlane.enabled (kindIs "bool" $https) $https (not (include "gshare.consoleTls" .)) }}
{{- fail "console.https is true, so the sign-in cookie is always marked Secure, but nothing says the console is served over TLS: browsers would drop the cookie and nobody could sign in. Set console.tlsSecretName to the Secret of a certificate for console.domain (TLS at the ingress), or console.tlsTerminatedInFront: true when a load balancer or proxy in front of the ingress ends TLS, or console.https: false for a trial over plain HTTP." }}
{{- end }}
{{- if not .Values.controlPlane.enabled }}
{{- if not .Values.operatorConfig.signinUrl }}
{{- fail "controlPlane.enabled is false, so this release is an added cluster whose session pages send browsers to the control plane's console to sign in, and console.domain here is not that console. Set operatorConfig.signinUrl to the control plane's session-entry route, https://<the console's domain>/api/v1/session-entry." }}
{{- end }}
{{- if eq .Values.sessions.domain "sessions.gshare.example.org" }}
{{- fail "controlPlane.enabled is false, so this release is an added cluster, and sessions.domain is still the placeholder sessions.gshare.example.org. Set it to this cluster's session domain (wildcard DNS and certificate on its ingress), the domain the cluster is registered with." }}
{{- end }}
{{- if eq .Values.operatorConfig.apiUrl "http://gshare-api.gshare-system.svc" }}
{{- fail "controlPlane.enabled is false, so this release is an added cluster, and operatorConfig.apiUrl is still the all-in-one's in-cluster address of the API, which does not run here. Set it to the control plane's API as this cluster reaches it (https://<the console's domain>)." }}
{{- end }}
{{- end }}
{{- end }}
