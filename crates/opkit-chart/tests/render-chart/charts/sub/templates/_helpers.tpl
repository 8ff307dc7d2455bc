{{- define "shared.greeting" -}}
sub loses
{{- end -}}
