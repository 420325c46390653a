#!/bin/bash
# A real pipeline under the supervisor: the synthetic source -> rings -> correlator shards
# (the exact join) -> wire batches over nng -> a sink that decodes and counts them. Checks the joins against the synthetic source's answer key (its
# counters), arrival-order independence, and kill -9 of a correlator under load with exact
# ring accounting. TAP on stdout.
#
# Usage: pipeline_test.sh XPUSUP_BINARY
set -u
XPUSUP=${1:?usage: pipeline_test.sh XPUSUP_BINARY}
. "$(dirname "$0")/session_lib.sh"
session_lib_init pipetest p

echo "TAP version 13"

# ---- joins against the answer key ---------------------------------------------------
run_answer_key() { # SESSION REORDER
	local s=$1
	cat >"$WORK/$s.conf" <<EOF
[sink out]
kind = test
[correlator]
shards = 2
ttl_ms = 2000
exit_grace_ms = 300
[source syn]
kind = synthetic
processes = 16
threads = 4
launches_per_s = 0
count = 200000
missing_launch_pct = 5
reorder = $2
EOF
	"$XPUSUP" start "$WORK/$s.conf" --session "$s" >/dev/null 2>&1
	ok $? "reorder $2: session with the synthetic source and two correlator shards starts"
	# Done when the source has produced everything, the shards have read it all and the
	# exit grace has flushed every waiting GPU record.
	wait_for 60 "$s" "c('syn', 'launches') == 200000 and sum_('in') == c('syn', 'records_out') and sum_('pending') == 0"
	ok $? "reorder $2: every record produced was read and all join state has drained"
	got=$(json "$s" "sum_('matched') == c('syn', 'gpu_records') - c('syn', 'gpu_missing_launch'), sum_('unmatched') == c('syn', 'gpu_missing_launch'), c('syn', 'gpu_missing_launch') > 0")
	[ "$got" = "True True True" ]
	ok $? "reorder $2: matched = GPU records with a launch, unmatched = those without, exactly ($(json "$s" "sum_('matched'), sum_('unmatched'), c('syn', 'gpu_missing_launch')"))"
	got=$(json "$s" "sum(r['lost']['ring_full'] + r['lost']['too_big'] + r['corrupt'] for r in rings), all(r['produced'] == r['consumed'] for r in rings), sum_('evicted'), sum_('events_out') == sum_('in')")
	[ "$got" = "0 True 0 True" ]
	ok $? "reorder $2: nothing lost, corrupt or evicted; every record went out as an event ($got)"
	got=$(json "$s" "min(x['counters'].get('in', 0) for x in j['actors'] if x['role'] == 'correlator') > 100000")
	[ "$got" = True ]
	ok $? "reorder $2: both shards got their share of the processes"
	wait_for 20 "$s" "c('out', 'events_in') == sum_('events_out')"
	ok $? "reorder $2: the sink received every event the shards sent, over nng"
	got=$(json "$s" "c('out', 'events_missed'), c('out', 'bad_batches'), c('out', 'batches_in') == sum_('batches')")
	[ "$got" = "0 0 True" ]
	ok $? "reorder $2: every batch decoded, no sequence gap ($got)"
	got=$(json "$s" "c('out', 'unnamed_kernels'), c('out', 'named_kernels') > 100000, sum_('names'), sum_('names_freed'), sum_('nest_lost')")
	[ "$got" = "0 True 0 64 0" ]
	ok $? "reorder $2: every kernel named from STRING records, the names freed after the processes exited; every range nested ($got)"
	got=$(json "$s" "sum_('streams'), sum_('streams_dropped') > 0, sum_('stream_overlaps'), c('out', 'stream_links') + sum_('stream_unordered') >= c('syn', 'gpu_records') - 32, c('out', 'gpu_stacks') == sum_('matched')")
	[ "$got" = "0 True 0 True True" ]
	ok $? "reorder $2: every GPU record linked to its stream predecessor or counted out of order; launch stacks on every match; stream state dropped after exit; no overlaps ($got)"
	# a CPU sample every 16th launch, taken inside that launch's API call on its thread
	got=$(json "$s" "0.9 * 200000 / 16 < sum_('sampled_in') <= 200000 / 16")
	[ "$got" = True ]
	ok $? "reorder $2: CPU samples inside an API call are its children (sampled_in $(json "$s" "sum_('sampled_in')"))"
	"$XPUSUP" stop --session "$s" >/dev/null 2>&1
	ok $? "reorder $2: stops cleanly"
	log_clean "$s" "reorder $2"
}
run_answer_key "$PREFIX-join" 64
run_answer_key "$PREFIX-order" 4096

# ---- the source stages: filter, sample, enrich per source ----------------------------------
s="$PREFIX-stages"
cat >"$WORK/stages.conf" <<EOF
[sink out]
kind = test
dump = stages.jsonl
[correlator]
shards = 2
exit_grace_ms = 300
[source syn]
kind = synthetic
processes = 8
launches_per_s = 0
count = 40000
filter = !pmu
sample = 4
enrich = names, streams
EOF
"$XPUSUP" start "$WORK/stages.conf" --session "$s" >/dev/null 2>&1
ok $? "stages: a source with filter, sample and enrich starts"
wait_for 60 "$s" "c('syn', 'launches') == 40000 and sum_('in') + sum_('filtered') + sum_('sampled_out') == c('syn', 'records_out') and sum_('pending') == 0"
ok $? "stages: every record was joined, filtered or sampled out"
# one PMU reading every 64th launch: 625
got=$(json "$s" "sum_('filtered'), sum_('unmatched'), 0.2 < sum_('matched') / c('syn', 'gpu_records') < 0.3")
[ "$got" = "625 0 True" ]
ok $? "stages: the filter dropped exactly the PMU readings; sampling by key kept a quarter of the launches with all their GPU work, none unmatched ($got)"
# CPU samples: every 16th launch (2500), weight 10101010; the kept one in 4 weighs 4 times
wait_for 20 "$s" "c('out', 'events_in') == sum_('events_out')"
got=$(json "$s" "0 <= c('out', 'sample_weight') - 2500 * 10101010 <= 6 * 10101010, c('out', 'gpu_stacks'), c('out', 'stream_links') > 0, c('out', 'named_kernels') > 0")
[ "$got" = "True 0 True True" ]
ok $? "stages: sampled CPU weight still adds up; enrich without stacks sends no launch stacks, keeps stream links and names ($got)"
events_in=$(json "$s" "c('out', 'events_in')")
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "stages"
# The raw dump: one JSON line per event, in a file named relative to the config's folder.
got=$("$PY" -c "
import json, sys
ev = [json.loads(line) for line in open(sys.argv[1])]
k = [e for e in ev if e['kind'] == 'gpu_kernel' and e.get('joined') == 'exact_id']
good = [e for e in k if e.get('name', '').startswith('void synth_kernel_')
        and any(l[0] == 'launched_by' for l in e['links']) and 'stack' not in e]
def shard_of(pid, shards):  # common/status.h xpu_shard_of
    h = (pid * 0x9e3779b1) & 0xffffffff
    return (((h ^ (h >> 15)) * shards) >> 32) & 0xffffffff
routed = all(e['shard'] == shard_of(e['pid'], 2) for e in ev)
print(len(ev) == int(sys.argv[2]), len(k) > 0 and len(good) == len(k), routed)
" "$WORK/stages.jsonl" "$events_in" 2>&1)
[ "$got" = "True True True" ]
ok $? "stages: the sink's dump has a JSON line per event received; joined kernels carry names and launch links, no stacks; every event came from the shard its pid hashes to ($got)"

# ---- kill -9 of a correlator under load ----------------------------------------------
s="$PREFIX-kill"
# Rings sized to hold what the source writes while a shard restarts, with room to spare on a
# 2-core machine busy with other tests (a restart is ready in milliseconds when idle).
cat >"$WORK/kill.conf" <<EOF
[supervisor]
ring_kib = 32768
[sink out]
kind = test
[correlator]
shards = 2
[source syn]
kind = synthetic
launches_per_s = 100000
count = 300000
EOF
"$XPUSUP" start "$WORK/kill.conf" --session "$s" >/dev/null 2>&1
sleep 1
pid=$(json "$s" "a['correlator.0']['pid']")
kill -9 "$pid"
wait_for 10 "$s" "a['correlator.0']['restarts'] == 1 and a['correlator.0']['state'] == 'running'"
ok $? "a correlator killed with -9 under load is restarted"
# twice more, on both shards, while the source is still producing
sleep 0.3
kill -9 "$(json "$s" "a['correlator.1']['pid']")"
sleep 0.3
kill -9 "$(json "$s" "a['correlator.0']['pid']")"
wait_for 10 "$s" "a['correlator.0']['restarts'] == 2 and a['correlator.1']['restarts'] == 1 and all(a[x]['state'] == 'running' for x in ('correlator.0', 'correlator.1'))"
ok $? "both shards killed again under load and restarted"
wait_for 60 "$s" "c('syn', 'launches') == 300000 and all(r['produced'] == r['consumed'] for r in rings)"
ok $? "the restarted shards resumed from their rings and caught up"
got=$(json "$s" "sum(r['lost']['ring_full'] + r['lost']['too_big'] + r['corrupt'] for r in rings), sum(r['produced'] for r in rings) == c('syn', 'records_out'), c('syn', 'records_dropped')")
[ "$got" = "0 True 0" ]
ok $? "exact accounting in the rings: produced = consumed, nothing lost at the source ($got)"
# Every record read from a ring reaches the sink, or is a sequence gap the sink counted, or
# was held in join state by a killed shard and counted by its successor; never twice.
expr="sum(r['consumed'] for r in rings), c('out', 'events_in'), c('out', 'events_missed'), sum_('state_lost'), c('out', 'seq_rewinds')"
wait_for 20 "$s" "sum(r['consumed'] for r in rings) == c('out', 'events_in') + c('out', 'events_missed') + sum_('state_lost')"
rc=$?
got=$(json "$s" "$expr")
ok $rc "exact accounting at the sink: consumed = delivered + sequence gaps + state lost (consumed, in, missed, lost, rewinds: $got)"
[ "$(json "$s" "c('out', 'seq_rewinds')")" = 0 ]
ok $? "no event delivered twice across the restarts (no sequence rewind)"
got=$(json "$s" "sum_('keys_lost') > 0")
[ "$got" = True ]
ok $? "the restarted shards count the join state they lost (keys_lost)"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "kill -9"

# ---- a slow sink at stop ---------------------------------------------------------------
# A sink that takes one batch a second, behind a flat-out source: at the stop every queue
# is full and many batches are left to send. The shard waits for the sink until one deadline
# for the whole stop (half the supervisor's patience), then gives it up and counts what it
# was not sent; a deadline per batch let such a sink hold the stop for a second a batch,
# and the supervisor killed the shard (asan sink_windows in CI).
s="$PREFIX-slow"
cat >"$WORK/slow.conf" <<EOF
[sink out]
kind = test
take_every_ms = 1000
[correlator]
shards = 1
[source syn]
kind = synthetic
launches_per_s = 0
count = 10000000
EOF
"$XPUSUP" start "$WORK/slow.conf" --session "$s" >/dev/null 2>&1
ok $? "slow sink: session starts"
wait_for 30 "$s" "sum_('send_waits') > 0 and c('out', 'batches_in') >= 2"
ok $? "slow sink: the shard waits for the sink (send_waits $(json "$s" "sum_('send_waits')"))"
t0=$(date +%s%N)
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
ok $? "slow sink: stop succeeds"
ms=$((($(date +%s%N) - t0) / 1000000))
! grep -q "did not stop within" "$BASE/$s.log"
ok $? "slow sink: the shard stopped by itself, the supervisor killed nothing (stop took $ms ms)" || grep -E "did not stop|gave up" "$BASE/$s.log" | sed 's/^/# /'
grep -q "gave up on sink out" "$BASE/$s.log"
ok $? "slow sink: the shard says it gave up on the sink at the deadline"
unsent=$(sed -n 's/.*correlator: \([0-9]*\) events not sent to sinks given up.*/\1/p' "$BASE/$s.log")
[ "${unsent:-0}" -gt 0 ]
ok $? "slow sink: what the sink was not sent is counted (events_unsent ${unsent:-none})"
log_clean "$s" "slow sink"

echo "1..$n"
[ $failed = 0 ]
