#!/usr/bin/env bash
# The project's test command (the README's second command; .ci/run calls it).
# Installs what the tests need (real kubectl v1.35, helm v4, the Ansible venv, Debian's
# docker-registry, prometheus and chromium), checks formatting and lints, then runs every test
# of the workspace against
# real control planes over real HTTPS (and a real registry), and last the timing tests (bounds
# on wall-clock time), whose failures are reported but do not gate.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*"; }

step "installing test tools (kubectl, helm, the Ansible venv)"
scripts/install-tools.sh

step "installing the OCI registry (Debian's docker-registry, for bundle and catalog push/pull)"
scripts/start-registry.sh --install-only

step "installing Prometheus (Debian's prometheus, for metering's Prometheus importer)"
scripts/start-prometheus.sh --install-only

step "installing headless Chromium (Debian's chromium, for the OperatorHub page's browser test)"
scripts/install-chromium.sh

if ! cargo nextest --version >/dev/null 2>&1; then
	step "installing cargo-nextest"
	cargo install --locked cargo-nextest
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "module layering (no import cycle longer than two modules)"
python3 scripts/module-cycles.py crates/opkit-apiserver/src

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

# Every crate meant for crates.io packages: versions on path dependencies, no dependency on an
# unpublished crate, metadata. Offline and without building (a few seconds); the full
# `cargo publish --workspace --dry-run`, which builds each package, is in the README ("Releasing").
step "cargo package (the published crates, --no-verify)"
unpublished=$(cargo metadata --no-deps --format-version 1 --locked |
	python3 -c 'import json, sys; print(" ".join("--exclude " + p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] == []))')
# shellcheck disable=SC2086 # one word per flag
cargo package --workspace --no-verify --locked --offline --allow-dirty $unpublished

step "tests (cargo nextest)"
cargo nextest run --workspace --locked --no-fail-fast

# Tests that assert an upper bound on wall-clock time (.config/nextest.toml, profile `timing`)
# can fail on a loaded machine: they run here, and a failure is reported loudly but does not
# fail the run.
step "timing tests (cargo nextest --profile timing, not gating)"
if cargo nextest run --workspace --locked --profile timing --run-ignored only; then
	echo "timing tests passed"
else
	cat >&2 <<'BANNER'

################################################################################
##  TIMING TESTS FAILED (not gating)                                          ##
##  Wall-clock bounds were exceeded (see the failures above). This does not   ##
##  fail the run: a loaded machine can cause it. Re-run them on an idle one:  ##
##  cargo nextest run --workspace --profile timing --run-ignored only         ##
################################################################################

BANNER
fi

step "doc tests"
cargo test --workspace --doc --locked

step "disk used by the build"
du -sh target 2>/dev/null || true
