#!/usr/bin/env bash
# Campaign benchmarks of `opkit test --chaos` (issue 19, item 6): for each seeded-bug operator of
# examples/chaos-gallery (buggy and fixed), the campaign's
# time, its fault runs per second, and for a buggy operator the time from the campaign's start
# to the first finding (the first run reported FAILED, or the reference's refusal for a
# heartbeat that is never quiet).
#
#   scripts/bench-chaos.sh [TARGET_DIR]   # TARGET_DIR: where cargo built opkit and chaos-gallery
#                                         # (default: $CARGO_TARGET_DIR or target, debug profile)
#
# Then the example projects' crash campaigns (`opkit test --chaos crash` in examples/memcached
# and examples/flightticket, the default 2 s settle time: the operator is the project's own
# binary, which `opkit test` builds with cargo first; the campaign's time is the one it
# reports, the build excluded). `--projects-only` (or its older name `--memcached-only`)
# skips the gallery.
# Build first: cargo build -p opkit-cli -p chaos-gallery (add --release, and pass
# TARGET_DIR/release, for release figures). Prints one Markdown table row per campaign.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gallery=true
case "${1:-}" in --projects-only|--memcached-only) gallery=false; shift ;; esac
bin=${1:-${CARGO_TARGET_DIR:-$root/target}/debug}
# Absolute: campaigns run in other directories, with $bin on PATH.
bin=$(cd "$bin" && pwd)
for tool in "$bin/opkit" "$root/.tools/bin/kubectl" $($gallery && echo "$bin/chaos-gallery"); do
  [ -x "$tool" ] || { echo "missing $tool: build it (see the header of $0)" >&2; exit 2; }
done
export PATH="$bin:$root/.tools/bin:$PATH"
unset KUBECONFIG

# campaign LABEL DIR KINDS [FLAGS...]: runs one campaign in DIR and prints its row (FLAGS
# default to a 500 ms settle time).
campaign() {
  local label=$1 dir=$2 kinds=$3 start first="" line now summary=""
  shift 3
  local flags=("$@")
  [ ${#flags[@]} -gt 0 ] || flags=(--chaos-settle 500ms)
  start=$(date +%s.%N)
  while IFS= read -r line; do
    now=$(date +%s.%N)
    case "$line" in
      *": FAILED ("*|*"not quiet without faults"*) [ -z "$first" ] && first=$(echo "$now - $start" | bc) ;;
      "chaos: "*" fault runs in "*) summary=$line ;;
    esac
  done < <(cd "$dir" && opkit test --chaos "$kinds" "${flags[@]}" 2>&1 || true)
  local total runs reported
  total=$(echo "$(date +%s.%N) - $start" | bc)
  runs=$(echo "$summary" | sed -n 's/^chaos: \([0-9]*\) fault runs in.*/\1/p')
  runs=${runs:-0}
  # The campaign's own time (a project's build before it excluded), when it reported one.
  reported=$(echo "$summary" | sed -n 's/^chaos: [0-9]* fault runs in \([0-9.]*\)s.*/\1/p')
  total=${reported:-$total}
  printf '| %s | `--chaos %s` | %d | %.1f s | %.2f | %s |\n' "$label" "$kinds" "$runs" "$total" \
    "$(echo "scale=3; $runs / $total" | bc)" "${first:+$(printf '%.1f s' "$first")}"
}

echo '| operator | campaign | fault runs | campaign time | runs/s | first finding |'
echo '|---|---|---|---|---|---|'
$gallery && for entry in scale-down:crash resize:crash rollout:crash cleanup:unobserved stale-scale:stale \
  storage:unobserved blind-retry:errors heartbeat:crash; do
  bug=${entry%%:*} kinds=${entry#*:}
  work=$(mktemp -d)
  cp -r "$root/examples/chaos-gallery/suites/$bug/." "$work"
  CHAOS_GALLERY_FIXED=false campaign "$bug" "$work" "$kinds"
  CHAOS_GALLERY_FIXED=true campaign "$bug (fixed)" "$work" "$kinds"
  rm -rf "$work"
done
# The Memcached project: --budget 10m only so that a regression cannot run for ever.
campaign "memcached (project)" "$root/examples/memcached" crash --budget 10m
campaign "flightticket (project)" "$root/examples/flightticket" crash --budget 10m
