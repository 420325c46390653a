#!/bin/bash
# idle_bench: what a session costs while nothing happens. The synthetic source makes 1 000
# launches and stops; then, for SECONDS, the CPU time (user + system, from /proc) of every
# process of the session: the supervisor, the correlator shards and a group sink with
# record's three outputs. A continuous profiler spends most of its life so, between bursts.
#
# Usage: bench/idle_bench.sh XPUSUP_BINARY [SECONDS]   (root, or XDG_RUNTIME_DIR)
set -u
XPUSUP=${1:?usage: idle_bench.sh XPUSUP_BINARY [SECONDS]}
SECS=${2:-10}
WORK=$(mktemp -d /tmp/xpusup-idlebench-XXXXXX)
s="idlebench$$"
trap '"$XPUSUP" stop --session "$s" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
cat >"$WORK/idle.conf" <<CONF
[sink out]
kind = group
formats = flame, trace, stats
[format flame]
kind = folded
path = out/flame.folded
[format trace]
kind = timeline
path = out/trace.json
[format stats]
kind = stats
path = out/stats.json
[correlator]
shards = 2
[source syn]
kind = synthetic
processes = 4
launches_per_s = 0
count = 1000
answer_frame = no
CONF
"$XPUSUP" start "$WORK/idle.conf" --session "$s" >/dev/null || exit 1
sleep 3 # the launches are made and through; from here on the session idles
"$XPUSUP" status --session "$s" --json >"$WORK/status.json"
/usr/bin/python3 - "$WORK/status.json" "$SECS" <<'PYEOF'
import json, os, sys, time
j = json.load(open(sys.argv[1]))
secs = float(sys.argv[2])
procs = [("supervisor", j["supervisor_pid"])]
procs += [(a["name"], a["pid"]) for a in j["actors"] if a.get("pid")]
hz = os.sysconf("SC_CLK_TCK")

def cpu(pid):
    """user + system seconds of every thread of pid"""
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / hz

before = {p: cpu(p) for _, p in procs}
time.sleep(secs)
total = 0.0
print(f"idle_bench: {secs:.0f} s of an idle session (after 1 000 launches): CPU of each process")
for name, p in procs:
    used = cpu(p) - before[p]
    total += used
    print(f"  {name:14s} {100 * used / secs:5.2f} % of a CPU")
print(f"  {'all':14s} {100 * total / secs:5.2f} % of a CPU")
PYEOF
