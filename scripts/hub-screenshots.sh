#!/usr/bin/env bash
# The README's OperatorHub screenshots (docs/images/hub-packages.png, docs/images/hub-package.png):
# builds opkit, writes two small operators' bundles (package `widgets`: 1.0.0 and 1.1.0;
# package `backups`: 0.3.0), pushes them and their catalog to a registry of our own (Debian's
# docker-registry), starts `opkit up --ephemeral --olm`, serves the catalog as ClusterCatalog
# `ops`, installs widgets 1.0.0 from it, and has headless Chromium photograph the hub's package
# list and the widgets package page. Run it from anywhere; it cleans up after itself.
#
#   scripts/hub-screenshots.sh [OUTDIR]    (default: docs/images)
#
# Needs scripts/install-chromium.sh and scripts/start-registry.sh --install-only (run here) and
# kubectl (.tools/bin, from scripts/install-tools.sh, or on PATH).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/docs/images}")"

log() { printf 'hub-screenshots: %s\n' "$*"; }
die() {
	printf 'hub-screenshots: ERROR: %s\n' "$*" >&2
	exit 1
}

"$ROOT/scripts/install-chromium.sh" >/dev/null
"$ROOT/scripts/start-registry.sh" --install-only >/dev/null
PATH="$ROOT/.tools/bin:$PATH"
command -v kubectl >/dev/null || die "kubectl is missing: run scripts/install-tools.sh"

log "building opkit"
(cd "$ROOT" && cargo build -q -p opkit-cli --bin opkit)
OPKIT="${CARGO_TARGET_DIR:-$ROOT/target}/debug/opkit"
[ -x "$OPKIT" ] || die "no $OPKIT after the build"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/opkit-hub.XXXXXX")"
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# A registry of our own.
PORT="$(free_port)"
REG="127.0.0.1:$PORT"
cat >"$WORK/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: $WORK/registry}}
http: {addr: $REG}
EOF
/usr/bin/docker-registry serve "$WORK/registry.yml" >"$WORK/registry.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf "http://$REG/v2/" >/dev/null && break; sleep 0.1; done
curl -sf "http://$REG/v2/" >/dev/null || die "the registry did not start: $(cat "$WORK/registry.log")"

# An icon: a rounded square with a letter.
icon() { printf '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 48 48"><rect width="48" height="48" rx="10" fill="%s"/><text x="24" y="33" font-family="sans-serif" font-size="26" font-weight="bold" fill="#fff" text-anchor="middle">%s</text></svg>' "$1" "$2" | base64 -w0; }

# bundle DIR PACKAGE KIND VERSION REPLACES DISPLAY CAPABILITY CATEGORIES ICON SUMMARY DESCRIPTION
bundle() {
	local dir="$WORK/$1" package=$2 kind=$3 version=$4 replaces=$5 display=$6 capability=$7 categories=$8 icon=$9 summary=${10} description=${11}
	local plural group
	plural="$(tr '[:upper:]' '[:lower:]' <<<"$kind")s"
	group="$package.example.com"
	mkdir -p "$dir/manifests" "$dir/metadata"
	cat >"$dir/metadata/annotations.yaml" <<EOF
annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: $package
  operators.operatorframework.io.bundle.channels.v1: stable
  operators.operatorframework.io.bundle.channel.default.v1: stable
EOF
	cat >"$dir/manifests/$plural.yaml" <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $plural.$group}
spec:
  group: $group
  scope: Namespaced
  names: {kind: $kind, plural: $plural}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
	{
		cat <<EOF
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: $package.v$version
  annotations:
    alm-examples: '[{"apiVersion": "$group/v1", "kind": "$kind", "metadata": {"name": "example"}, "spec": {"size": 3}}]'
    capabilities: $capability
    categories: $categories
    description: "$summary"
spec:
  displayName: "$display"
  version: $version
EOF
		[ -z "$replaces" ] || echo "  replaces: $replaces"
		echo "  description: |"
		sed 's/^/    /' <<<"$description"
		cat <<EOF
  provider: {name: opkit examples}
  maintainers: [{name: opkit, email: opkit@example.com}]
  links: [{name: Source, url: "https://example.com/$package"}]
  icon: [{base64data: $icon, mediatype: image/svg+xml}]
  installModes: [{type: AllNamespaces, supported: true}]
  customresourcedefinitions:
    owned: [{name: $plural.$group, version: v1, kind: $kind, displayName: $kind}]
  install:
    strategy: deployment
    spec:
      deployments:
      - name: $package-controller
        spec:
          selector: {matchLabels: {app: $package}}
          template:
            metadata: {labels: {app: $package}}
            spec:
              containers: [{name: manager, image: "example.com/$package:v$version"}]
EOF
	} >"$dir/manifests/$package.clusterserviceversion.yaml"
}

WIDGETS_DESCRIPTION='Runs **Widgets**: each `Widget` gets a Deployment of its size and a Service in front of it.

## Usage

1. Install the operator (all namespaces).
2. Create a `Widget`; `spec.size` is the number of replicas.
3. Watch `status.readyReplicas` catch up.

Upgrades follow the `stable` channel; see the [project page](https://example.com/widgets).'
BACKUPS_DESCRIPTION='Takes scheduled **backups** of persistent volumes and keeps the last *N* of them.'

bundle w1 widgets Widget 1.0.0 "" "Widget Operator" "Seamless Upgrades" "Developer Tools, Application Runtime" "$(icon '#0066cc' W)" "Runs Widgets: a Deployment and a Service per Widget." "$WIDGETS_DESCRIPTION"
bundle w2 widgets Widget 1.1.0 widgets.v1.0.0 "Widget Operator" "Seamless Upgrades" "Developer Tools, Application Runtime" "$(icon '#0066cc' W)" "Runs Widgets: a Deployment and a Service per Widget." "$WIDGETS_DESCRIPTION"
bundle k1 backups Backup 0.3.0 "" "Backup Operator" "Basic Install" "Storage" "$(icon '#3e8635' B)" "Scheduled volume backups, the last N kept." "$BACKUPS_DESCRIPTION"

log "pushing the bundles and their catalog to $REG"
cd "$WORK"
for b in w1:widgets:1.0.0 w2:widgets:1.1.0 k1:backups:0.3.0; do
	IFS=: read -r dir package version <<<"$b"
	"$OPKIT" bundle push "$dir" "$REG/$package/bundle:v$version" >/dev/null
done
mkdir catalog
{
	printf -- '---\nschema: olm.package\nname: widgets\ndefaultChannel: stable\nicon: {base64data: %s, mediatype: image/svg+xml}\n' "$(icon '#0066cc' W)"
	printf -- '---\nschema: olm.package\nname: backups\ndefaultChannel: stable\nicon: {base64data: %s, mediatype: image/svg+xml}\n' "$(icon '#3e8635' B)"
	printf -- '---\nschema: olm.channel\npackage: widgets\nname: stable\nentries:\n- name: widgets.v1.0.0\n- name: widgets.v1.1.0\n  replaces: widgets.v1.0.0\n'
	printf -- '---\nschema: olm.channel\npackage: backups\nname: stable\nentries:\n- name: backups.v0.3.0\n'
	"$OPKIT" catalog render w1 w2 k1 -o yaml --migrate-level bundle-object-to-csv-metadata \
		--image-ref-template "$REG/{{.Package}}/bundle:v{{.Version}}"
} >catalog/index.yaml
"$OPKIT" catalog validate catalog
"$OPKIT" catalog push catalog "$REG/ops/catalog:v1" >/dev/null

log "starting opkit up --olm"
"$OPKIT" up --ephemeral --olm --listen 127.0.0.1:0 --kubeconfig "$WORK/kubeconfig" >"$WORK/up.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do grep -q '^opkit control plane ready' "$WORK/up.log" && break; sleep 0.1; done
grep -q '^opkit control plane ready' "$WORK/up.log" || die "opkit up did not start: $(cat "$WORK/up.log")"
HUB="$(sed -n 's/^serving the OperatorHub page at //p' "$WORK/up.log")"
[ -n "$HUB" ] || die "opkit up printed no OperatorHub line: $(cat "$WORK/up.log")"
export KUBECONFIG="$WORK/kubeconfig"
kubectl apply -f - >/dev/null <<EOF
apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata: {name: ops}
spec: {source: {type: Image, image: {ref: $REG/ops/catalog:v1}}}
EOF
kubectl wait clustercatalog/ops --for=condition=Serving --timeout=60s >/dev/null
"$OPKIT" operator install widgets --version 1.0.0 -n widgets-system >/dev/null 2>&1

shoot() {
	local file=$1 url=$2 height=$3
	chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
		--user-data-dir="$WORK/chromium" --window-size="1100,$height" --screenshot="$file" "$url" \
		>/dev/null 2>&1
	[ -s "$file" ] || die "chromium wrote no $file"
	log "$file ($(du -k "$file" | cut -f1) KB)"
}
mkdir -p "$OUT"
shoot "$OUT/hub-packages.png" "$HUB" 620
shoot "$OUT/hub-package.png" "${HUB}packages/ops/widgets" 900
