#!/usr/bin/env bash
# Wall time of `opkit chart template` next to `helm template` on the corpus charts, each
# command of ../shared/corpus/helm/golden/*.cmd run alternately with both tools (so drift in
# machine load hits both alike), medians of N runs (default 11). A quick A/B check beside the
# canonical `opkit-bench --scenario charts`, which also checks that both print the same bytes.
# Times come from bash's $EPOCHREALTIME (microseconds), so no clock command runs inside a
# measurement.
#   usage: scripts/compare-chart-template.sh [OPKIT_BINARY] [RUNS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
opkit=${1:-$root/target/release/opkit}
runs=${2:-11}
helm=$root/.tools/bin/helm
corpus=$root/../shared/corpus/helm
[[ -x $opkit ]] || { echo "no $opkit: cargo build --release -p opkit-cli" >&2; exit 2; }
[[ -x $helm ]] || { echo "no $helm: scripts/install-tools.sh" >&2; exit 2; }
[[ -d $corpus ]] || { echo "no corpus at $corpus" >&2; exit 2; }
cd "$corpus"
median() { sort -n | sed -n "$(((runs + 1) / 2))p"; }
for cmd in golden/*.cmd; do
	read -r -a args < <(sed 's/^helm template //' "$cmd")
	o=() h=()
	for _ in $(seq "$runs"); do
		s=${EPOCHREALTIME/./}; "$opkit" chart template "${args[@]}" >/dev/null; o+=($((${EPOCHREALTIME/./} - s)))
		s=${EPOCHREALTIME/./}; "$helm" template "${args[@]}" >/dev/null 2>&1; h+=($((${EPOCHREALTIME/./} - s)))
	done
	om=$(printf '%s\n' "${o[@]}" | median) hm=$(printf '%s\n' "${h[@]}" | median)
	awk -v n="$(basename "$cmd" .cmd)" -v o="$om" -v h="$hm" \
		'BEGIN { printf "%-20s opkit %6.1f ms  helm %6.1f ms  %4.1fx\n", n, o / 1e3, h / 1e3, h / o }'
done
