#!/bin/bash
# sinks_bench: events/s through the real sinks against a counting sink, same workload, same
# run. The synthetic source flat out (COUNT launches, 4 processes), 2 correlator shards, then:
#   baseline  one sink of kind test (decodes and counts every batch)
#   folded, timeline, stats alone, then all three together (each decodes every batch)
#   group: the same three formats in one sink of kind group (one receive, one decode)
# Each line: events/s = events the slowest sink received / time from the start until it had
# them all; the ratio is sinks / baseline; sink CPU is the user + system time of the sink
# actors over the events received (less sensitive than the rate to what else runs). Then the
# timeline's bytes per correlated event. Files go to a temporary folder, removed after.
# ROUNDS=N (environment) measures every line N times, in turn, and prints medians
# (bench/sinks_lib.sh).
#
# Usage: [ROUNDS=N] bench/sinks_bench.sh XPUSUP_BINARY [COUNT]   (root, or XDG_RUNTIME_DIR)
set -u
XPUSUP=${1:?usage: sinks_bench.sh XPUSUP_BINARY [COUNT]}
COUNT=${2:-1000000}
WORK=$(mktemp -d /tmp/xpusup-sinksbench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# shellcheck source=bench/sinks_lib.sh
. "$(dirname "$0")/sinks_lib.sh"

base="baseline: 1 test sink"
for ROUND in $(seq 1 "$ROUNDS"); do
	measure "$base" "" baseline '[sink out]' 'kind = test'
	measure "folded alone" "$base" folded '[sink flame]' 'kind = folded' 'path = out/flame.folded'
	measure "timeline alone" "$base" timeline '[sink trace]' 'kind = timeline' 'path = out/trace.json'
	# the file is renamed into place at stop, which may still be under way when run has printed
	for _ in $(seq 1 600); do [ -f "$WORK/out/trace.json" ] && break; sleep 0.1; done
	tbytes=$(stat -c %s "$WORK/out/trace.json" 2>/dev/null || echo 0)
	tevents=$(tail -n 1 "$WORK/results" | cut -f 4)
	rm -f "$WORK/out/trace.json"
	measure "stats alone" "$base" stats '[sink stats]' 'kind = stats' 'path = out/stats.json'
	measure "folded + timeline + stats" "$base" sinks '[sink flame]' 'kind = folded' \
		'path = out/flame.folded' '[sink trace]' 'kind = timeline' 'path = out/trace.json' \
		'[sink stats]' 'kind = stats' 'path = out/stats.json'
	measure "group: folded + timeline + stats in one sink" "$base" group '[sink all]' \
		'kind = group' 'formats = flame, trace, stats' \
		'[format flame]' 'kind = folded' 'path = out/flame.folded' \
		'[format trace]' 'kind = timeline' 'path = out/trace.json' \
		'[format stats]' 'kind = stats' 'path = out/stats.json'
done
report "sinks_bench: $COUNT launches flat out, 2 shards"
echo "timeline alone (last round): trace.json of $tbytes bytes, $((tbytes / (tevents > 0 ? tevents : 1))) bytes per correlated event"
