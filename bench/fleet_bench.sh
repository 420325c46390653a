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
# in sinks_bench.sh (all sink processes over the events).
#
# Usage: bench/fleet_bench.sh XPUSUP_BINARY [COUNT]   (root, or XDG_RUNTIME_DIR)
set -u
XPUSUP=${1:?usage: fleet_bench.sh XPUSUP_BINARY [COUNT]}
COUNT=${2:-1000000}
WORK=$(mktemp -d /tmp/xpusup-fleetbench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PORT=$((20000 + $$ % 20000))

# shellcheck source=bench/sinks_lib.sh
. "$(dirname "$0")/sinks_lib.sh"

read -r be bt bc < <(run stats '[sink stats]' 'kind = stats' 'path = out/stats.json')
read -r fe ft fc < <(run three '[sink stats]' 'kind = stats' 'path = out/stats.json' \
	'[sink prof]' 'kind = pprof' 'path = out/profile.pb.gz' \
	'[sink prom]' 'kind = metrics' "listen = 127.0.0.1:$PORT")
read -r ge gt gc < <(run group '[sink out]' 'kind = group' 'formats = stats, prof, prom' \
	'[format stats]' 'kind = stats' 'path = out/stats.json' \
	'[format prof]' 'kind = pprof' 'path = out/profile.pb.gz' \
	'[format prom]' 'kind = metrics' "listen = 127.0.0.1:$((PORT + 1))")
rec=('[format flame]' 'kind = folded' 'path = out/flame.folded' \
	'[format trace]' 'kind = timeline' 'path = out/trace.json' \
	'[format stats]' 'kind = stats' 'path = out/stats.json')
read -r re rt rc < <(run record '[sink out]' 'kind = group' 'formats = flame, trace, stats' \
	"${rec[@]}")
read -r xe xt xc < <(run recordfleet '[sink out]' 'kind = group' \
	'formats = flame, trace, stats, prof, prom' "${rec[@]}" \
	'[format prof]' 'kind = pprof' 'path = out/profile.pb.gz' \
	'[format prom]' 'kind = metrics' "listen = 127.0.0.1:$((PORT + 2))")
/usr/bin/python3 - "$COUNT" "$be" "$bt" "$bc" "$fe" "$ft" "$fc" "$ge" "$gt" "$gc" \
	"$re" "$rt" "$rc" "$xe" "$xt" "$xc" <<'PYEOF'
import sys
n, v = sys.argv[1], sys.argv[2:]
names = ["stats alone", "stats + pprof + metrics", "group of the three",
         "record's outputs (a group)", "record's + pprof + metrics"]
bases = [0, 0, 0, 3, 3]
runs = [(names[i], int(v[3 * i]), float(v[3 * i + 1]), float(v[3 * i + 2])) for i in range(5)]
print(f"fleet_bench: {n} launches flat out, 2 shards; ratio = rate / the rate of its baseline"
      " (stats alone; record's outputs)")
for i, (name, e, t, c) in enumerate(runs):
    b = runs[bases[i]]
    base = b[1] / b[2] if b[2] else 0
    r = e / t if t else 0
    print(f"{name:28s}: {r / 1e6:5.2f} M events/s ({e} events in {t:.2f} s), ratio {r / base if base else 0:.2f},"
          f" sink CPU {c * 1e9 / e if e else 0:4.0f} ns/event")
PYEOF
