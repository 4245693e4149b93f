{{/* The image reference of a component: huygens.image (list . "huygens-agent"). */}}
{{- define "huygens.image" -}}
{{- $root := index . 0 -}}
{{- printf "%s/%s:%s" $root.Values.image.registry (index . 1) (default $root.Chart.AppVersion $root.Values.image.tag) -}}
{{- end -}}

{{/* Labels of every object: the component name plus Helm's recommended labels. */}}
{{- define "huygens.labels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/part-of: huygens
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
{{- end -}}

{{/* The system namespaces: the release namespace and .Values.systemNamespaces, once each, as a flow list. */}}
{{- define "huygens.systemNamespaces" -}}
{{- $all := prepend .Values.systemNamespaces .Release.Namespace | uniq -}}
[{{ join ", " $all }}]
{{- end -}}

{{/* env entries that point the in-cluster client at .Values.apiServer (none when unset). */}}
{{- define "huygens.apiServerEnv" -}}
{{- if .Values.apiServer.host }}
- name: KUBERNETES_SERVICE_HOST
  value: {{ .Values.apiServer.host | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ required "apiServer.port is required with apiServer.host" .Values.apiServer.port | quote }}
{{- end }}
{{- end -}}

{{/* A pod's nodeSelector: the global one merged with the component's (index . 1). */}}
{{- define "huygens.nodeSelector" -}}
{{- $root := index . 0 -}}
{{- $sel := merge (deepCopy (index . 1)) $root.Values.nodeSelector -}}
{{- if $sel }}
nodeSelector:
  {{- toYaml $sel | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The --bind-address argument of bindAddress for an args list, after a ", " (empty for every address). */}}
{{- define "huygens.bindAddressArg" -}}
{{- if eq .Values.bindAddress "podIP" -}}
, "--bind-address=$(POD_IP)"
{{- else if .Values.bindAddress -}}
, {{ printf "--bind-address=%s" .Values.bindAddress | quote }}
{{- end -}}
{{- end -}}

{{/* The env entry POD_IP (status.podIP, the downward API) when bindAddress is podIP. */}}
{{- define "huygens.podIpEnv" -}}
{{- if eq .Values.bindAddress "podIP" -}}
- name: POD_IP
  valueFrom: {fieldRef: {fieldPath: status.podIP}}
{{- end }}
{{- end -}}
