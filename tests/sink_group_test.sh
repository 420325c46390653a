#!/bin/bash
# The group sink (docs/sinks.md): folded + timeline + stats formats in one sink process, one
# receive and one decode. TAP on stdout.
#
# 1. One session with a group of the three formats and, beside it, the three separate sinks
#    with the same options: the group's flame.folded is byte-identical to the folded sink's,
#    its stats.json equal in every field that depends only on the events, its trace.json
#    clean under `xpusup check` with as many events of each phase; `xpusup status` shows the
#    formats' counters under the group, each FORMAT.COUNTER, with the separate sinks' values.
# 2. kill -9 of the group mid-run: it restarts, accounts for what the killed run had, and its
#    three outputs are whole and valid at stop.
# 3. One format that cannot write: the group's problem names it and stays shown while the
#    other format writes; it clears when the format can write again.
# 4. A bad group is refused by `xpusup start` with FILE:LINE (config_test has every case).
# 5. A metrics format in a group with a stats format reads its accumulator: its page says what
#    stats.json says (SM-active to the ns), and what a separate metrics sink says.
#
# Usage: sink_group_test.sh XPUSUP_BINARY
set -u
XPUSUP=${1:?usage: sink_group_test.sh XPUSUP_BINARY}
. "$(dirname "$0")/session_lib.sh"
session_lib_init grouptest g

# The group's sections: formats flame, trace and stats writing under DIR.
group() { # DIR FOLDED_SNAPSHOT_S
	cat <<CONF
[sink all]
kind = group
formats = flame, trace, stats
[format flame]
kind = folded
path = $1/flame.folded
snapshot_s = $2
[format trace]
kind = timeline
path = $1/trace.json
[format stats]
kind = stats
path = $1/stats.json
CONF
}

# ---- 1. the group beside the separate sinks, in one session -------------------------------
s="$PREFIX-same"
mkdir -p "$WORK/g" "$WORK/s"
{ group g 0
  printf '[sink f1]\nkind = folded\npath = s/flame.folded\nsnapshot_s = 0\n'
  printf '[sink t1]\nkind = timeline\npath = s/trace.json\n'
  printf '[sink s1]\nkind = stats\npath = s/stats.json\n'
  synthetic 20000; } >"$WORK/same.conf"
"$XPUSUP" start "$WORK/same.conf" --session "$s" >/dev/null 2>&1
ok $? "same session: a group and three separate sinks start"
wait_for 60 "$s" "c('syn', 'launches') == 20000 and all(c(x, 'events_in') == c('syn', 'records_out') for x in ('all', 'f1', 't1', 's1'))"
ok $? "same session: the group and each separate sink received every event"
[ "$(json "$s" "sorted(a) == ['all', 'correlator.0', 'correlator.1', 'f1', 's1', 'syn', 't1']")" = True ]
ok $? "same session: the [format] sections are not actors in status ($(json "$s" "sorted(a)"))"
# The sinks' threads (docs/sinks.md): with XPUSUP_SINK_THREADS=2 every sink decodes on a
# thread of its own and the group runs its timeline on a helper lane; with 1, neither.
threads() { # threads ACTOR NAME: how many threads of the actor are named NAME
	local pid
	pid=$(json "$s" "a['$1']['pid']")
	cat /proc/"$pid"/task/*/comm 2>/dev/null | grep -c "^$2\$"
}
if [ "${XPUSUP_SINK_THREADS:-}" = 2 ]; then
	[ "$(threads all xpusup-decode)" = 1 ] && [ "$(threads all xpusup-lane)" = 1 ] &&
		[ "$(threads t1 xpusup-decode)" = 1 ] && [ "$(threads t1 xpusup-lane)" = 0 ] &&
		grep -q "xpusup-group: format 'trace' on a helper thread" "$BASE/$s.log" &&
		grep -q "xpusup-timeline: decoding on a thread of its own" "$BASE/$s.log"
	ok $? "threads: each sink decodes on a thread of its own, the group has one helper lane (the timeline), and the log says so"
elif [ "${XPUSUP_SINK_THREADS:-}" = 1 ]; then
	[ "$(threads all xpusup-decode)" = 0 ] && [ "$(threads all xpusup-lane)" = 0 ] &&
		! grep -q "on a thread of its own\|on a helper thread" "$BASE/$s.log"
	ok $? "threads: XPUSUP_SINK_THREADS=1, one thread does all"
fi
# The formats' counters, prefixed, equal to the separate sinks' once both have settled.
expr="c('all', 'flame.stacks') == c('f1', 'stacks') > 0 and c('all', 'flame.gpu_events') == c('f1', 'gpu_events')"
expr="$expr and c('all', 'trace.events_written') == c('t1', 'events_written') > 0 and c('all', 'trace.flows') == c('t1', 'flows')"
expr="$expr and c('all', 'stats.gpu_records') == c('s1', 'gpu_records') > 0 and c('all', 'stats.kernel_names') == c('s1', 'kernel_names')"
expr="$expr and 'tr.flows_unknown_launch' in a['all']['counters'] and 'counters_hidden' not in a['all']['counters']"
wait_for 20 "$s" "$expr"
ok $? "status: the group shows each format's counters as FORMAT.COUNTER, equal to the separate sinks' ($(json "$s" "[k for k in a['all']['counters'] if '.' in k][:4]"))"
"$XPUSUP" status --session "$s" 2>/dev/null | grep -E "^all .*flame\.stacks=[0-9]+ .*trace\.events_written=[0-9]+ .*stats\.kernel_names=[0-9]+" >/dev/null
ok $? "status: the text status shows them too"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "same session"
grep -q "shown shortened: tr.flows_unknown_launch (trace.flows_unknown_launch)" "$BASE/$s.log"
ok $? "status: a counter name too long for the status block is shortened, and the log says so"

cmp "$WORK/g/flame.folded" "$WORK/s/flame.folded" && [ -s "$WORK/g/flame.folded" ]
ok $? "folded: the group's flame.folded is byte-identical to the folded sink's"
cmp "$WORK/g/flame.html" "$WORK/s/flame.html"
ok $? "folded: and so is flame.html"

# stats.json: every field but those of arrival (batches) and wall time; the SM-active and
# queue-delay figures are of the same events, so equal too, but the windows a late kernel
# falls out of depend on when each sink took each shard's batch.
cat >"$WORK/events_only.py" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j['final'] is True
del j['events']['batches']
sm = j['sm_active']
j['sm_active'] = {k: sm[k] for k in ('window_ns', 'lateness_ns')}
print(json.dumps(j, indent=1, sort_keys=True))
PYEOF
"$PY" "$WORK/events_only.py" "$WORK/g/stats.json" >"$WORK/g.stats" &&
	"$PY" "$WORK/events_only.py" "$WORK/s/stats.json" >"$WORK/s.stats" &&
	diff -u "$WORK/s.stats" "$WORK/g.stats" >"$WORK/stats.diff" &&
	grep -q '"total": [1-9]' "$WORK/g.stats"
ok $? "stats: the group's stats.json equals the stats sink's in every count ($(wc -l <"$WORK/stats.diff") diff lines)"
head -30 "$WORK/stats.diff" | sed 's/^/# /'

"$XPUSUP" check "$WORK/g/trace.json" >"$WORK/g.xcheck" 2>&1
ok $? "timeline: the group's trace.json is clean under xpusup check ($(tail -n 2 "$WORK/g.xcheck" | sed "s|$WORK/||" | tr '\n' ' '))"
got=$("$PY" - "$WORK/g/trace.json" "$WORK/s/trace.json" <<'PYEOF'
import collections, json, sys
def phases(path):
    j = json.load(open(path))
    ev = j['traceEvents'] if isinstance(j, dict) else j
    return dict(sorted(collections.Counter(e.get('ph') for e in ev).items()))
g, s = phases(sys.argv[1]), phases(sys.argv[2])
print(g == s and sum(g.values()) > 20000, g, s if g != s else '')
PYEOF
)
[ "${got%% *}" = True ]
ok $? "timeline: the same number of events of each phase as the timeline sink's ($got)"

# ---- 2. kill -9 of the group mid-run ----------------------------------------------------------
s="$PREFIX-kill"
mkdir -p "$WORK/kill"
{ group kill 1
  synthetic 90000 | sed 's/launches_per_s = 0/launches_per_s = 30000/'; } >"$WORK/kill.conf"
"$XPUSUP" start "$WORK/kill.conf" --session "$s" >/dev/null 2>&1
wait_for 10 "$s" "c('all', 'flame.files_written') >= 1 and c('all', 'events_in') > 50000"
kill -9 "$(json "$s" "a['all']['pid']")"
wait_for 10 "$s" "a['all']['restarts'] == 1 and a['all']['state'] == 'running'"
ok $? "kill -9: the group killed mid-run is restarted"
wait_for 30 "$s" "c('syn', 'launches') == 90000 and $(settled all)"
rc=$?
got=$(json "$s" "c('all', 'events_in'), c('all', 'state_lost'), c('all', 'events_missed')")
ok $rc "kill -9: sent by the correlators = received + missed, over both runs (received, state lost, missed: $got)"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "kill -9"
# The stats format writes a complete output only at stop, so the group's output was never
# complete before the kill: everything the killed run received is counted lost, and the
# restarted stats format holds exactly the rest. The folded format keeps its last snapshot
# from before the kill, as a folded sink does.
"$PY" - "$WORK/kill" $got <<'PYEOF' 2>"$WORK/kill.err"
import json, re, sys
d = sys.argv[1]
received, lost = int(sys.argv[2].rstrip(',')), int(sys.argv[3].rstrip(','))
assert lost > 0, 'the killed run received events'
st = json.load(open(d + '/stats.json'))
assert st['final'] and st['events']['total'] == received - lost, ('received', received, 'lost', lost, 'stats total', st['events']['total'], 'final', st['final'])
lines = open(d + '/flame.folded').read().splitlines()
assert lines and all(re.fullmatch(r'[^ ;]+(;[^;]+)* [0-9]+', l) for l in lines)
kernel = sum(int(l.rsplit(' ', 1)[1]) for l in lines if '[gpu] void synth_kernel_' in l)
want = sum(1000 * (1 + u % 50) for u in range(90000) if u % 8 != 7 and u % 4 != 3)
assert 0.5 * want < kernel <= want, (kernel, want)
PYEOF
ok $? "kill -9: stats.json holds exactly what the restarted run received, flame.folded is whole and keeps the killed run's snapshot ($(tail -n 1 "$WORK/kill.err" | cut -c1-600))"
# (The events lost at the kill can leave a range whose pop was lost open to the end: it keeps
# the lane it took at its push, so that it nests however long it lasts; docs/timeline.md.)
"$XPUSUP" check "$WORK/kill/trace.json" >"$WORK/kill.xcheck" 2>&1
ok $? "kill -9: the final trace.json is clean under xpusup check ($(tail -n 2 "$WORK/kill.xcheck" | sed "s|$WORK/||" | tr '\n' ' '))"
ls "$WORK/kill" | grep -q '\.partial$'
[ $? = 1 ]
ok $? "kill -9: no partial file is left after stop ($(ls "$WORK/kill" | tr '\n' ' '))"

# ---- 3. one format that cannot write, beside one that can ------------------------------------
s="$PREFIX-nodir"
mkdir -p "$WORK/ok"
: >"$WORK/notadir" # a file where the folded format's folder should be: it cannot be made
{ printf '[sink all]\nkind = group\nformats = flame, stats\n'
  printf '[format flame]\nkind = folded\npath = notadir/flame.folded\nsnapshot_s = 1\n'
  printf '[format stats]\nkind = stats\npath = ok/stats.json\ninterval_s = 1\n'
  synthetic 0 | sed 's/launches_per_s = 0/launches_per_s = 2000/'; } >"$WORK/nodir.conf"
"$XPUSUP" start "$WORK/nodir.conf" --session "$s" >/dev/null 2>&1
wait_for 10 "$s" "c('all', 'write_errors') > 0 and c('all', 'stats.files_written') >= 2 and (a['all']['problem'] or '').startswith(\"format 'flame': \") and 'Not a directory' in a['all']['problem']"
ok $? "one format cannot write: the problem names it while the other format writes ($(json "$s" "a['all']['problem'], c('all', 'stats.files_written')"))"
rm "$WORK/notadir"
wait_for 10 "$s" "a['all']['problem'] is None and c('all', 'flame.files_written') >= 1"
ok $? "one format cannot write: once it can, the problem clears and its file is written"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "one format cannot write"
[ -s "$WORK/notadir/flame.folded" ] && [ -s "$WORK/ok/stats.json" ]
ok $? "one format cannot write: both formats' final files are there after stop"

# ---- 5. a metrics format reads the group's stats format's accumulator -----------------------
# One accumulation for both (docs/fleet.md): the group's page says what its stats.json says,
# to the nanosecond, SM-active included; a separate metrics sink, which accumulates on its own,
# says the same counts. top_kernels = 2 of the synthetic source's kernel names: the rest of
# the stats format's bigger table goes under "[other kernels]".
s="$PREFIX-metrics"
mkdir -p "$WORK/m"
GPORT=$(free_port)
MPORT=$(free_port)
{ printf '[sink all]\nkind = group\nformats = prom, stats\n'
  printf '[format prom]\nkind = metrics\nlisten = 127.0.0.1:%s\ntop_kernels = 2\n' "$GPORT"
  printf '[format stats]\nkind = stats\npath = m/stats.json\n'
  printf '[sink m1]\nkind = metrics\nlisten = 127.0.0.1:%s\ntop_kernels = 2\n' "$MPORT"
  synthetic 20000; } >"$WORK/metrics.conf"
"$XPUSUP" start "$WORK/metrics.conf" --session "$s" >/dev/null 2>&1
ok $? "metrics in a group: a group of a metrics and a stats format, and a metrics sink, start"
wait_for 60 "$s" "c('syn', 'launches') == 20000 and all(c(x, 'events_in') == c('syn', 'records_out') for x in ('all', 'm1'))"
ok $? "metrics in a group: the group and the metrics sink received every event"
[ "$(json "$s" "c('all', 'prom.stats_shared'), c('m1', 'stats_shared')")" = "1 0" ] &&
	grep -q "xpusup-metrics: reads the accumulator of the group's stats format" "$BASE/$s.log"
ok $? "metrics in a group: it reads the stats format's accumulator (stats_shared 1, the log says so); the sink, its own (0) ($(json "$s" "c('all', 'prom.stats_shared'), c('m1', 'stats_shared')"))"
sleep 0.5 # a tick renders the pages with every event
curl -sf "http://127.0.0.1:$GPORT/metrics" >"$WORK/m/group.prom" &&
	curl -sf "http://127.0.0.1:$MPORT/metrics" >"$WORK/m/sink.prom"
ok $? "metrics in a group: both pages served"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "metrics in a group"
got=$("$PY" - "$WORK/m/group.prom" "$WORK/m/sink.prom" "$WORK/m/stats.json" <<'PYEOF'
import json, re, sys
def page(path):
    rows = {}
    for line in open(path):
        if line.startswith('#') or not line.strip():
            continue
        key, value = line.rsplit(' ', 1)
        rows[key] = float(value)
    return rows
g, m, j = page(sys.argv[1]), page(sys.argv[2]), json.load(open(sys.argv[3]))
# what the events say, not when: the families of the events' numbers
ev = re.compile(r'xpusup_(events_total|gpu_kernel|gpu_memcpy|gpu_memset|cpu_samp)')
gk = {k: v for k, v in g.items() if ev.match(k)}
mk = {k: v for k, v in m.items() if ev.match(k)}
assert gk == mk and len(gk) > 10, ('group and sink differ', sorted(set(gk.items()) ^ set(mk.items()))[:6])
named = [k for k in g if k.startswith('xpusup_gpu_kernels_total{kernel="') and 'other' not in k]
assert len(named) == 2 and g['xpusup_gpu_kernels_total{kernel="[other kernels]"}'] == j['kernels']['count'] - sum(g[k] for k in named), named
for e in j['sm_active']['devices']:
    got = g['xpusup_gpu_sm_busy_seconds_total{device="%d"}' % e['device']]
    assert abs(got - e['busy_ns'] / 1e9) <= 1e-12 * max(1, got), (got, e['busy_ns'])
for e in j['sm_active']['processes']:
    got = g['xpusup_process_sm_busy_seconds_total{pid="%d"}' % e['pid']]
    assert abs(got - e['busy_ns'] / 1e9) <= 1e-12 * max(1, got), (got, e['busy_ns'])
print(True, len(gk), 'event rows equal;', len(j['sm_active']['devices']), 'devices,', len(j['sm_active']['processes']), 'processes')
PYEOF
)
[ "${got%% *}" = True ]
ok $? "metrics in a group: its page equals the metrics sink's in every event count, \"[other kernels]\" the rest of stats.json's kernels, SM busy time stats.json's to the ns (${got:0:300})"

# ---- 4. a bad group is refused before anything starts ----------------------------------------
{ group bad 0 | sed 's/^formats = .*/formats = flame, trace, stats, nope/'; synthetic 10; } >"$WORK/bad.conf"
"$XPUSUP" start "$WORK/bad.conf" --session "$PREFIX-bad" >"$WORK/bad.out" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "bad.conf:3: unknown format 'nope' in formats of \[sink all\]" "$WORK/bad.out"
ok $? "a bad group: xpusup start refuses it at FILE:LINE (rc $rc: $(head -c 200 "$WORK/bad.out" | tr '\n' ' '))"

echo "1..$n"
[ $failed = 0 ]
