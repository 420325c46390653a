#!/bin/bash
# sinks_ab: two builds of xpusup side by side on the sinks that matter to issues 19 and 20,
# each line of one build next to the same line of the other, in turn within every round, so
# that both builds meet the same minute of this VM (whose speed drifts by 20 % and more
# between minutes). Per build, each ratio is taken against that build's own baseline of the
# same round (bench/sinks_lib.sh): the synthetic source flat out, COUNT launches, 4
# processes, 2 correlator shards.
#   baseline                    one sink of kind test (decodes and counts every batch)
#   timeline alone              a timeline sink
#   record's outputs            one group of folded, timeline and stats (what record runs)
#   stats alone                 a stats sink (issue 20's baseline)
#   stats, pprof, metrics       one group of the three
#   record's + pprof + metrics  record's group with a pprof and a metrics format more
#
# Usage: bench/sinks_ab.sh XPUSUP_A XPUSUP_B [ROUNDS] [COUNT]   (root, or XDG_RUNTIME_DIR)
set -u
A=${1:?usage: sinks_ab.sh XPUSUP_A XPUSUP_B [ROUNDS] [COUNT]}
B=${2:?usage: sinks_ab.sh XPUSUP_A XPUSUP_B [ROUNDS] [COUNT]}
ROUNDS=${3:-5}
COUNT=${4:-1000000}
WORK=$(mktemp -d /tmp/xpusup-sinksab-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PORT=$((20000 + $$ % 20000))

# shellcheck source=bench/sinks_lib.sh
. "$(dirname "$0")/sinks_lib.sh"

rec=('[format flame]' 'kind = folded' 'path = out/flame.folded'
	'[format trace]' 'kind = timeline' 'path = out/trace.json'
	'[format stats]' 'kind = stats' 'path = out/stats.json')
fleet=('[format prof]' 'kind = pprof' 'path = out/profile.pb.gz' '[format prom]' 'kind = metrics')
for ROUND in $(seq 1 "$ROUNDS"); do
	for line in baseline timeline record stats three recordfleet; do
		for build in A B; do
			XPUSUP=$A
			[ "$build" = B ] && XPUSUP=$B
			PORT=$((PORT + 1))
			case $line in
			baseline) measure "$build: baseline (test sink)" "" bl$build '[sink out]' 'kind = test' ;;
			timeline) measure "$build: timeline alone" "$build: baseline (test sink)" tl$build \
				'[sink trace]' 'kind = timeline' 'path = out/trace.json' ;;
			record) measure "$build: record's outputs (a group)" "$build: baseline (test sink)" \
				rec$build '[sink out]' 'kind = group' 'formats = flame, trace, stats' "${rec[@]}" ;;
			stats) measure "$build: stats alone" "" st$build '[sink stats]' 'kind = stats' \
				'path = out/stats.json' ;;
			three) measure "$build: group of stats, pprof, metrics" "$build: stats alone" g3$build \
				'[sink out]' 'kind = group' 'formats = stats, prof, prom' \
				'[format stats]' 'kind = stats' 'path = out/stats.json' \
				"${fleet[@]}" "listen = 127.0.0.1:$PORT" ;;
			recordfleet) measure "$build: record's + pprof + metrics" \
				"$build: record's outputs (a group)" rf$build '[sink out]' 'kind = group' \
				'formats = flame, trace, stats, prof, prom' "${rec[@]}" \
				"${fleet[@]}" "listen = 127.0.0.1:$PORT" ;;
			esac
		done
	done
done
report "sinks_ab: A = $A, B = $B; $COUNT launches flat out, 2 shards"
