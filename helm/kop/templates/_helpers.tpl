{{/* Names and labels, as `helm create` makes them. */}}
{{- define "kop.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The StatefulSet's name (its pods are <fullname>-N); short enough for the
     per-pod Service names <fullname>-N-external. */}}
{{- define "kop.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kop.headless" -}}
{{- printf "%s-headless" (include "kop.fullname" .) }}
{{- end }}

{{- define "kop.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kop.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kop.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kop.labels" -}}
helm.sh/chart: {{ include "kop.chart" . }}
{{ include "kop.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The DNS suffix after <pod>: <headless>.<namespace>.svc[.<clusterDomain>] */}}
{{- define "kop.podDomain" -}}
{{- printf "%s.%s.svc" (include "kop.headless" .) .Release.Namespace }}
{{- with .Values.clusterDomain }}.{{ . }}{{ end }}
{{- end }}

{{/* Where Secrets are mounted; kop.toml refers to files under them. */}}
{{- define "kop.authDir" -}}/etc/kop/pulsar-auth{{- end }}
{{- define "kop.tlsDir" -}}/etc/kop/pulsar-tls{{- end }}
{{- define "kop.kafkaTlsDir" -}}/etc/kop/kafka-tls{{- end }}
{{- define "kop.tokenKeyDir" -}}/etc/kop/token-key{{- end }}

{{/* The Kafka listeners beyond PLAINTEXT on ports.kafka: name -> port (0 left out). */}}
{{- define "kop.extraListeners" -}}
{{- $k := .Values.kafkaSecurity }}
{{- $l := dict }}
{{- with $k.saslSslPort }}{{ $_ := set $l "SASL_SSL" . }}{{ end }}
{{- with $k.saslPlaintextPort }}{{ $_ := set $l "SASL_PLAINTEXT" . }}{{ end }}
{{- with $k.sslPort }}{{ $_ := set $l "SSL" . }}{{ end }}
{{- toJson $l }}
{{- end }}

{{/* The Secret holding the admin HTTP's bearer token (adminToken). */}}
{{- define "kop.adminTokenSecret" -}}
{{- .Values.adminToken.existingSecret | default (printf "%s-admin-token" (include "kop.fullname" .)) }}
{{- end }}

{{/* The Secret with the Kafka listeners' certificate: kafkaSecurity.tls.secretName, or
     the one cert-manager fills when tls.certManager is on; "" for none. */}}
{{- define "kop.kafkaTlsSecret" -}}
{{- $t := .Values.kafkaSecurity.tls }}
{{- if $t.secretName }}{{ $t.secretName }}
{{- else if $t.certManager.enabled }}{{ printf "%s-kafka-tls" (include "kop.fullname" .) }}
{{- end }}
{{- end }}

{{/* The Secret holding the instances' cluster secret (clusterSecret). */}}
{{- define "kop.clusterSecretName" -}}
{{- .Values.clusterSecret.existingSecret | default (printf "%s-cluster-secret" (include "kop.fullname" .)) }}
{{- end }}

{{/* A Secret of one random value, made at install and kept across upgrades (lookup reads
     the value the release's Secret holds). Arguments: (list $ name key description). */}}
{{- define "kop.generatedSecret" -}}
{{- $ := index . 0 }}{{- $name := index . 1 }}{{- $key := index . 2 }}
{{- $value := randAlphaNum 48 }}
{{- with lookup "v1" "Secret" $.Release.Namespace $name }}
{{- with index (.data | default dict) $key }}{{ $value = b64dec . }}{{ end }}
{{- end }}
# {{ index . 3 }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ $name }}
  labels:
    {{- include "kop.labels" $ | nindent 4 }}
type: Opaque
data:
  {{ $key }}: {{ $value | b64enc | quote }}
{{- end }}

{{/* The Secret holding kop's Pulsar credential: token and oauth2 only. */}}
{{- define "kop.authSecret" -}}
{{- if has .Values.pulsar.auth.plugin (list "token" "oauth2") }}{{ .Values.pulsar.auth.secretName }}{{ end }}
{{- end }}

{{- define "kop.authKey" -}}
{{- $a := .Values.pulsar.auth }}
{{- $a.secretKey | default (ternary "credentials.json" "token" (eq $a.plugin "oauth2")) }}
{{- end }}

{{/* The settings kop.toml holds: the structured values, then the free-form `config`
     (values.schema.json keeps their keys apart). Rendered as TOML by kop.toml below. */}}
{{- define "kop.settings" -}}
{{- $p := .Values.pulsar }}
{{- $s := dict
  "listen_host" "0.0.0.0"
  "port" .Values.ports.kafka
  "admin_host" "0.0.0.0"
  "admin_port" .Values.ports.admin
  "schema_registry_host" "0.0.0.0"
  "schema_registry_port" (.Values.ports.schemaRegistry | default 0)
  "pulsar_service_url" $p.serviceUrl
  "pulsar_http_url" $p.httpUrl
  "tenant" $p.tenant
  "namespace" $p.namespace
  "system_namespace" $p.systemNamespace
  "pulsar_auth_plugin" $p.auth.plugin
  "pulsar_tls_hostname_verification" $p.tls.hostnameVerification }}
{{- with $p.listenerName }}{{ $_ := set $s "pulsar_listener_name" . }}{{ end }}
{{- $authFile := printf "%s/%s" (include "kop.authDir" .) (include "kop.authKey" .) }}
{{- if eq $p.auth.plugin "token" }}
{{- $_ := set $s "pulsar_auth_params" (printf "file://%s" $authFile) }}
{{- else if eq $p.auth.plugin "oauth2" }}
{{- $o := dict "type" "client_credentials" "issuerUrl" $p.auth.oauth2.issuerUrl "privateKey" (printf "file://%s" $authFile) }}
{{- with $p.auth.oauth2.audience }}{{ $_ := set $o "audience" . }}{{ end }}
{{- with $p.auth.oauth2.scope }}{{ $_ := set $o "scope" . }}{{ end }}
{{- $_ := set $s "pulsar_auth_params" (toJson $o) }}
{{- end }}
{{- $tls := include "kop.tlsDir" . }}
{{- with $p.tls.trustCertsKey }}{{ $_ := set $s "pulsar_tls_trust_certs_file" (printf "%s/%s" $tls .) }}{{ end }}
{{- with $p.tls.certKey }}{{ $_ := set $s "pulsar_tls_cert_file" (printf "%s/%s" $tls .) }}{{ end }}
{{- with $p.tls.keyKey }}{{ $_ := set $s "pulsar_tls_key_file" (printf "%s/%s" $tls .) }}{{ end }}
{{- $k := .Values.kafkaSecurity }}
{{- $x := .Values.externalAccess }}
{{- $extra := include "kop.extraListeners" . | fromJson }}
{{- $protocols := list "PLAINTEXT" "SSL" "SASL_PLAINTEXT" "SASL_SSL" }}
{{- if and $x.enabled (not (has $x.protocol $protocols)) }}
{{- fail (printf "externalAccess.protocol %q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL" $x.protocol) }}
{{- end }}
{{- if or $extra (not $k.plaintext) $x.enabled }}
{{- $listeners := list }}
{{- if $k.plaintext }}{{ $listeners = append $listeners (printf "PLAINTEXT://0.0.0.0:%v" .Values.ports.kafka) }}{{ end }}
{{- range $name := keys $extra | sortAlpha }}
{{- $listeners = append $listeners (printf "%s://0.0.0.0:%v" $name (index $extra $name)) }}
{{- end }}
{{- if not $listeners }}{{ fail "kafkaSecurity: no listener left (plaintext false and no port)" }}{{ end }}
{{- if $x.enabled }}
{{- $listeners = append $listeners (printf "EXTERNAL://0.0.0.0:%v" $x.containerPort) }}
{{- $_ := set $s "listener_security_protocol_map" (printf "EXTERNAL:%s" $x.protocol) }}
{{- end }}
{{- $_ := set $s "listeners" (join "," $listeners) }}
{{- $_ := set $s "sasl_enabled_mechanisms" (join "," $k.mechanisms) }}
{{- end }}
{{- if or $k.saslSslPort $k.sslPort (and $x.enabled (has $x.protocol (list "SSL" "SASL_SSL"))) }}
{{- if not (include "kop.kafkaTlsSecret" $) }}{{ fail "kafkaSecurity: an SSL or SASL_SSL port (or externalAccess.protocol) needs kafkaSecurity.tls.secretName or tls.certManager.enabled" }}{{ end }}
{{- end }}
{{- with include "kop.kafkaTlsSecret" $ }}
{{- $dir := include "kop.kafkaTlsDir" $ }}
{{- $_ := set $s "ssl_cert_file" (printf "%s/%s" $dir $k.tls.certKey) }}
{{- $_ := set $s "ssl_key_file" (printf "%s/%s" $dir $k.tls.keyKey) }}
{{- with $k.tls.caKey }}{{ $_ := set $s "ssl_ca_file" (printf "%s/%s" $dir .) }}{{ end }}
{{- $_ := set $s "ssl_client_auth" $k.tls.clientAuth }}
{{- end }}
{{- with $k.tokenKey.secretName }}
{{- $file := printf "file://%s/%s" (include "kop.tokenKeyDir" $) $k.tokenKey.secretKey }}
{{- if $k.tokenKey.public }}
{{- $_ := set $s "auth_token_public_key" $file }}
{{- $_ := set $s "auth_token_public_alg" $k.tokenKey.publicAlg }}
{{- else }}
{{- $_ := set $s "auth_token_secret_key" $file }}
{{- end }}
{{- end }}
{{- with $k.superuserRoles }}{{ $_ := set $s "superuser_roles" (join "," .) }}{{ end }}
{{- toJson (merge $s .Values.config) }}
{{- end }}

{{/* kop.toml: one `key = value` line per setting, sorted. A JSON string, number,
     boolean or array of them is also a TOML value. */}}
{{- define "kop.toml" -}}
# kop.toml, rendered by the kop Helm chart. node_id and advertised_host (and, with
# externalAccess, advertised_listeners) come per pod from KOP_* in the environment.
{{- $s := include "kop.settings" . | fromJson }}
{{- range $k := keys $s | sortAlpha }}
{{ $k }} = {{ index $s $k | toJson }}
{{- end }}
{{- end }}

{{/* The pods' ServiceAccount: the release's own (serviceAccount.create), a named one, or
     "" for the namespace's default. */}}
{{- define "kop.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- .Values.serviceAccount.name | default (include "kop.fullname" .) }}
{{- else }}
{{- .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The `helm test` pod as a NetworkPolicy peer (nothing when tests are off). */}}
{{- define "kop.helmTestPeer" -}}
{{- if .Values.tests.enabled }}
- podSelector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
      app.kubernetes.io/component: helm-test
{{- end }}
{{- end }}
