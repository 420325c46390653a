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
#
# Usage: bench/sinks_bench.sh XPUSUP_BINARY [COUNT]   (root, or XDG_RUNTIME_DIR)
set -u
XPUSUP=${1:?usage: sinks_bench.sh XPUSUP_BINARY [COUNT]}
COUNT=${2:-1000000}
WORK=$(mktemp -d /tmp/xpusup-sinksbench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# shellcheck source=bench/sinks_lib.sh
. "$(dirname "$0")/sinks_lib.sh"

read -r be bt bc < <(run baseline '[sink out]' 'kind = test')
read -r fe ft fc < <(run folded '[sink flame]' 'kind = folded' 'path = out/flame.folded')
read -r te tt tc < <(run timeline '[sink trace]' 'kind = timeline' 'path = out/trace.json')
# the file is renamed into place at stop, which may still be under way when run has printed
for _ in $(seq 1 600); do [ -f "$WORK/out/trace.json" ] && break; sleep 0.1; done
tbytes=$(stat -c %s "$WORK/out/trace.json" 2>/dev/null || echo 0)
read -r ue ut uc < <(run stats '[sink stats]' 'kind = stats' 'path = out/stats.json')
read -r se st sc < <(run sinks '[sink flame]' 'kind = folded' 'path = out/flame.folded' \
	'[sink trace]' 'kind = timeline' 'path = out/trace.json' \
	'[sink stats]' 'kind = stats' 'path = out/stats.json')
read -r ge gt gc < <(run group '[sink all]' 'kind = group' 'formats = flame, trace, stats' \
	'[format flame]' 'kind = folded' 'path = out/flame.folded' \
	'[format trace]' 'kind = timeline' 'path = out/trace.json' \
	'[format stats]' 'kind = stats' 'path = out/stats.json')
/usr/bin/python3 - "$COUNT" "$be" "$bt" "$bc" "$fe" "$ft" "$fc" "$te" "$tt" "$tc" "$ue" "$ut" "$uc" "$se" "$st" "$sc" \
	"$ge" "$gt" "$gc" <<'PYEOF'
import sys
n, v = sys.argv[1], sys.argv[2:]
names = ["baseline: 1 test sink", "folded alone", "timeline alone", "stats alone",
         "folded + timeline + stats", "group: folded + timeline + stats in one sink"]
runs = [(names[i], v[3 * i], v[3 * i + 1], v[3 * i + 2]) for i in range(len(names))]
base = int(v[0]) / float(v[1]) if float(v[1]) else 0
print(f"sinks_bench: {n} launches flat out, 2 shards; ratio = rate / baseline rate;")
print("  sink CPU = user + system time of the sink actors per event received")
for name, e, t, c in runs:
    e, t, c = int(e), float(t), float(c)
    r = e / t if t else 0
    print(f"{name:44s}: {r / 1e6:5.2f} M events/s ({e} events in {t:.2f} s), ratio {r / base if base else 0:.2f},"
          f" sink CPU {c * 1e9 / e if e else 0:4.0f} ns/event")
PYEOF
echo "timeline alone: trace.json of $tbytes bytes, $((tbytes / (te > 0 ? te : 1))) bytes per correlated event"
