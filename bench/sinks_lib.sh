#!/bin/bash
# sinks_lib.sh: what the sink benchmarks share (sourced, not run). Needs XPUSUP (the xpusup
# binary), COUNT (launches) and WORK (a temporary folder) set.
#
# run NAME SINK_SECTIONS... prints "events seconds cpu": a session with those sink sections
# (config lines, one an argument), the synthetic source flat out (COUNT launches, 4
# processes) and 2 correlator shards; events = what the slowest sink received, seconds =
# from the start until it had them all, cpu = user + system seconds of the sink actors.
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

