#!/bin/bash
# fleet_bench: what the pprof and metrics sinks (docs/fleet.md) cost the pipeline: events/s
# with and without them, same workload, same run (bench/sinks_lib.sh: the synthetic source
# flat out, COUNT launches, 4 processes, 2 correlator shards):
#   stats                       a stats sink alone (the baseline)
#   stats + pprof + metrics     the same, plus a pprof sink and a metrics sink: three sink
#                               processes, each receiving and decoding every batch
#   group of the three          one group sink running stats, pprof and metrics formats:
#                               one receive and one decode (docs/sinks.md, "group")
#   record's outputs            what `xpusup record` runs: one group of folded, timeline and
#                               stats (the second baseline)
#   record's + pprof + metrics  the same group with a pprof and a metrics format more
# Nobody scrapes the metrics endpoint. The ratio is the rate over its baseline's; sink CPU as
# in sinks_bench.sh (all sink processes over the events). ROUNDS=N (environment): every line
# N times, in turn, and medians (bench/sinks_lib.sh).
#
# Usage: [ROUNDS=N] bench/fleet_bench.sh XPUSUP_BINARY [COUNT]   (root, or XDG_RUNTIME_DIR)
set -u
XPUSUP=${1:?usage: fleet_bench.sh XPUSUP_BINARY [COUNT]}
COUNT=${2:-1000000}
WORK=$(mktemp -d /tmp/xpusup-fleetbench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PORT=$((20000 + $$ % 20000))

# shellcheck source=bench/sinks_lib.sh
. "$(dirname "$0")/sinks_lib.sh"

rec=('[format flame]' 'kind = folded' 'path = out/flame.folded' \
	'[format trace]' 'kind = timeline' 'path = out/trace.json' \
	'[format stats]' 'kind = stats' 'path = out/stats.json')
for ROUND in $(seq 1 "$ROUNDS"); do
	measure "stats alone" "" stats '[sink stats]' 'kind = stats' 'path = out/stats.json'
	measure "stats + pprof + metrics" "stats alone" three \
		'[sink stats]' 'kind = stats' 'path = out/stats.json' \
		'[sink prof]' 'kind = pprof' 'path = out/profile.pb.gz' \
		'[sink prom]' 'kind = metrics' "listen = 127.0.0.1:$PORT"
	measure "group of the three" "stats alone" group '[sink out]' 'kind = group' \
		'formats = stats, prof, prom' \
		'[format stats]' 'kind = stats' 'path = out/stats.json' \
		'[format prof]' 'kind = pprof' 'path = out/profile.pb.gz' \
		'[format prom]' 'kind = metrics' "listen = 127.0.0.1:$((PORT + 1))"
	measure "record's outputs (a group)" "" record '[sink out]' 'kind = group' \
		'formats = flame, trace, stats' "${rec[@]}"
	measure "record's + pprof + metrics" "record's outputs (a group)" recordfleet \
		'[sink out]' 'kind = group' 'formats = flame, trace, stats, prof, prom' "${rec[@]}" \
		'[format prof]' 'kind = pprof' 'path = out/profile.pb.gz' \
		'[format prom]' 'kind = metrics' "listen = 127.0.0.1:$((PORT + 2))"
done
report "fleet_bench: $COUNT launches flat out, 2 shards (baselines: stats alone; record's outputs)"
