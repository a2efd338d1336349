{{/* Rules across values that values.schema.json cannot state; each failure says what to set.
templates/validate.yaml includes it, so that every render checks them. */}}
{{- define "gshare.validate" -}}
{{- $https := dig "https" nil .Values.console }}
{{- if and .Values.controlPlane.enabled (kindIs "bool" $https) $https (not (include "gshare.consoleTls" .)) }}
{{- fail "console.https is true, so the sign-in cookie is always marked Secure, but nothing says the console is served over TLS: browsers would drop the cookie and nobody could sign in. Set console.tlsSecretName to the Secret of a certificate for console.domain (TLS at the ingress), or console.tlsTerminatedInFront: true when a load balancer or proxy in front of the ingress ends TLS, or console.https: false for a trial over plain HTTP." }}
{{- end }}
{{- end }}
