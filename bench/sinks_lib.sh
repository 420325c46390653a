#!/bin/bash
# sinks_lib.sh: what the sink benchmarks share (sourced, not run). Needs XPUSUP (the xpusup
# binary), COUNT (launches) and WORK (a temporary folder) set.
#
# measure LABEL BASE NAME SECTIONS... runs one session (run, below) and keeps its figures for
# report: LABEL names the line, BASE the label of the line it is compared with ("" for a
# baseline itself). A script measures every line once a round, ROUNDS rounds (environment,
# default 1), so that each ratio is taken against its baseline of the same round: this VM's
# rates move by 15 % and more between minutes, the ratio of two runs a few seconds apart much
# less. report prints, per line, the median over the rounds (and the range, with more than
# one).
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

def proc_stat():
    return [int(x) for x in open("/proc/stat").readline().split()[1:]]

def cpu_of(pid):  # user + system seconds of a process, its threads included
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")

def actors_report(j, events, secs, a0):
    # SINKS_CPU_REPORT (bench/pipeline_cpu.sh): how busy the machine was and each actor's
    # CPU, on stderr
    d = [y - x for x, y in zip(a0, proc_stat())]
    print(f"{events} events in {secs:.2f} s, {events / secs / 1e6:.2f} M events/s; machine "
          f"{100 * (d[0] + d[1] + d[2] + d[5] + d[6]) / sum(d):.0f} % busy, "
          f"{100 * d[3] / sum(d):.0f} % idle, {100 * d[7] / sum(d):.0f} % steal", file=sys.stderr)
    total = 0
    for x in j["actors"]:
        if x.get("pid"):
            cpu = cpu_of(x["pid"])
            total += cpu
            print(f"  {x['name']:14s} {cpu:6.2f} s CPU  {1e9 * cpu / events:5.0f} ns/event",
                  file=sys.stderr)
    print(f"  {'all actors':14s} {total:6.2f} s CPU  {1e9 * total / events:5.0f} ns/event",
          file=sys.stderr)

a0, t0 = proc_stat(), time.monotonic()
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
        secs = time.monotonic() - t0
        cpu = sum(cpu_of(x["pid"]) for x in j["actors"] if x["role"] == "sink" and x.get("pid"))
        if os.environ.get("SINKS_CPU_REPORT"):
            actors_report(j, min(sinks), secs, a0)
        print(min(sinks), secs, cpu)
        break
    if time.monotonic() - t0 > 600:
        print(0, 0, 0)
        break
    time.sleep(0.02)
PYEOF
	"$XPUSUP" stop --session "$s" >/dev/null 2>&1
}


ROUNDS=${ROUNDS:-1}
ROUND=1

measure() { # measure LABEL BASE NAME SECTIONS...
	local label=$1 base=$2 e t c
	shift 2
	read -r e t c < <(run "$@")
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$ROUND" "$label" "$base" "$e" "$t" "$c" >>"$WORK/results"
}

report() { # report TITLE: the lines in the order first measured
	/usr/bin/python3 - "$1" "$WORK/results" <<'PYEOF'
import statistics, sys
title, path = sys.argv[1], sys.argv[2]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
order, got = [], {}
for rnd, label, base, e, t, c in rows:
    if label not in got:
        order.append(label)
    got.setdefault(label, {})[rnd] = (base, int(e), float(t), float(c))
rounds = sorted({r[0] for r in rows}, key=int)
print(f"{title}; {len(rounds)} round(s): ratio = rate / its baseline's rate in the same round;")
print("  sink CPU = user + system time of the sink actors per event received; medians, [range]")
for label in order:
    ratios, rates, cpus = [], [], []
    for rnd, (base, e, t, c) in got[label].items():
        rate = e / t if t and e else 0
        b = got.get(base, {}).get(rnd) if base else (base, e, t, c)
        brate = b[1] / b[2] if b and b[2] and b[1] else 0
        rates.append(rate)
        ratios.append(rate / brate if brate else 0)
        cpus.append(c * 1e9 / e if e else 0)
    span = lambda v, f: f" [{f(min(v))}-{f(max(v))}]" if len(v) > 1 else ""
    print(f"{label:44s}: {statistics.median(rates) / 1e6:5.2f} M events/s{span(rates, lambda x: f'{x / 1e6:.2f}')},"
          f" ratio {statistics.median(ratios):.2f}{span(ratios, lambda x: f'{x:.2f}')},"
          f" sink CPU {statistics.median(cpus):4.0f}{span(cpus, lambda x: f'{x:.0f}')} ns/event")
PYEOF
}
