#!/usr/bin/env bash
# A real OCI registry for `opkit bundle|catalog push|pull`: Debian's `docker-registry` package
# (the CNCF distribution registry, /usr/bin/docker-registry).
#
#   scripts/start-registry.sh --install-only   install the package if missing, then exit
#                                               (scripts/test.sh does this before the tests)
#   scripts/start-registry.sh [PORT]            install if missing, then run a registry of our
#                                               own on 127.0.0.1:PORT (default 5000) with its
#                                               storage in a temporary directory, in the
#                                               foreground until interrupted
#
# Never the system service: the tests start their own registry process, each on a free port
# with its own storage (crates/opkit-cli/tests/chart_template.rs), and so does this script.
# Installing needs root (or sudo) and Debian's apt.
set -euo pipefail

REGISTRY=/usr/bin/docker-registry

log() { printf 'start-registry: %s\n' "$*"; }
die() {
	printf 'start-registry: ERROR: %s\n' "$*" >&2
	exit 1
}

install_registry() {
	if [ -x "$REGISTRY" ]; then
		log "$REGISTRY is installed ($(dpkg-query -W -f '${Version}' docker-registry 2>/dev/null || echo 'version unknown'))"
		return 0
	fi
	command -v apt-get >/dev/null 2>&1 || die "apt-get is missing: install Debian's docker-registry package by hand"
	local sudo=()
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "installing docker-registry needs root or sudo"
		sudo=(sudo)
	fi
	log "installing Debian's docker-registry package"
	# The package lists of a fresh machine may be missing or stale: update once if the install fails.
	if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q docker-registry; then
		"${sudo[@]}" apt-get update -q
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q docker-registry
	fi
	[ -x "$REGISTRY" ] || die "the docker-registry package installed no $REGISTRY"
}

case "${1:-}" in
-h | --help)
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
--install-only)
	install_registry
	exit 0
	;;
esac

PORT="${1:-5000}"
[[ "$PORT" =~ ^[0-9]+$ ]] || die "PORT must be a number, not '$PORT' (usage: scripts/start-registry.sh [PORT] | --install-only)"
install_registry
STORAGE="$(mktemp -d "${TMPDIR:-/tmp}/opkit-registry.XXXXXX")"
trap 'rm -rf "$STORAGE"' EXIT
cat >"$STORAGE/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $STORAGE/data
http:
  addr: 127.0.0.1:$PORT
CONFIG
log "registry on http://127.0.0.1:$PORT (storage $STORAGE/data; Ctrl-C stops it and removes it)"
"$REGISTRY" serve "$STORAGE/config.yml"
