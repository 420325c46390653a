#!/bin/bash
# module_cost: what the cpu source's MODULE reports (docs/cpu.md, "Libraries loaded later")
# cost under target = all, where every process on the machine is sampled and every executable
# mmap of every process is reported: the worst case is a storm of short processes, each of
# which ld.so maps libc into. The workload is a shell loop starting COUNT /bin/true; it runs
# alone (the baseline), then under a session (a cpu source, target = all, at 99 Hz with the
# default user stacks; one correlator; a counting sink) of each build given, ROUNDS times, the
# builds in turn. For each build the medians of:
#   wall       the workload's wall time (the loop, from its start to its end)
#   actors     CPU time of the session's actors (cpu source, correlator, sink) during the
#              workload (/proc)
#   modules    MODULE records the cpu source sent (its `modules` counter), and unread
# The baseline's wall is measured the same way, without a session.
#
# Usage: bench/module_cost.sh [--count N] [--rounds R] XPUSUP_BINARY...   (as root)
set -u
COUNT=2000
ROUNDS=3
while [ $# -gt 0 ]; do
	case "$1" in
	--count) COUNT=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: module_cost.sh [--count N] [--rounds R] XPUSUP_BINARY..." >&2; exit 100; }
WORK=$(mktemp -d /tmp/xpusup-modcost-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
printf '[source cpu]\nkind = cpu\n[correlator]\n[sink out]\nkind = test\n' >"$WORK/c.conf"

storm() { # the workload's wall seconds
	/usr/bin/python3 - "$COUNT" <<'PYEOF'
import subprocess, sys, time
t0 = time.monotonic()
subprocess.run(["/bin/sh", "-c", f"i=0; while [ $i -lt {sys.argv[1]} ]; do /bin/true; i=$((i + 1)); done"], check=True)
print(f"{time.monotonic() - t0:.3f}")
PYEOF
}

cpu_of() { # user + system seconds of the session's actors
	"$1" status --session "$2" --json | /usr/bin/python3 -c '
import json, os, sys
j = json.load(sys.stdin)
t = 0
for a in j["actors"]:
    if a.get("pid"):
        st = open("/proc/%d/stat" % a["pid"]).read().rsplit(")", 1)[1].split()
        t += (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
print(t)'
}

counter() { # counter XPUSUP SESSION NAME: the cpu actor's counter
	"$1" status --session "$2" --json | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
print([a for a in j["actors"] if a["name"] == "cpu"][0]["counters"].get(sys.argv[1], 0))' "$3"
}

for r in $(seq 1 "$ROUNDS"); do
	echo "base $(storm)" >>"$WORK/res"
	for x in "$@"; do
		s="modcost$$"
		"$x" start "$WORK/c.conf" --session "$s" >/dev/null 2>&1 || { echo "module_cost.sh: $x: the session did not start" >&2; exit 1; }
		sleep 1
		c0=$(cpu_of "$x" "$s")
		wall=$(storm)
		sleep 0.5 # the actor drains its last records (drain_ms 50)
		c1=$(cpu_of "$x" "$s")
		echo "$x $wall $(/usr/bin/python3 -c "print($c1 - $c0)") $(counter "$x" "$s" modules) $(counter "$x" "$s" modules_unread)" >>"$WORK/res"
		"$x" stop --session "$s" >/dev/null 2>&1
	done
done
/usr/bin/python3 - "$WORK/res" "$COUNT" <<'PYEOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    rows[f[0]].append([float(v) for v in f[1:]])
count = int(sys.argv[2])
base = statistics.median(r[0] for r in rows.pop("base"))
print(f"{count} x /bin/true; medians of {len(next(iter(rows.values())))} rounds; alone: {base:.2f} s")
print(f"{'build':50s} {'wall s':>7s} {'ratio':>6s} {'actors CPU s':>12s} {'us/process':>10s} {'modules':>8s} {'unread':>7s}")
for name, rs in rows.items():
    wall = statistics.median(r[0] for r in rs)
    cpu = statistics.median(r[1] for r in rs)
    print(f"{name[-50:]:50s} {wall:7.2f} {wall / base:6.2f} {cpu:12.2f} {1e6 * cpu / count:10.0f} "
          f"{statistics.median(r[2] for r in rs):8.0f} {statistics.median(r[3] for r in rs):7.0f}")
PYEOF
