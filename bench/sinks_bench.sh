#!/bin/bash
# sinks_bench: events/s through the real sinks against a counting sink, same workload, same
# run. The synthetic source flat out (COUNT launches, 4 processes), 2 correlator shards, then:
#   baseline  one sink of kind test (decodes and counts every batch)
#   folded, timeline, stats alone, then all three together (each decodes every batch)
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

run() { # run NAME SINK_SECTIONS... -> "events seconds"
	local name=$1 s="sinksbench$$-$1"
	shift
	{ printf '%s\n' "$@"; printf '[correlator]\nshards = 2\n[source syn]\nkind = synthetic\nprocesses = 4\nlaunches_per_s = 0\ncount = %s\nanswer_frame = no\n' "$COUNT"; } >"$WORK/$name.conf"
	"$XPUSUP" start "$WORK/$name.conf" --session "$s" >/dev/null 2>&1 || { echo "0 0 0"; return; }
	/usr/bin/python3 - "$XPUSUP" "$s" "$COUNT" <<'PYEOF'
import json, os, subprocess, sys, time
xpusup, session, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.monotonic()
while True:
    j = json.loads(subprocess.run([xpusup, "status", "--session", session, "--json"],
                                  capture_output=True, text=True).stdout)
    a = {x["name"]: x for x in j["actors"]}
    sent = sum(x["counters"].get("events_out", 0) for x in j["actors"] if x["role"] == "correlator")
    sinks = [x["counters"].get("events_in", 0) for x in j["actors"] if x["role"] == "sink"]
    syn = a["syn"]["counters"]
    # done: the source has made everything, the shards have read and sent all of it (every
    # record becomes one event), and the slowest sink has received every event
    if (syn.get("launches", 0) == count and sent >= syn.get("records_out", 1)
            and all(r["produced"] == r["consumed"] for r in j["rings"])
            and sinks and min(sinks) == sent):
        # CPU time of the sink actors, user + system (their whole life so far): less
        # sensitive than the rate to what else the machine runs
        cpu = 0
        for x in j["actors"]:
            if x["role"] == "sink" and x.get("pid"):
                with open(f"/proc/{x['pid']}/stat") as f:
                    st = f.read().rsplit(")", 1)[1].split()
                cpu += (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
        print(min(sinks), time.monotonic() - t0, cpu)
        break
    if time.monotonic() - t0 > 600:
        print(0, 0, 0)
        break
    time.sleep(0.02)
PYEOF
	"$XPUSUP" stop --session "$s" >/dev/null 2>&1
}

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
/usr/bin/python3 - "$COUNT" "$be" "$bt" "$bc" "$fe" "$ft" "$fc" "$te" "$tt" "$tc" "$ue" "$ut" "$uc" "$se" "$st" "$sc" <<'PYEOF'
import sys
n, v = sys.argv[1], sys.argv[2:]
names = ["baseline: 1 test sink", "folded alone", "timeline alone", "stats alone",
         "folded + timeline + stats"]
runs = [(names[i], v[3 * i], v[3 * i + 1], v[3 * i + 2]) for i in range(len(names))]
base = int(v[0]) / float(v[1]) if float(v[1]) else 0
print(f"sinks_bench: {n} launches flat out, 2 shards; ratio = rate / baseline rate;")
print("  sink CPU = user + system time of the sink actors per event received")
for name, e, t, c in runs:
    e, t, c = int(e), float(t), float(c)
    r = e / t if t else 0
    print(f"{name:27s}: {r / 1e6:5.2f} M events/s ({e} events in {t:.2f} s), ratio {r / base if base else 0:.2f},"
          f" sink CPU {c * 1e9 / e if e else 0:4.0f} ns/event")
PYEOF
echo "timeline alone: trace.json of $tbytes bytes, $((tbytes / (te > 0 ? te : 1))) bytes per correlated event"
