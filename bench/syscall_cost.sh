#!/bin/bash
# syscall_cost: what a session's cpu source costs every system call of the machine, by
# follow_mmap (docs/cpu.md, "Libraries loaded later"). `perf bench syscall basic` (10 M
# getppid calls, the cheapest there is) runs alone, then as the command of `xpusup record`
# with a cpu source (target = command, the default stacks) and follow_mmap = off, tracepoint
# and raw, ROUNDS times in turn. Prints each run's microseconds a call, then the medians and
# each one's difference from the run without a session. tracepoint needs tracefs mounted; where
# it is not, the source follows nothing (its log says so) and the line says "no tracefs".
#
# Usage: bench/syscall_cost.sh XPUSUP_BINARY [ROUNDS]   (root: the cpu source needs CAP_BPF)
set -u
XPUSUP=$(realpath "${1:?usage: syscall_cost.sh XPUSUP_BINARY [ROUNDS]}")
ROUNDS=${2:-3}
command -v perf >/dev/null || {
	echo "syscall_cost.sh: unable to run: perf (linux-perf) is missing" >&2
	exit 2
}
WORK=$(mktemp -d /tmp/xpusup-syscost-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
MODES="none off tracepoint raw"
tracefs=yes
[ -e /sys/kernel/tracing/events/syscalls/sys_enter_mmap ] ||
	[ -e /sys/kernel/debug/tracing/events/syscalls/sys_enter_mmap ] || tracefs=no

one() { # one MODE: microseconds a call
	if [ "$1" = none ]; then
		perf bench syscall basic >"$WORK/pb.txt" 2>&1
	else
		printf '[source cpu]\nkind = cpu\ntarget = command\nfollow_mmap = %s\n\n[correlator]\nkind = test\n' \
			"$1" >"$WORK/$1.conf"
		"$XPUSUP" record -c "$WORK/$1.conf" --session "syscost$$" -- \
			sh -c "perf bench syscall basic >'$WORK/pb.txt' 2>&1" >"$WORK/record.out" 2>&1 || {
			echo "syscall_cost.sh: the session failed:" >&2
			cat "$WORK/record.out" >&2
			exit 1
		}
	fi
	awk '/usecs\/op/ { print $1 }' "$WORK/pb.txt"
}

echo "syscall_cost: perf bench syscall basic, $ROUNDS round(s), $(nproc) CPUs, tracefs: $tracefs"
for r in $(seq 1 "$ROUNDS"); do
	for m in $MODES; do
		v=$(one "$m")
		echo "$r $m $v" | tee -a "$WORK/all"
	done
done
python3 - "$WORK/all" "$tracefs" <<'PYEOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    _, mode, v = line.split()
    runs.setdefault(mode, []).append(float(v))
base = statistics.median(runs["none"])
for mode, vs in runs.items():
    med = statistics.median(vs)
    note = " (no tracefs: nothing followed)" if mode == "tracepoint" and sys.argv[2] == "no" else ""
    print(f"{mode:10s} median {med:.4f} us a call, {1000 * (med - base):+6.1f} ns against no session, "
          f"ratio {med / base:.2f}{note}")
PYEOF
