#!/bin/bash
# The sinks with real sessions: synthetic source -> correlator shards -> sink actors.
# Golden outputs from a deterministic synthetic run; the flame graph page; a sink that
# cannot write (missing folder, full disk) shows the problem while the pipeline runs on;
# kill -9 of a sink mid-run. TAP on stdout.
#
# Usage: sink_test.sh XPUSUP_BINARY GOLDEN_DIR
set -u
XPUSUP=${1:?usage: sink_test.sh XPUSUP_BINARY GOLDEN_DIR}
GOLDEN=${2:?usage: sink_test.sh XPUSUP_BINARY GOLDEN_DIR}
. "$(dirname "$0")/session_lib.sh"
session_lib_init sinktest k
cleanup_extra() { mountpoint -q "$WORK/full" && umount "$WORK/full"; }


# ---- folded: golden file, flame graph page --------------------------------------------
s="$PREFIX-folded"
mkdir -p "$WORK/folded"
{ printf '[sink flame]\nkind = folded\npath = folded/flame.folded\nsnapshot_s = 0\n'; synthetic 2400; } >"$WORK/folded.conf"
"$XPUSUP" start "$WORK/folded.conf" --session "$s" >/dev/null 2>&1
ok $? "folded: a session with a folded sink starts"
wait_for 30 "$s" "c('syn', 'launches') == 2400 and c('flame', 'events_in') == c('syn', 'records_out')"
ok $? "folded: the sink received every event"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "folded"
diff -u "$GOLDEN/flame.folded" "$WORK/folded/flame.folded" >"$WORK/folded.diff"
ok $? "folded: flame.folded is the golden file ($(wc -l <"$WORK/folded.diff") diff lines)"
# Independently of the golden file: the synthetic source's GPU time, from its own rules.
got=$("$PY" - "$WORK/folded/flame.folded" <<'PYEOF'
import sys
kernel = memcpy = memset = cpu = 0
for line in open(sys.argv[1]):
    stack, w = line.rsplit(' ', 1)
    w = int(w)
    leaf = stack.split(';')[-1]
    if leaf.startswith('[gpu] void synth_kernel_'): kernel += w
    elif leaf == '[gpu] memcpy HtoD': memcpy += w
    elif leaf == '[gpu] memset': memset += w
    else: cpu += w
# synthetic.c: launch u is a memset (1 us) when u % 8 == 7, else a memcpy (40 us) when
# u % 4 == 3, else a kernel of 1000 * (1 + u % 50) ns; a CPU sample (10101010 ns) in 16
want_k = sum(1000 * (1 + u % 50) for u in range(2400) if u % 8 != 7 and u % 4 != 3)
want_c = sum(40000 for u in range(2400) if u % 8 != 7 and u % 4 == 3)
want_s = sum(1000 for u in range(2400) if u % 8 == 7)
print(kernel == want_k, memcpy == want_c, memset == want_s, cpu == 2400 // 16 * 10101010)
PYEOF
)
[ "$got" = "True True True True" ]
ok $? "folded: GPU kernel, memcpy, memset and CPU time add up to what the source generated ($got)"
# The user range around one launch in 32: its GPU work, and the CPU sample taken during it
# (placed by its timestamp), sit under "[range] train_step", right after the comm, and
# nothing else does.
got=$("$PY" - "$WORK/folded/flame.folded" <<'PYEOF'
import sys
inside = cpu = 0
for line in open(sys.argv[1]):
    stack, w = line.rsplit(' ', 1)
    f = stack.split(';')
    r = [i for i, x in enumerate(f) if x.startswith('[range]')]
    if r:
        assert r == [1] and f[1] == '[range] train_step', line
        if f[-1].startswith('[gpu]'):
            inside += int(w)
        else:
            cpu += int(w)
# synthetic.c: launch u is inside the range when u % 32 == (u / 32) % 32; it has a CPU
# sample (weight 10101010) when u % 16 == (u / 16) % 16
ranged = [u for u in range(2400) if u % 32 == (u // 32) % 32]
want = sum(1000 if u % 8 == 7 else 40000 if u % 4 == 3 else 1000 * (1 + u % 50) for u in ranged)
want_cpu = 10101010 * sum(1 for u in ranged if u % 16 == (u // 16) % 16)
print(inside == want and cpu == want_cpu, inside, want, cpu, want_cpu)
PYEOF
)
[ "${got%% *}" = True ]
ok $? "folded: the GPU work of launches inside user ranges sits under their range frame ($got)"
html="$WORK/folded/flame.html"
[ -s "$html" ] && "$PY" - "$html" "$WORK/folded/flame.folded" <<'PYEOF'
import json, re, sys
page = open(sys.argv[1]).read()
data = re.search(r'const DATA = (\[.*?\n\]);', page, re.S).group(1)
rows = json.loads(data)
lines = [l.rsplit(' ', 1) for l in open(sys.argv[2]).read().splitlines()]
assert [[s, int(w)] for s, w in lines] == rows, 'page data differs from the folded file'
assert page.count('<script>') == 1 and '</script></body></html>' in page
PYEOF
ok $? "folded: flame.html embeds exactly the folded file's stacks and weights"
sed -n '/<script>/,/<\/script>/p' "$html" | sed '1d;$d' >"$WORK/page.js"
node --check "$WORK/page.js" 2>"$WORK/node.err"
ok $? "folded: the page's script parses ($(head -c 200 "$WORK/node.err"))"

# ---- kill -9 of a sink mid-run -------------------------------------------------------
s="$PREFIX-kill"
mkdir -p "$WORK/kill"
{ printf '[sink flame]\nkind = folded\npath = kill/flame.folded\nsnapshot_s = 1\n'
  synthetic 90000 | sed 's/launches_per_s = 0/launches_per_s = 30000/'; } >"$WORK/kill.conf"
"$XPUSUP" start "$WORK/kill.conf" --session "$s" >/dev/null 2>&1
sleep 1.6
kill -9 "$(json "$s" "a['flame']['pid']")"
wait_for 10 "$s" "a['flame']['restarts'] == 1 and a['flame']['state'] == 'running'"
ok $? "kill -9: the folded sink killed mid-run is restarted"
wait_for 30 "$s" "c('syn', 'launches') == 90000 and $(settled flame)"
rc=$?
got=$(json "$s" "sum_('events_out'), c('flame', 'events_in'), c('flame', 'events_missed'), c('flame', 'state_lost')")
ok $rc "kill -9: sent by the correlators = received + missed in transit, over both runs of the sink (sent, received, missed, state lost: $got)"
lost=$(json "$s" "c('flame', 'state_lost') + c('flame', 'events_missed') > 0 and c('flame', 'state_lost') <= c('flame', 'events_in')")
[ "$lost" = True ]
ok $? "kill -9: the events lost with the killed run are reported (state_lost, events_missed)"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "kill -9"
got=$("$PY" - "$WORK/kill/flame.folded" <<'PYEOF'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
good = all(re.fullmatch(r'[^ ;]+(;[^;]+)* [0-9]+', l) for l in lines)
kernel = sum(int(l.rsplit(' ', 1)[1]) for l in lines if '[gpu] void synth_kernel_' in l)
want = sum(1000 * (1 + u % 50) for u in range(90000) if u % 8 != 7 and u % 4 != 3)
# the final file holds the killed run's last snapshot and everything after the restart
print(good and len(lines) > 0, 0.5 * want < kernel <= want)
PYEOF
)
[ "$got" = "True True" ]
ok $? "kill -9: the final flame.folded is whole and keeps what was written before the kill ($got)"
[ ! -e "$WORK/kill/flame.folded.partial" ] && [ ! -e "$WORK/kill/flame.html.partial" ]
ok $? "kill -9: no partial file is left after stop"

# ---- a sink that cannot write ----------------------------------------------------------
s="$PREFIX-nodir"
: >"$WORK/notadir" # a file where the sink's folder should be: it cannot be made
{ printf '[sink flame]\nkind = folded\npath = notadir/flame.folded\nsnapshot_s = 1\n'
  synthetic 0 | sed 's/launches_per_s = 0/launches_per_s = 2000/'; } >"$WORK/nodir.conf"
"$XPUSUP" start "$WORK/nodir.conf" --session "$s" >/dev/null 2>&1
ok $? "not a folder: the session starts although the sink's folder cannot be made"
wait_for 10 "$s" "c('flame', 'write_errors') > 0 and 'Not a directory' in (a['flame']['problem'] or '')"
ok $? "not a folder: the problem is shown in status ($(json "$s" "a['flame']['problem']"))"
"$XPUSUP" status --session "$s" 2>/dev/null | grep -q "flame.*PROBLEM.*notadir/flame.folded"
ok $? "not a folder: and in the text status, naming the file"
e1=$(json "$s" "sum_('events_out')")
sleep 1
e2=$(json "$s" "sum_('events_out'), c('syn', 'records_dropped'), a['flame']['state']")
[ "${e2%% *}" -gt "$e1" ] && [ "$(echo "$e2" | cut -d' ' -f2-)" = "0 running" ]
ok $? "not a folder: the pipeline runs on, nothing dropped at the source, the sink still running ($e1 -> $e2)"
rm "$WORK/notadir"
wait_for 10 "$s" "a['flame']['problem'] is None"
ok $? "not a folder: once the file is gone the folder is made and the problem clears"
[ -s "$WORK/notadir/flame.folded" ]
ok $? "not a folder: and the file is written"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1

s="$PREFIX-full"
mkdir -p "$WORK/full"
if mount -t tmpfs -o size=256k tmpfs "$WORK/full" 2>/dev/null; then
	dd if=/dev/zero of="$WORK/full/filler" bs=4k 2>/dev/null
	{ printf '[sink flame]\nkind = folded\npath = full/flame.folded\nsnapshot_s = 1\n'
	  synthetic 0 | sed 's/launches_per_s = 0/launches_per_s = 2000/'; } >"$WORK/full.conf"
	"$XPUSUP" start "$WORK/full.conf" --session "$s" >/dev/null 2>&1
	wait_for 10 "$s" "'No space left on device' in (a['flame']['problem'] or '')"
	ok $? "full disk: the problem is shown in status ($(json "$s" "a['flame']['problem']"))"
	[ ! -e "$WORK/full/flame.folded" ] && [ ! -e "$WORK/full/flame.folded.partial" ]
	ok $? "full disk: no truncated file is left, under either name"
	e1=$(json "$s" "sum_('events_out')")
	sleep 1
	[ "$(json "$s" "sum_('events_out') > $e1 and c('syn', 'records_dropped') == 0 and a['flame']['state'] == 'running'")" = True ]
	ok $? "full disk: the pipeline runs on"
	rm -f "$WORK/full/filler"
	wait_for 10 "$s" "a['flame']['problem'] is None"
	ok $? "full disk: with room again the problem clears and the file is written"
	"$XPUSUP" stop --session "$s" >/dev/null 2>&1
	[ -s "$WORK/full/flame.folded" ]
	ok $? "full disk: the final file is there after stop"
	umount "$WORK/full"
else
	ok 1 "full disk: cannot mount a small tmpfs (needs root)"
fi

echo "1..$n"
[ $failed = 0 ]
