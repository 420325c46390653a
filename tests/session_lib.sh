# Helpers shared by the tests that drive real sessions (sourced, not run):
#
#	. "$(dirname "$0")/session_lib.sh"
#	session_lib_init NAME PREFIX     sets PY, BASE, WORK (a temporary folder), PREFIX,
#					 n, failed; skips (77) without root or XDG_RUNTIME_DIR;
#					 stops the run's sessions and removes WORK on exit, after
#					 calling cleanup_extra if the test defines it
#	ok STATUS TEXT                   one TAP line
#	json SESSION EXPR                EXPR in Python over `xpusup status --json`: a = actors
#					 by name, c(name, counter), sum_(counter) over the
#					 correlator shards, rings
#	wait_for SECONDS SESSION EXPR    until EXPR prints True
#	log_clean SESSION TEXT           the session log has no sanitizer report and no actor
#					 stopped with a non-zero exit
#	settled SINK                     an expression for wait_for: nothing held in the shards,
#					 every record in the rings read and every drop told (a
#					 ring full at its source's end owes a LOSS record until its
#					 next flush), and each record read an event SINK received
#					 or counted missing (every synthetic record is one event)
#	free_port                        a TCP port free on 127.0.0.1 now (another process may
#					 take it before the caller binds: retry)
#	synthetic COUNT                  a [correlator] and a synthetic [source syn] section:
#					 a deterministic run (every launch joined, stacks of the
#					 simulated training loop, durations from the launch number)
#
# XPUSUP must be set to the binary first.

session_lib_init() { # NAME PREFIX
	PY=/usr/bin/python3
	if [ "$(id -u)" != 0 ] && [ -z "${XDG_RUNTIME_DIR:-}" ]; then
		echo "1..0 # SKIP needs root or XDG_RUNTIME_DIR for session directories"
		exit 77
	fi
	if [ "$(id -u)" = 0 ]; then BASE=/run/xpusup; else BASE=$XDG_RUNTIME_DIR/xpusup; fi
	WORK=$(mktemp -d "/tmp/xpusup-$1-XXXXXX")
	PREFIX="$2$$"
	n=0
	failed=0
	trap session_lib_cleanup EXIT
}

session_lib_cleanup() {
	local s
	if declare -F cleanup_extra >/dev/null; then cleanup_extra; fi
	for s in $(ls "$BASE" 2>/dev/null | grep "^$PREFIX" | sed 's/\.log$//' | sort -u); do
		"$XPUSUP" stop --session "$s" >/dev/null 2>&1
	done
	rm -rf "$WORK"
}

ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}

json() {
	"$XPUSUP" status --session "$1" --json 2>/dev/null | "$PY" -c "
import json, sys
j = json.load(sys.stdin)
a = {x['name']: x for x in j.get('actors', [])}
c = lambda name, k: a[name]['counters'].get(k, 0)
sum_ = lambda k: sum(x['counters'].get(k, 0) for x in j['actors'] if x['role'] == 'correlator')
rings = j.get('rings', [])
print($2)"
}

settled() { # SINK
	echo "sum_('pending') == 0 and all(r['used'] == 0 and r['lost_unreported'] == 0 for r in rings) and c('$1', 'events_in') + c('$1', 'events_missed') == sum_('events_out') == sum(r['consumed'] for r in rings)"
}

wait_for() {
	local deadline=$((SECONDS + $1))
	while [ $SECONDS -le "$deadline" ]; do
		[ "$(json "$2" "$3" 2>/dev/null)" = True ] && return 0
		sleep 0.1
	done
	return 1
}

log_clean() {
	local bad="Sanitizer|stopped \((exit [1-9]|signal)"
	! grep -Eq "$bad" "$BASE/$1.log"
	local rc=$?
	ok $rc "$2: every actor exited 0 at stop, no sanitizer report in the log"
	# A failure names its cause in the TAP output: CI keeps that, not the session log.
	[ $rc = 0 ] || grep -E -B5 -A40 "$bad" "$BASE/$1.log" | head -80 | sed 's/^/# /'
}

# The last line of `xpusup subscribe`: "N batches, N events, N events missed (sequence gaps),
# N rewinds, ...": one of its numbers.
sub_total() { # sub_total ERRFILE FIELD(batches|events|missed|rewinds)
	sed -n 's/^xpusup: subscribe: \([0-9]*\) batches, \([0-9]*\) events, \([0-9]*\) events missed.*, \([0-9]*\) rewinds.*/\1 \2 \3 \4/p' "$1" |
		tail -1 | awk -v f="$2" '{ i = f == "batches" ? 1 : f == "events" ? 2 : f == "missed" ? 3 : 4; print $i }'
}

# The CPU clock ticks PIDs have used, together (utime + stime of /proc/PID/stat).
cpu_ticks() { # cpu_ticks PID...
	local p
	for p; do sed 's/.*) //' "/proc/$p/stat" 2>/dev/null; done | awk '{ s += $12 + $13 } END { print s + 0 }'
}

# Until PIDs together use fewer than 3 ticks (30 ms) of CPU in half a second, at most SECONDS:
# a subscriber that has read everything sent to it waits in poll. Before a session stops,
# what a lagging subscriber has not yet taken from the publisher's queues is lost with them,
# and it cannot count what it never saw a later sequence number of.
idle() { # idle SECONDS PID...
	local deadline=$((SECONDS + $1)) a b
	shift
	while [ $SECONDS -le "$deadline" ]; do
		a=$(cpu_ticks "$@")
		sleep 0.5
		b=$(cpu_ticks "$@")
		[ $((b - a)) -lt 3 ] && return 0
	done
	return 1
}

free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

synthetic() {
	cat <<CONF
[correlator]
shards = 2
exit_grace_ms = 200
[source syn]
kind = synthetic
processes = 4
launches_per_s = 0
count = $1
answer_frame = no
CONF
}
