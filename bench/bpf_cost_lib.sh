# What the cpu source's BPF sampler costs per run, from the kernel's own BPF statistics:
# shared by bench/stack_copy_cost.sh and bench/python_cost.sh (sourced, not run).
#
#	bpf_cost_init NAME           needs XPUSUP (the binary) and bpftool; sets TMP and SESSION,
#	                             turns kernel.bpf_stats_enabled on and restores it (and stops
#	                             the session, removes TMP) at exit
#	bpf_cost_run "KEYS" "COUNTERS" CMD...
#	                             runs each CMD in the background, samples them at 999 Hz
#	                             for 8 s in a session of the cpu source (target = their pids,
#	                             KEYS added to its section) and a test correlator, stops
#	                             them, and prints one line: profile_sample's run_cnt and
#	                             run_time_ns (read one second after the workload ended, so
#	                             every one of its samples has reached the actor), then the
#	                             cpu actor's COUNTERS (names, space-separated; 0 if absent)
#	                             at that moment. Print it into a file, not a pipe: the next
#	                             run must not start before this one's session stopped.
#
# Samples of other processes (a shared machine) run the program too and return at the target
# filter: a run on a sleeping target gives that cost per run (t_f), for the callers to take
# out: ns per sample = (run_time_ns - (run_cnt - samples) * t_f) / samples.

bpf_cost_init() { # NAME
	[ -x "$XPUSUP" ] || { echo "$1: no $XPUSUP (build it first)" >&2; exit 100; }
	command -v bpftool >/dev/null || { echo "$1: bpftool is missing" >&2; exit 100; }
	TMP=$(mktemp -d "/tmp/$1-XXXXXX")
	SESSION=$1-$$
	BPF_COST_OLD_STATS=$(cat /proc/sys/kernel/bpf_stats_enabled)
	trap bpf_cost_cleanup EXIT
	sysctl -q kernel.bpf_stats_enabled=1 || exit 111
}

bpf_cost_cleanup() {
	"$XPUSUP" stop --session "$SESSION" >/dev/null 2>&1
	sysctl -q kernel.bpf_stats_enabled="$BPF_COST_OLD_STATS"
	rm -rf "$TMP"
}

bpf_cost_run() { # "KEYS" "COUNTERS" CMD...
	local key=$1 counters=$2 pids="" p cmd
	shift 2
	for cmd in "$@"; do
		$cmd >/dev/null 2>&1 &
		pids="$pids${pids:+,}$!"
	done
	sleep 0.5
	printf '[source cpu]\nkind = cpu\nfrequency_hz = 999\ntarget = pid:%s\n%s\n\n[correlator]\nkind = test\n' \
		"$pids" "$key" >"$TMP/p.conf"
	"$XPUSUP" start "$TMP/p.conf" --session "$SESSION" >/dev/null 2>&1 ||
		{ echo "bpf_cost: the session did not start" >&2; exit 111; }
	sleep 8
	for p in ${pids//,/ }; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	sleep 1
	bpftool prog show name profile_sample -j | python3 -c '
import json, sys
p = json.load(sys.stdin)
p = p[0] if isinstance(p, list) else p
print(p["run_cnt"], p["run_time_ns"], end=" ")'
	"$XPUSUP" status --session "$SESSION" --json | python3 -c '
import json, sys
c = {a["name"]: a for a in json.load(sys.stdin)["actors"]}["cpu"]["counters"]
print(" ".join(str(c.get(k, 0)) for k in sys.argv[1:]))' $counters
	"$XPUSUP" stop --session "$SESSION" >/dev/null 2>&1
}
