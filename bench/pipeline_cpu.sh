#!/bin/bash
# pipeline_cpu: where a flat-out pipeline's CPU goes, process by process. One session of
# sinks_bench's shape (the synthetic source flat out, COUNT launches, 4 processes, 2
# correlator shards) with one sink: a counting sink (test), a timeline, or record's group.
# Prints the rate (events the sink received / seconds from the start until it had them all),
# how busy the machine was meanwhile (/proc/stat), and each actor's CPU time (user + system,
# from /proc, its threads included) in all and per event received.
#
# On this project's 2-CPU machines the pipeline is bound by its CPU in all: a sink's ratio to
# the counting sink is about the counting pipeline's CPU an event over its own
# (docs/performance.md); this says which process holds that CPU.
#
# Usage: bench/pipeline_cpu.sh XPUSUP_BINARY [COUNT] [test|timeline|record]
#        (root, or XDG_RUNTIME_DIR)
set -u
XPUSUP=$(realpath "${1:?usage: pipeline_cpu.sh XPUSUP_BINARY [COUNT] [test|timeline|record]}")
COUNT=${2:-3000000}
KIND=${3:-timeline}
WORK=$(mktemp -d /tmp/xpusup-pipecpu-XXXXXX)
s="pipecpu$$"
trap '"$XPUSUP" stop --session "$s" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
case "$KIND" in
test) printf '[sink out]\nkind = test\n' ;;
timeline) printf '[sink trace]\nkind = timeline\npath = out/trace.json\n' ;;
record) printf '[sink all]\nkind = group\nformats = flame, trace, stats\n[format flame]\nkind = folded\npath = out/flame.folded\n[format trace]\nkind = timeline\npath = out/trace.json\n[format stats]\nkind = stats\npath = out/stats.json\n' ;;
*)
	echo "pipeline_cpu.sh: unknown sink '$KIND' (test, timeline or record)" >&2
	exit 2
	;;
esac >"$WORK/c.conf"
printf '[correlator]\nshards = 2\n[source syn]\nkind = synthetic\nprocesses = 4\nlaunches_per_s = 0\ncount = %s\nanswer_frame = no\n' \
	"$COUNT" >>"$WORK/c.conf"
cd "$WORK" || exit 1
"$XPUSUP" start c.conf --session "$s" >/dev/null 2>&1 || {
	echo "pipeline_cpu.sh: the session did not start ($XPUSUP start $WORK/c.conf)" >&2
	exit 1
}
/usr/bin/python3 - "$XPUSUP" "$s" "$COUNT" "$KIND" <<'PYEOF'
import json, os, subprocess, sys, time
xpusup, session, count, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def proc_stat():
    return [int(x) for x in open("/proc/stat").readline().split()[1:]]

a0, t0 = proc_stat(), time.monotonic()
while True:
    j = json.loads(subprocess.run([xpusup, "status", "--session", session, "--json"],
                                  capture_output=True, text=True).stdout)
    a = {x["name"]: x for x in j["actors"]}
    sent = sum(x["counters"].get("events_out", 0) for x in j["actors"] if x["role"] == "correlator")
    sinks = [x["counters"].get("events_in", 0) for x in j["actors"] if x["role"] == "sink"]
    if (a["syn"]["counters"].get("launches", 0) == count and sinks and min(sinks) == sent
            and all(r["produced"] == r["consumed"] for r in j["rings"])):
        break
    if time.monotonic() - t0 > 600:
        sys.exit("pipeline_cpu.sh: the session did not finish in 600 s")
    time.sleep(0.05)
secs, a1 = time.monotonic() - t0, proc_stat()
d = [y - x for x, y in zip(a0, a1)]
busy = d[0] + d[1] + d[2] + d[5] + d[6]
events = min(sinks)
print(f"{kind}: {events} events in {secs:.2f} s, {events / secs / 1e6:.2f} M events/s; "
      f"machine {100 * busy / sum(d):.0f} % busy, {100 * d[3] / sum(d):.0f} % idle, "
      f"{100 * d[7] / sum(d):.0f} % steal")
total = 0
for x in j["actors"]:
    if not x.get("pid"):
        continue
    st = open(f"/proc/{x['pid']}/stat").read().rsplit(")", 1)[1].split()
    cpu = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
    total += cpu
    print(f"  {x['name']:14s} {cpu:6.2f} s CPU  {1e9 * cpu / events:5.0f} ns/event")
print(f"  {'all actors':14s} {total:6.2f} s CPU  {1e9 * total / events:5.0f} ns/event")
PYEOF
