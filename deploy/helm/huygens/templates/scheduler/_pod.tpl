{{/*
The pod spec of huygens-scheduler, shared by the standalone Deployment and the extender:
huygens.schedulerPod (list . "scheduler"|"extender" configMapName).
*/}}
{{- define "huygens.schedulerPod" -}}
{{- $root := index . 0 -}}
{{- $container := index . 1 -}}
{{- $values := $root.Values.scheduler -}}
serviceAccountName: huygens-scheduler
priorityClassName: system-cluster-critical
{{- if $values.hostNetwork }}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end }}
{{- include "huygens.nodeSelector" (list $root $values.nodeSelector) }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.image.pullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
- name: {{ $container }}
  image: {{ include "huygens.image" (list $root "huygens-scheduler") }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  args: ["--config=/etc/huygens/config.yaml", "--identity=$(POD_NAME)", "--log-level={{ $values.logLevel }}"{{ include "huygens.bindAddressArg" $root }}]
  env:
  - name: POD_NAME
    valueFrom: {fieldRef: {fieldPath: metadata.name}}
  {{- include "huygens.podIpEnv" $root | nindent 2 }}
  {{- include "huygens.apiServerEnv" $root | nindent 2 }}
  ports:
  - {name: metrics, containerPort: {{ $values.metricsPort }}}
  {{- if eq $container "extender" }}
  - {name: extender, containerPort: {{ $values.extenderPort }}}
  {{- end }}
  livenessProbe:
    httpGet: {path: /healthz, port: metrics}
    initialDelaySeconds: 15
    periodSeconds: 10
  readinessProbe:
    httpGet: {path: /readyz, port: metrics}
    periodSeconds: 5
  resources:
    {{- toYaml $values.resources | nindent 4 }}
  securityContext:
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    runAsNonRoot: true
    runAsUser: 65532
    capabilities: {drop: ["ALL"]}
    seccompProfile: {type: RuntimeDefault}
  volumeMounts:
  - {name: config, mountPath: /etc/huygens, readOnly: true}
  {{- if and (eq $container "extender") $values.extenderTLS.secretName }}
  - {name: tls, mountPath: /etc/huygens/tls, readOnly: true}
  {{- end }}
volumes:
- name: config
  configMap: {name: {{ index . 2 }}}
{{- if and (eq $container "extender") $values.extenderTLS.secretName }}
- name: tls
  secret: {secretName: {{ $values.extenderTLS.secretName }}}
{{- end }}
{{- end -}}

{{/* The configuration both modes share (docs/scheduler-service.md lists every field). */}}
{{- define "huygens.schedulerConfig" -}}
apiVersion: huygens.io/v1alpha1
kind: SchedulerConfiguration
{{- if eq .Values.mode "standalone" }}
schedulerName: {{ .Values.scheduler.name }}
{{- end }}
profiles:
- pluginWeights: {{ toJson .Values.scheduler.pluginWeights | replace "\"" "" | replace ":" ": " | replace "," ", " }}
  percentageOfNodesToScore: 0
numaStrategy: {{ .Values.scheduler.numaStrategy }}
systemPoolNamespaces: {{ include "huygens.systemNamespaces" . }}
clientConnection: {qps: 50, burst: 100}
metricsAddress: 0.0.0.0:{{ .Values.scheduler.metricsPort }}
{{- end -}}
