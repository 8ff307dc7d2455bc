#!/usr/bin/env bash
# A real Prometheus for metering's `prometheusMetricsImporter`: Debian's `prometheus` package
# (/usr/bin/prometheus).
#
#   scripts/start-prometheus.sh --install-only   install the package if missing, then exit
#                                                 (scripts/test.sh does this before the tests)
#   scripts/start-prometheus.sh TARGET [PORT]    install if missing, then run a Prometheus of our
#                                                 own on 127.0.0.1:PORT (default 9090) scraping
#                                                 http://TARGET/metrics every second, its storage
#                                                 in a temporary directory, in the foreground
#                                                 until interrupted
#
# Never the system service (the package enables one; it is left alone): the tests start their
# own Prometheus process, each on a free port with its own storage and scrape configuration
# (crates/opkit-cli/tests/up.rs), and so does this script. Installing needs root (or sudo) and
# Debian's apt.
set -euo pipefail

PROMETHEUS=/usr/bin/prometheus

log() { printf 'start-prometheus: %s\n' "$*"; }
die() {
	printf 'start-prometheus: ERROR: %s\n' "$*" >&2
	exit 1
}

install_prometheus() {
	if [ -x "$PROMETHEUS" ]; then
		log "$PROMETHEUS is installed ($(dpkg-query -W -f '${Version}' prometheus 2>/dev/null || echo 'version unknown'))"
		return 0
	fi
	command -v apt-get >/dev/null 2>&1 || die "apt-get is missing: install Debian's prometheus package by hand"
	local sudo=()
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "installing prometheus needs root or sudo"
		sudo=(sudo)
	fi
	log "installing Debian's prometheus package (without its recommended exporters)"
	# The package lists of a fresh machine may be missing or stale: update once if the install fails.
	if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends prometheus; then
		"${sudo[@]}" apt-get update -q
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends prometheus
	fi
	[ -x "$PROMETHEUS" ] || die "the prometheus package installed no $PROMETHEUS"
}

case "${1:-}" in
-h | --help | "")
	sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
	[ -n "${1:-}" ] || exit 2
	exit 0
	;;
--install-only)
	install_prometheus
	exit 0
	;;
esac

TARGET="$1"
PORT="${2:-9090}"
[[ "$PORT" =~ ^[0-9]+$ ]] || die "PORT must be a number, not '$PORT' (usage: scripts/start-prometheus.sh TARGET [PORT] | --install-only)"
install_prometheus
STORAGE="$(mktemp -d "${TMPDIR:-/tmp}/opkit-prometheus.XXXXXX")"
trap 'rm -rf "$STORAGE"' EXIT
cat >"$STORAGE/prometheus.yml" <<CONFIG
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
- job_name: opkit
  static_configs:
  - targets: ['$TARGET']
CONFIG
log "prometheus on http://127.0.0.1:$PORT scraping http://$TARGET/metrics (storage $STORAGE/data; Ctrl-C stops it and removes it)"
"$PROMETHEUS" --config.file="$STORAGE/prometheus.yml" --storage.tsdb.path="$STORAGE/data" \
	--web.listen-address="127.0.0.1:$PORT" --log.level=warn
