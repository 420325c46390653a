#!/bin/bash
# The CPU source with real BPF programs, real processes and real sessions (root; CI runs it).
#
#   - `xpusup record` of a workload with known hot functions: shares within 5 points of
#     `perf record` on the same workload; the command's exit status is record's;
#   - target = command follows forks and execs, and leaves other processes out;
#     PROC_EXEC (fork and exec, with the path) and PROC_EXIT (with the status) arrive;
#   - the launch uprobe: LAUNCH records with the right correlation ids and stacks;
#   - target = pid:, cgroup:; BPF ring buffer overflow counted and sent as LOSS;
#   - user stacks both ways, on the records as they left the source (a test correlator's
#     replay file, read by cpu/stack_copies.py): the default (dwarf on x86-64) copies the
#     stack into samples and launches, unwind = fp walks frame pointers and copies nothing;
#   - libraries mapped after exec reach the ring as MODULE records, named, with the file's
#     device and inode;
#   - without CAP_BPF/CAP_PERFMON: exit 100 naming them; record goes on without CPU stacks.
#
#
# Usage: cpu_test.sh XPUSUP HOTSPOTS FORKTREE LAUNCHER PERF_FOLDED_PY STACK_COPIES_PY
set -u
XPUSUP=${1:?usage: cpu_test.sh XPUSUP HOTSPOTS FORKTREE LAUNCHER PERF_FOLDED_PY STACK_COPIES_PY}
HOTSPOTS=${2:?}
FORKTREE=${3:?}
LAUNCHER=${4:?}
PERF_FOLDED=${5:?}
STACK_COPIES=${6:?}
. "$(dirname "$0")/session_lib.sh"
session_lib_init cputest c
# A cgroup v2 folder: under the host's cgroup2 mount, or one of our own on a v1 host.
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -z "$CG2" ]; then
	CG2=$WORK/cgroup2
	mkdir -p "$CG2" && mount -t cgroup2 none "$CG2" && MOUNTED_CG2=1
fi
CG=$CG2/xpusup-cputest-$$
cleanup_extra() {
	[ -n "${bg:-}" ] && kill "$bg" 2>/dev/null
	[ -n "${other:-}" ] && kill "$other" 2>/dev/null
	if [ -d "$CG" ]; then
		while read -r p; do echo "$p" >"$CG2/cgroup.procs"; done <"$CG/cgroup.procs" 2>/dev/null
		rmdir "$CG" 2>/dev/null
	fi
	[ -n "${MOUNTED_CG2:-}" ] && umount "$CG2"
}
if ! command -v perf >/dev/null; then
	echo "1..0 # SKIP perf is not installed (scripts/install-deps installs linux-perf)"
	exit 77
fi

# A pipeline for record's command with a dump sink: every event as a JSON line.
dump_conf() { # FILE DUMP [extra cpu keys...]
	local f=$1 d=$2
	shift 2
	{
		printf '[source cpu]\nkind = cpu\ntarget = command\n'
		for k in "$@"; do echo "$k"; done
		printf '\n[correlator]\nttl_ms = 500\nexit_grace_ms = 100\n\n[sink dump]\nkind = test\ndump = %s\n' "$d"
	} >"$f"
}

# ---- hot functions against perf --------------------------------------------------------
cd "$WORK" || exit 1
"$XPUSUP" record -o "$WORK/rec" -F 499 --session "$PREFIX-hot" -- "$HOTSPOTS" --seconds 4 \
	>"$WORK/rec.out" 2>"$WORK/rec.err"
ok $? "record: exit status 0 of the command"
for f in flame.folded flame.html trace.json stats.json stats.txt pipeline.conf; do
	[ -s "$WORK/rec/$f" ]
	ok $? "record: wrote $f"
done
"$XPUSUP" check "$WORK/rec/trace.json" >"$WORK/check.out" 2>&1
ok $? "record: xpusup check finds trace.json clean ($(tail -n 3 "$WORK/check.out" | tr '\n' ' '))"
grep -q "outputs:" "$WORK/rec.err" && grep -q "$WORK/rec/flame.folded" "$WORK/rec.err"
ok $? "record: says where the outputs are"
perf record -q -F 499 -g -e cpu-clock -o "$WORK/perf.data" -- "$HOTSPOTS" --seconds 4 \
	>/dev/null 2>"$WORK/perf.err"
ok $? "perf record of the same workload"
perf script -i "$WORK/perf.data" 2>/dev/null | "$PY" "$PERF_FOLDED" collapse >"$WORK/perf.folded"
grep -v '^xpusup' "$WORK/rec/flame.folded" | grep hotspots >"$WORK/ours.folded"
"$PY" "$PERF_FOLDED" compare "$WORK/perf.folded" "$WORK/ours.folded" --tolerance 5 \
	hotspots_walk hotspots_hot_leaf hotspots_cold_leaf >"$WORK/compare.txt" 2>&1
ok $? "record: hot function shares within 5 points of perf's: $(tr '\n' ' ' <"$WORK/compare.txt" | cut -c1-300)"
"$PY" "$PERF_FOLDED" shares "$WORK/ours.folded" hotspots_hot_leaf hotspots_cold_leaf >"$WORK/shares.json"
"$PY" - "$WORK/shares.json" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
# the workload's own rule: 2 units hot, 1 unit cold
sys.exit(0 if 0.56 <= s["hotspots_hot_leaf"] <= 0.76 and 0.23 <= s["hotspots_cold_leaf"] <= 0.43 else 1)
PYEOF
ok $? "record: the hot leaf has about 2/3 and the cold leaf 1/3 ($(tr -d '\n' <"$WORK/shares.json"))"
"$XPUSUP" record -o "$WORK/rec7" --session "$PREFIX-exit" -- sh -c 'exit 7' >/dev/null 2>&1
ok $([ $? = 7 ] && echo 0 || echo 1) "record: exits with the command's status (7)"
"$XPUSUP" record -o "$WORK/recsig" --session "$PREFIX-sig" -- sh -c 'kill -TERM $$' >/dev/null 2>&1
ok $([ $? = 143 ] && echo 0 || echo 1) "record: a command killed by SIGTERM gives 128+15"
"$XPUSUP" record -o "$WORK/recnx" --session "$PREFIX-nx" -- "$WORK/no-such-program" >/dev/null 2>"$WORK/nx.err"
ok $([ $? = 127 ] && grep -q "command not found" "$WORK/nx.err" && [ ! -e "$BASE/$PREFIX-nx.log" ] &&
	echo 0 || echo 1) "record: a command that does not exist: 127, said so, no session started"

# ---- a record killed with SIGKILL: its session stops by itself ----------------------------
"$XPUSUP" record -o "$WORK/reckill" --session "$PREFIX-kill" -- sleep 20.$$ >/dev/null 2>&1 &
rec=$!
wait_for 20 "$PREFIX-kill" "a['cpu']['state'] == 'running'"
kill -9 "$rec"
wait "$rec" 2>/dev/null
deadline=$((SECONDS + 20))
while [ -e "$BASE/$PREFIX-kill" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
[ ! -e "$BASE/$PREFIX-kill" ] && grep -q "owns session .* is gone: stopping" "$BASE/$PREFIX-kill.log"
ok $? "record: killed with SIGKILL, its session stops by itself and leaves nothing"
pkill -f "sleep 20.$$" 2>/dev/null

# ---- the process tree: forks and execs followed, other processes left out ------------------
"$HOTSPOTS" --seconds 6 2>/dev/null &
bg=$!
dump_conf "$WORK/tree.conf" "$WORK/tree.jsonl" "frequency_hz = 499"
"$XPUSUP" record -c "$WORK/tree.conf" --session "$PREFIX-tree" -- \
	"$FORKTREE" --children 3 --seconds 2 --exec --program "$HOTSPOTS" >"$WORK/tree.out" 2>&1
ok $? "tree: record of forktree (3 children that exec hotspots) succeeds"
"$PY" - "$WORK/tree.jsonl" "$bg" "$HOTSPOTS" >"$WORK/tree.txt" 2>&1 <<'PYEOF'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
outsider = int(sys.argv[2])
samples = [e for e in events if e["kind"] == "cpu_sample"]
# flags bit 0: XPU_PROC_F_FORK (a fork; an exec otherwise)
forks = [e for e in events if e["kind"] == "proc_exec" and e.get("flags", 0) & 1]
execs = [e for e in events if e["kind"] == "proc_exec" and not e.get("flags", 0) & 1]
exits = [e for e in events if e["kind"] == "proc_exit"]
tree = {e["pid"] for e in forks} | {e["pid"] for e in execs}
checks = {
    "no sample of the outside process": all(e["pid"] != outsider for e in samples),
    "3 forks recorded": len(forks) >= 3,
    "every sample is from the tree": all(e["pid"] in tree for e in samples),
    "samples from at least 3 processes": len({e["pid"] for e in samples}) >= 3,
    "3 execs of hotspots": sum(e.get("name") == "hotspots" for e in execs) >= 3,
    "the children's exits with status 0": sum(e["pid"] in tree and e.get("value", 0) == 0 for e in exits) >= 3,
    "children's samples name hotspots_hot_leaf":
        any("hotspots_hot_leaf" in (e.get("frames") or []) for e in samples),
}
for k, v in checks.items():
    print(("ok" if v else "FAIL"), k)
sys.exit(0 if all(checks.values()) else 1)
PYEOF
ok $? "tree: $(grep -c '^ok' "$WORK/tree.txt")/7 checks: $(grep FAIL "$WORK/tree.txt" | tr '\n' ' ')"
kill "$bg" 2>/dev/null
wait "$bg" 2>/dev/null
bg=

# ---- a process ended by a thread that is not its first ----------------------------------
# The exit record names the process (its first thread's comm), not the thread that ended it:
# a CUDA program's last thread is often CUDA's own "cuda-EvtHandlr".
dump_conf "$WORK/last.conf" "$WORK/last.jsonl"
"$XPUSUP" record -c "$WORK/last.conf" --session "$PREFIX-last" -- \
	"$HOTSPOTS" --seconds 1 --threads 2 --main-exits-first >"$WORK/last.out" 2>&1
ok $? "last thread: record of hotspots --main-exits-first succeeds"
"$PY" - "$WORK/last.jsonl" >"$WORK/last.txt" 2>&1 <<'PYEOF'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
pids = {e["pid"] for e in events if e["kind"] == "proc_exec" and e.get("name") == "hotspots"}
exits = [e for e in events if e["kind"] == "proc_exit" and e["pid"] in pids]
workers = {e.get("name") for e in events if e["kind"] == "cpu_sample" and e["pid"] in pids}
print("exits", [(e.get("name"), e.get("value")) for e in exits], "sampled threads", sorted(workers))
sys.exit(0 if len(exits) == 1 and exits[0].get("name") == "hotspots" and exits[0].get("value", 0) == 0
         and "hotspots-worker" in workers else 1)
PYEOF
ok $? "last thread: the exit record names the process, not its last thread ($(cat "$WORK/last.txt"))"

# ---- processes whose threads all exit at once ----------------------------------------------
# exit_group ends 32 burning threads together: more than one may find the process's live
# count at 0 in the BPF exit program, and only one exit record a process is wanted (before the
# fix, 5 of 300 processes here had two).
dump_conf "$WORK/storm.conf" "$WORK/storm.jsonl"
"$XPUSUP" record -c "$WORK/storm.conf" --session "$PREFIX-storm" -- bash -c \
	"for i in \$(seq 300); do '$HOTSPOTS' --seconds 0.01 --threads 32 --group-exit; done" \
	>"$WORK/storm.out" 2>&1
ok $? "exit storm: record of 300 group exits succeeds"
"$PY" - "$WORK/storm.jsonl" >"$WORK/storm.txt" 2>&1 <<'PYEOF'
import collections, json, sys
events = sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda e: e["ts"])
# exit records per process life: a pid the kernel reuses within the run is two lives
lives = collections.defaultdict(list)
for e in events:
    if e["kind"] == "proc_exec" and e.get("name") == "hotspots":
        lives[e["pid"]].append(0)
    elif e["kind"] == "proc_exit" and lives.get(e["pid"]):
        lives[e["pid"]][-1] += 1
per = collections.Counter(n for l in lives.values() for n in l)
print("processes", sum(per.values()), "exit records per process", dict(per))
sys.exit(0 if sum(per.values()) >= 290 and set(per) == {1} else 1)
PYEOF
ok $? "exit storm: one exit record per process ($(cat "$WORK/storm.txt"))"

# ---- the launch uprobe -------------------------------------------------------------------
dump_conf "$WORK/launch.conf" "$WORK/launch.jsonl" "launch_marker = $LAUNCHER"
"$XPUSUP" record -c "$WORK/launch.conf" --session "$PREFIX-launch" -- "$LAUNCHER" 200 \
	>"$WORK/launch.out" 2>&1
ok $? "launch: record of the stand-in launcher succeeds"
"$PY" - "$WORK/launch.jsonl" >"$WORK/launch.txt" 2>&1 <<'PYEOF'
import json, sys
launches = [json.loads(l) for l in open(sys.argv[1])]
launches = [e for e in launches if e["kind"] == "launch"]
ids = sorted(e["corr"] for e in launches)
bad = []
for e in launches:
    frames = e.get("frames") or []
    want = "launcher_launch_even" if e["corr"] % 2 == 0 else "launcher_launch_odd"
    if frames[:2] != [want, "main"]:
        bad.append((e["corr"], frames[:3]))
print("launches", len(launches), "ids ok", ids == list(range(1001, 1201)), "bad stacks", bad[:3])
sys.exit(0 if ids == list(range(1001, 1201)) and not bad else 1)
PYEOF
ok $? "launch: 200 LAUNCH records, ids 1001..1200, stacks start at the calling function then main ($(cat "$WORK/launch.txt"))"

# ---- pid and cgroup targets ------------------------------------------------------------------
"$HOTSPOTS" --seconds 30 2>/dev/null &
bg=$!
"$HOTSPOTS" --seconds 30 2>/dev/null &
other=$!
for mode in pid cgroup; do
	s="$PREFIX-$mode"
	if [ $mode = pid ]; then
		target="pid:$bg"
	else
		mkdir "$CG" && echo "$bg" >"$CG/cgroup.procs"
		target="cgroup:$CG"
	fi
	printf '[source cpu]\nkind = cpu\nfrequency_hz = 499\ntarget = %s\n\n[correlator]\n\n[sink dump]\nkind = test\ndump = %s\n' \
		"$target" "$WORK/$mode.jsonl" >"$WORK/$mode.conf"
	"$XPUSUP" start "$WORK/$mode.conf" --session "$s" >/dev/null 2>&1
	ok $? "$mode: a session with target = $target starts"
	wait_for 20 "$s" "c('cpu', 'samples') >= 200"
	ok $? "$mode: samples arrive"
	"$XPUSUP" stop --session "$s" >/dev/null 2>&1
	"$PY" -c "
import json, sys
pids = {json.loads(l)['pid'] for l in open('$WORK/$mode.jsonl') if '\"cpu_sample\"' in l}
sys.exit(0 if pids == {$bg} else 1)"
	ok $? "$mode: every sample is from pid $bg, none from $other"
done
kill "$bg" "$other" 2>/dev/null
wait "$bg" "$other" 2>/dev/null
bg=

# ---- user stacks: copied (the default, dwarf) or walked (fp) ----------------------------------
# A [correlator] of kind test writes the records it reads, as the source wrote them. Stack
# copies are x86-64's only: elsewhere the default is fp.
modes="dwarf fp"
[ "$(uname -m)" = x86_64 ] || modes=fp
"$HOTSPOTS" --seconds 30 2>/dev/null &
bg=$!
sleep 0.2
cp "/proc/$bg/maps" "$WORK/hot.maps"
for mode in $modes; do
	s="$PREFIX-u$mode"
	key=""
	[ "$mode" = fp ] && key="unwind = fp"
	printf '[source cpu]\nkind = cpu\nfrequency_hz = 499\ntarget = pid:%s\n%s\n\n[correlator]\nkind = test\ndump = %s\n' \
		"$bg" "$key" "$WORK/$mode.replay" >"$WORK/$mode.conf"
	"$XPUSUP" start "$WORK/$mode.conf" --session "$s" >/dev/null 2>&1
	ok $? "unwind $mode: a session on pid $bg starts${key:+ ($key)}"
	if [ "$mode" = dwarf ]; then
		wait_for 20 "$s" "c('cpu', 'stack_copies') >= 200 and c('cpu', 'stack_copy_kib') > 0"
		ok $? "unwind $mode: the actor counts stack copies ($(json "$s" "c('cpu', 'stack_copies'), c('cpu', 'stack_copy_kib'), c('cpu', 'stack_copy_short')"))"
	else
		wait_for 20 "$s" "c('cpu', 'samples') >= 200"
		ok $? "unwind $mode: samples arrive, no stack copies ($(json "$s" "c('cpu', 'stack_copies')"))"
	fi
	"$XPUSUP" stop --session "$s" >/dev/null 2>&1
	"$PY" "$STACK_COPIES" samples "$WORK/$mode.replay" "$mode" "$bg" "$WORK/hot.maps" 16384 \
		>"$WORK/$mode.txt" 2>&1
	ok $? "unwind $mode: the records as they left the source: $(grep -c '^ok' "$WORK/$mode.txt") checks ok $(grep -v '^ok' "$WORK/$mode.txt" | tr '\n' ' ')"
done
kill "$bg" 2>/dev/null
wait "$bg" 2>/dev/null
bg=
if [ "$modes" != fp ]; then
	printf '[source cpu]\nkind = cpu\ntarget = command\nstack_bytes = 32768\nlaunch_marker = %s\n\n[correlator]\nkind = test\ndump = %s\n' \
		"$LAUNCHER" "$WORK/launch.replay" >"$WORK/ulaunch.conf"
	"$XPUSUP" record -c "$WORK/ulaunch.conf" --session "$PREFIX-ulaunch" -- "$LAUNCHER" 200 \
		>"$WORK/ulaunch.out" 2>&1
	ok $? "unwind dwarf: record of the stand-in launcher with stack_bytes = 32768 succeeds"
	"$PY" "$STACK_COPIES" launches "$WORK/launch.replay" 200 >"$WORK/ulaunch.txt" 2>&1
	ok $? "unwind dwarf: launches carry the stack at the marker's entry: $(grep -c '^ok' "$WORK/ulaunch.txt") checks ok $(grep -v '^ok' "$WORK/ulaunch.txt" | tr '\n' ' ')"
fi

# ---- libraries mapped after exec: MODULE records (docs/cpu.md, "Libraries loaded later") ----
# Each sleep lives 1 s: time for the actor to name its libc, a drain_ms (50 ms) later on a
# loaded machine (a process gone by then is counted in modules_unread instead).
printf '[source cpu]\nkind = cpu\ntarget = command\n\n[correlator]\nkind = test\ndump = %s\n' \
	"$WORK/mods.replay" >"$WORK/mods.conf"
sleep_bin=$(command -v sleep)
sleep_bin=$(readlink -f "$sleep_bin")
"$XPUSUP" record -c "$WORK/mods.conf" --session "$PREFIX-mods" -- /bin/sh -c \
	"for i in 1 2 3 4 5; do $sleep_bin 1; done" >"$WORK/mods.out" 2>&1
ok $? "modules: record of five sleeps in a row succeeds"
"$PY" "$STACK_COPIES" modules "$WORK/mods.replay" "$sleep_bin" 5 >"$WORK/mods.txt" 2>&1
ok $? "modules: each sleep's libc reached the ring as MODULE: $(tr '\n' ' ' <"$WORK/mods.txt")"
# follow_mmap = auto: the mmap syscall's tracepoints where tracefs shows them, else the raw
# syscall tracepoint, which the log says (CI machines come with tracefs mounted or not).
modes="raw off"
if [ -e /sys/kernel/tracing/events/syscalls/sys_enter_mmap ] ||
	[ -e /sys/kernel/debug/tracing/events/syscalls/sys_enter_mmap ]; then
	! grep -Eq "following mmap|unable to follow mmap" "$BASE/$PREFIX-mods.log"
	ok $? "modules: tracefs shows the mmap tracepoints: auto takes them, nothing said"
else
	grep -q "no mmap tracepoints in tracefs (No such file or directory; is it mounted?): following mmap through the raw syscall tracepoint$" \
		"$BASE/$PREFIX-mods.log"
	ok $? "modules: tracefs does not show the mmap tracepoints: auto takes the raw one and says so"
	modes="$modes tracepoint" # which cannot work here: said, and nothing followed
fi
# The raw syscall tracepoint on any machine; off: nothing reported.
for mode in $modes; do
	sed "s|mods.replay|mods_$mode.replay|; s|^target = command|&\nfollow_mmap = $mode|" \
		"$WORK/mods.conf" >"$WORK/mods_$mode.conf"
	"$XPUSUP" record -c "$WORK/mods_$mode.conf" --session "$PREFIX-mods$mode" -- /bin/sh -c \
		"for i in 1 2 3; do $sleep_bin 1; done" >"$WORK/mods_$mode.out" 2>&1
	rc=$?
	check=modules
	[ $mode != raw ] && check=no-modules
	"$PY" "$STACK_COPIES" $check "$WORK/mods_$mode.replay" "$sleep_bin" 3 >"$WORK/mods_$mode.txt" 2>&1
	pyrc=$?
	logrc=0
	if [ $mode = tracepoint ]; then
		grep -q "unable to follow mmap (no mmap tracepoints in tracefs (No such file or directory; is it mounted?)): libraries loaded later are named after the next read of the maps" \
			"$BASE/$PREFIX-mods$mode.log"
		logrc=$?
	fi
	ok $([ $rc = 0 ] && [ $pyrc = 0 ] && [ $logrc = 0 ] && echo 0 || echo 1) \
		"modules, follow_mmap = $mode: $([ $mode = raw ] && echo "each sleep's libc reached the ring as MODULE" || echo "no MODULE record")$([ $mode = tracepoint ] && echo ", and without tracefs the log says why (log $logrc)") (rc $rc): $(tr '\n' ' ' <"$WORK/mods_$mode.txt")"
done
# Without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE (a source given CAP_BPF and CAP_PERFMON
# only) map_files' links can be read but not followed: the file is taken by its name.
if command -v setpriv >/dev/null; then
	sed "s|mods.replay|mods_nocap.replay|" "$WORK/mods.conf" >"$WORK/mods_nocap.conf"
	setpriv --bounding-set=-sys_admin,-checkpoint_restore "$XPUSUP" record -c \
		"$WORK/mods_nocap.conf" --session "$PREFIX-modsnc" -- /bin/sh -c \
		"for i in 1 2 3 4 5; do $sleep_bin 1; done" >"$WORK/mods_nocap.out" 2>&1
	rc=$?
	"$PY" "$STACK_COPIES" modules "$WORK/mods_nocap.replay" "$sleep_bin" 5 \
		>"$WORK/mods_nocap.txt" 2>&1
	pyrc=$?
	grep -q "map_files cannot be followed (Operation not permitted: needs CAP_SYS_ADMIN" \
		"$BASE/$PREFIX-modsnc.log"
	logrc=$?
	ok $([ $rc = 0 ] && [ $pyrc = 0 ] && [ $logrc = 0 ] && echo 0 || echo 1) \
		"modules without CAP_SYS_ADMIN: each sleep's libc still reached the ring, by name, and the log says why (rc $rc, log $logrc): $(tr '\n' ' ' <"$WORK/mods_nocap.txt")"
else
	ok 1 "setpriv (util-linux) is missing"
fi

# ---- a BPF ring buffer too small: drops counted, sent as LOSS --------------------------------
s="$PREFIX-drop"
# as fast as this kernel lets us sample (it lowers perf_event_max_sample_rate on slow machines)
hz=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 20000)
[ "$hz" -gt 20000 ] && hz=20000
printf '[source cpu]\nkind = cpu\nfrequency_hz = '"$hz"'\nringbuf_kb = 64\nwakeup_kb = 1048576\ndrain_ms = 1000\n\n[correlator]\n\n[sink dump]\nkind = test\ndump = %s\n' \
	"$WORK/drop.jsonl" >"$WORK/drop.conf"
"$HOTSPOTS" --seconds 5 --threads 2 2>/dev/null &
bg=$!
"$XPUSUP" start "$WORK/drop.conf" --session "$s" >/dev/null 2>&1
ok $? "drops: a session with a 64 KiB BPF ring buffer drained once a second starts"
wait_for 20 "$s" "c('cpu', 'bpf_drops') > 0 and c('dump', 'events_in') > 0"
ok $? "drops: the actor counts BPF ring buffer drops"
sleep 1.5
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
grep -q '"kind":"loss"' "$WORK/drop.jsonl"
ok $? "drops: they reach the sink as LOSS records"
kill "$bg" 2>/dev/null
wait "$bg" 2>/dev/null
bg=

# ---- target = command outside record, a pid that does not exist ------------------------------
printf '[source cpu]\nkind = cpu\ntarget = command\n\n[correlator]\n\n[sink dump]\nkind = test\ndump = %s\n' \
	"$WORK/cmd.jsonl" >"$WORK/cmd.conf"
"$XPUSUP" start "$WORK/cmd.conf" --session "$PREFIX-cmd" >/dev/null 2>"$WORK/cmd.err"
ok $([ $? = 100 ] && grep -q "target = command is for sessions of .xpusup record" "$WORK/cmd.err" &&
	echo 0 || echo 1) "target = command outside record: exit 100, says why"
printf '[source cpu]\nkind = cpu\ntarget = pid:999999999\n\n[correlator]\n\n[sink dump]\nkind = test\ndump = %s\n' \
	"$WORK/nopid.jsonl" >"$WORK/nopid.conf"
"$XPUSUP" start "$WORK/nopid.conf" --session "$PREFIX-nopid" >/dev/null 2>"$WORK/nopid.err"
ok $([ $? = 100 ] && grep -q "unable to follow pid 999999999: no such process" "$WORK/nopid.err" &&
	echo 0 || echo 1) "a pid that does not exist: exit 100, names it"

# ---- without the capabilities ---------------------------------------------------------------
if command -v setpriv >/dev/null; then
	nocaps="setpriv --bounding-set=-bpf,-perfmon,-sys_admin"
	printf '[source cpu]\nkind = cpu\n\n[correlator]\n\n[sink dump]\nkind = test\ndump = %s\n' \
		"$WORK/nocap.jsonl" >"$WORK/nocap.conf"
	$nocaps "$XPUSUP" start "$WORK/nocap.conf" --session "$PREFIX-nocap" >/dev/null 2>"$WORK/nocap.err"
	rc=$?
	ok $([ $rc = 100 ] && grep -q "CAP_BPF and CAP_PERFMON" "$WORK/nocap.err" && echo 0 || echo 1) \
		"no caps: start fails with exit 100 naming CAP_BPF and CAP_PERFMON (rc $rc)"
	$nocaps "$XPUSUP" record -o "$WORK/nocap" --session "$PREFIX-nocaprec" -- sh -c 'exit 3' \
		>/dev/null 2>"$WORK/nocaprec.err"
	rc=$?
	ok $([ $rc = 3 ] && grep -q "going on without cpu: .*CAP_BPF" "$WORK/nocaprec.err" &&
		[ -s "$WORK/nocap/stats.json" ] && echo 0 || echo 1) \
		"no caps: record goes on without CPU stacks, says why, keeps the exit status (rc $rc)"
else
	ok 1 "setpriv (util-linux) is missing"
fi

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
