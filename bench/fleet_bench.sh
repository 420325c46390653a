#!/bin/bash
# fleet_bench: what the pprof and metrics sinks (docs/fleet.md) cost the pipeline: events/s
# with and without them, same workload, same run (bench/sinks_lib.sh: the synthetic source
# flat out, COUNT launches, 4 processes, 2 correlator shards):
#   baseline            one sink of kind test (decodes and counts every batch)
#   + pprof + metrics   the same, plus a pprof sink and a metrics sink (nobody scraping)
#   stats               a stats sink alone (what a continuous-profiling setup keeps)
#   stats + pprof + metrics
# The ratio is each pair's "with" over "without"; sink CPU as in sinks_bench.sh.
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

fleet=('[sink prof]' 'kind = pprof' 'path = out/profile.pb.gz' \
	'[sink prom]' 'kind = metrics' "listen = 127.0.0.1:$PORT")
read -r be bt bc < <(run baseline '[sink out]' 'kind = test')
read -r fe ft fc < <(run fleet '[sink out]' 'kind = test' "${fleet[@]}")
read -r se st sc < <(run stats '[sink stats]' 'kind = stats' 'path = out/stats.json')
read -r ue ut uc < <(run statsfleet '[sink stats]' 'kind = stats' 'path = out/stats.json' \
	"${fleet[@]}")
/usr/bin/python3 - "$COUNT" "$be" "$bt" "$bc" "$fe" "$ft" "$fc" "$se" "$st" "$sc" "$ue" "$ut" "$uc" <<'PYEOF'
import sys
n, v = sys.argv[1], sys.argv[2:]
names = ["baseline: 1 test sink", "+ pprof + metrics", "stats alone", "stats + pprof + metrics"]
runs = [(names[i], int(v[3 * i]), float(v[3 * i + 1]), float(v[3 * i + 2])) for i in range(4)]
print(f"fleet_bench: {n} launches flat out, 2 shards; ratio = rate / the rate without pprof and metrics")
for i, (name, e, t, c) in enumerate(runs):
    r = e / t if t else 0
    base = runs[i - i % 2]
    b = base[1] / base[2] if base[2] else 0
    print(f"{name:25s}: {r / 1e6:5.2f} M events/s ({e} events in {t:.2f} s), ratio {r / b if b else 0:.2f},"
          f" sink CPU {c * 1e9 / e if e else 0:4.0f} ns/event")
PYEOF
