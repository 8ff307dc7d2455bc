{{- define "dump" -}}
{{- if kindIs "map" . -}}
{ {{- range $k, $v := . }}{{ $k | quote }}: {{ template "dump" $v }}; {{ end -}} }
{{- else if kindIs "slice" . -}}
[ {{- range . }}{{ template "dump" . }}; {{ end -}} ]
{{- else -}}
{{ typeOf . }}({{ printf "%#v" . }})
{{- end -}}
{{- end -}}
