#!/usr/bin/env bash
# Headless Chromium for the OperatorHub page's browser test and its screenshots: Debian's
# `chromium` package (/usr/bin/chromium). scripts/test.sh runs this before the tests;
# scripts/hub-screenshots.sh needs it too. Installing needs root (or sudo) and Debian's apt.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

log() { printf 'install-chromium: %s\n' "$*"; }
die() {
	printf 'install-chromium: ERROR: %s\n' "$*" >&2
	exit 1
}

if [ -x "$CHROMIUM" ]; then
	log "$CHROMIUM is installed ($(dpkg-query -W -f '${Version}' chromium 2>/dev/null || echo 'version unknown'))"
	exit 0
fi
command -v apt-get >/dev/null 2>&1 || die "apt-get is missing: install Debian's chromium package by hand"
sudo=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 || die "installing chromium needs root or sudo"
	sudo=(sudo)
fi
log "installing Debian's chromium package"
# The package lists of a fresh machine may be missing or stale: update once if the install fails.
if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends chromium; then
	"${sudo[@]}" apt-get update -q -o DPkg::Lock::Timeout=600
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends chromium
fi
[ -x "$CHROMIUM" ] || die "the chromium package installed no $CHROMIUM"
log "installed $("$CHROMIUM" --version 2>/dev/null || echo chromium)"
