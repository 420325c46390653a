#!/bin/bash
# Many hosts into one subscriber: two real sessions on this machine stand in for two hosts
# (publish sinks on two loopback ports, `host = alpha` and `host = beta`, the synthetic
# source in each, with the same pids), and one `xpusup subscribe URL1 URL2 URL3` writes one
# trace.json (URL3: a host that never comes), others flame.folded, stats.json and pprof
# files. Host alpha's session is stopped and started again in the middle. Checked: every
# event of both hosts arrives, counted per host (received + missed = what each session's
# publish sink received, no gap, alpha's two sessions counted), alpha's reconnection counted,
# the missing host reported, the processes named HOST/comm with pids of their own per host,
# both hosts' times on this machine's CLOCK_MONOTONIC, a trace.json that `xpusup check`
# accepts, and pprof samples labelled with their own host; nngcat and
# python3-msgpack, an independent client and decoder, read the origin keys (host, session,
# clock) on every batch of beta. TAP on stdout.
#
# Each session holds its correlators and source back with a test sink that takes 3 s to be
# ready (as tests/publish_test.sh does), so that the subscribers, started before the
# sessions, are connected before the first batch.
#
# Usage: subscribe_hosts_test.sh XPUSUP_BINARY
set -u
XPUSUP=${1:?usage: subscribe_hosts_test.sh XPUSUP_BINARY}
. "$(dirname "$0")/session_lib.sh"
session_lib_init subhosts h
pids=""
cleanup_extra() { for p in $pids; do kill "$p" 2>/dev/null; done; }

# A host's line: "host H: N batches, N events, N events missed (sequence gaps), N rewinds,
# N sessions, ...".
host_field() { # host_field ERRFILE HOST FIELD(batches|events|missed|rewinds|sessions)
	sed -n "s/^xpusup: subscribe: host $2: \([0-9]*\) batches, \([0-9]*\) events, \([0-9]*\) events missed[^,]*, \([0-9]*\) rewinds, \([0-9]*\) sessions.*/\1 \2 \3 \4 \5/p" "$1" |
		tail -1 | awk -v f="$3" '{ i = f == "batches" ? 1 : f == "events" ? 2 : f == "missed" ? 3 : f == "rewinds" ? 4 : 5; print $i }'
}

host_conf() { # host_conf HOST PORT COUNT
	printf '[sink pub]\nkind = publish\nlisten = tcp://127.0.0.1:%s\nhost = %s\n' "$2" "$1"
	printf '[sink gate]\nkind = test\nready_delay_ms = 3000\n'
	synthetic "$3"
}

mono_us() { "$PY" -c 'import time; print(time.monotonic_ns() // 1000)'; }

# ---- configuration and command line ---------------------------------------------------
command -v nngcat >/dev/null 2>&1 && "$PY" -c 'import msgpack' 2>/dev/null
ok $? "nngcat and python3-msgpack are installed (scripts/install-deps)"
printf '[sink p]\nkind = publish\nlisten = tcp://127.0.0.1:1\nhost = bad host\n' >"$WORK/badhost.conf"
"$XPUSUP" start "$WORK/badhost.conf" --session "$PREFIX-badhost" >/dev/null 2>"$WORK/badhost.err"
[ $? = 100 ] && grep -q "bad host 'bad host'" "$WORK/badhost.err"
ok $? "config: a host with a space stops the start with exit 100 and says why"
"$XPUSUP" subscribe --help | grep -q "^usage: xpusup subscribe URL \[URL...\]"
ok $? "subscribe --help shows several URLs"
"$XPUSUP" subscribe tcp://127.0.0.1:1 tcp://127.0.0.1:1 2>"$WORK/twice.err"
[ $? = 100 ] && grep -q "given twice" "$WORK/twice.err"
ok $? "subscribe: a URL given twice is a usage error (100)"
"$XPUSUP" subscribe tcp://127.0.0.1:1 udp://127.0.0.1:2 2>/dev/null
[ $? = 100 ]
ok $? "subscribe: a bad second URL is a usage error (100)"

# ---- two hosts, one of them restarted -------------------------------------------------
P1=$(free_port)
P2=$(free_port)
P3=$(free_port) # nobody listens there: the host that never comes
host_conf alpha "$P1" 3000 >"$WORK/alpha.conf"
host_conf beta "$P2" 3000 >"$WORK/beta.conf"
host_conf alpha "$P1" 2000 >"$WORK/alpha2.conf"
A1="$PREFIX-alpha1"
A2="$PREFIX-alpha2"
B="$PREFIX-beta"
t0=$(mono_us)
"$XPUSUP" subscribe "tcp://127.0.0.1:$P1" "tcp://127.0.0.1:$P2" "tcp://127.0.0.1:$P3" \
	--format trace -o "$WORK/trace.json" 2>"$WORK/trace.err" &
strace=$!
"$XPUSUP" subscribe "tcp://127.0.0.1:$P1" "tcp://127.0.0.1:$P2" --format folded \
	-o "$WORK/flame.folded" -O html=none -O snapshot_s=0 2>"$WORK/folded.err" &
sfold=$!
"$XPUSUP" subscribe "tcp://127.0.0.1:$P1" "tcp://127.0.0.1:$P2" --format stats \
	-o "$WORK/stats.json" 2>"$WORK/stats.err" &
sstats=$!
mkdir -p "$WORK/prof"
"$XPUSUP" subscribe "tcp://127.0.0.1:$P1" "tcp://127.0.0.1:$P2" --format pprof \
	-o "$WORK/prof/profile.pb.gz" -O host=collector 2>"$WORK/pprof.err" &
sprof=$!
PM=$(free_port)
"$XPUSUP" subscribe "tcp://127.0.0.1:$P1" "tcp://127.0.0.1:$P2" --format metrics \
	-O "listen=127.0.0.1:$PM" 2>"$WORK/metrics.err" &
smet=$!
# an independent client and decoder of the origin keys: nngcat and python3-msgpack
nngcat --sub0 --dial "tcp://127.0.0.1:$P2" --async --raw -Z 67108864 >"$WORK/beta.raw" \
	2>"$WORK/nngcat.err" &
ncat=$!
pids="$strace $sfold $sstats $sprof $smet $ncat"
"$XPUSUP" start "$WORK/alpha.conf" --session "$A1" >/dev/null 2>"$WORK/alpha.start" &
start_a=$!
"$XPUSUP" start "$WORK/beta.conf" --session "$B" >/dev/null 2>"$WORK/beta.start" &
start_b=$!
wait_for 20 "$A1" "c('pub', 'subscribers') == 5 and a['syn']['pid'] == 0" &&
	wait_for 20 "$B" "c('pub', 'subscribers') == 6 and a['syn']['pid'] == 0"
ok $? "five subscribers connected to both hosts (and nngcat to beta) before their sources start"
wait $start_a && wait $start_b
ok $? "both sessions start ($(head -c 200 "$WORK/alpha.start" "$WORK/beta.start"))"
all_in="c('syn', 'launches') == 3000 and c('pub', 'events_in') == c('syn', 'records_out')"
wait_for 30 "$A1" "$all_in" && wait_for 30 "$B" "$all_in"
ok $? "both publish sinks received every event of their session"
ev_a1=$(json "$A1" "c('pub', 'events_in')")
ev_b=$(json "$B" "c('pub', 'events_in')")
sleep 0.5 # nng delivers asynchronously: let the last batches reach the subscribers
"$XPUSUP" stop --session "$A1" >/dev/null 2>&1
log_clean "$A1" "alpha's first session"

# alpha comes back: a new session on the same port; the subscribers redial by themselves
"$XPUSUP" start "$WORK/alpha2.conf" --session "$A2" >/dev/null 2>"$WORK/alpha2.start" &
start_a=$!
wait_for 20 "$A2" "c('pub', 'subscribers') == 5 and a['syn']['pid'] == 0"
ok $? "alpha restarted: the subscribers reconnected before its source starts"
wait $start_a
wait_for 30 "$A2" "c('syn', 'launches') == 2000 and c('pub', 'events_in') == c('syn', 'records_out')"
ok $? "alpha's second session: its publish sink received every event"
ev_a2=$(json "$A2" "c('pub', 'events_in')")
json "$A2" "c('pub', 'clock_steps') == 0 and c('pub', 'send_errors') == 0" | grep -q True
ok $? "alpha's publish sink: no clock step, no send error"
sleep 0.5
"$XPUSUP" stop --session "$A2" >/dev/null 2>&1
"$XPUSUP" stop --session "$B" >/dev/null 2>&1
log_clean "$A2" "alpha's second session"
log_clean "$B" "beta's session"
# the metrics subscriber's page once it has every event of both hosts (a tick, 100 ms, after
# the last batch; longer on a loaded machine)
for _ in $(seq 1 100); do
	curl -s --max-time 5 "http://127.0.0.1:$PM/metrics" >"$WORK/metrics.page"
	grep -q "^xpusup_subscribe_events_total{host=\"alpha\"} $((ev_a1 + ev_a2))$" "$WORK/metrics.page" &&
		grep -q "^xpusup_subscribe_events_total{host=\"beta\"} $ev_b$" "$WORK/metrics.page" && break
	sleep 0.1
done
# SIGTERM: a background job of a script ignores SIGINT, and nngcat keeps that
kill -TERM $ncat 2>/dev/null
wait $ncat
kill -INT $strace $sfold $sstats $sprof $smet 2>/dev/null
wait $strace
rc_trace=$?
wait $sfold
rc_fold=$?
wait $sstats
rc_stats=$?
wait $sprof
rc_prof=$?
wait $smet
rc_met=$?
pids=""
t1=$(mono_us)

# ---- what the subscribers counted -------------------------------------------------------
E=$WORK/trace.err
[ $rc_trace = 0 ] && [ -s "$WORK/trace.json" ]
ok $? "trace subscriber: exits 0 and writes trace.json ($(tail -1 "$E"))"
got=$(host_field "$E" alpha events)
[ "$got" = $((ev_a1 + ev_a2)) ] && [ "$(host_field "$E" alpha missed)" = 0 ]
ok $? "host alpha: every event of both its sessions, no gap ($got = $ev_a1 + $ev_a2)"
[ "$(host_field "$E" alpha sessions)" = 2 ] && [ "$(host_field "$E" alpha rewinds)" = 0 ]
ok $? "host alpha: its restart is counted as a second session, not a rewind ($(grep 'host alpha:' "$E" | tail -1))"
got=$(host_field "$E" beta events)
[ "$got" = "$ev_b" ] && [ "$(host_field "$E" beta missed)" = 0 ] &&
	[ "$(host_field "$E" beta sessions)" = 1 ]
ok $? "host beta: every event, no gap, one session ($got = $ev_b)"
[ "$(sub_total "$E" events)" = $((ev_a1 + ev_a2 + ev_b)) ] && [ "$(sub_total "$E" missed)" = 0 ] &&
	[ "$(sub_total "$E" rewinds)" = 0 ]
ok $? "total: the hosts' events add up, no gap, no rewind ($(tail -1 "$E"))"
grep -Eq "^xpusup: subscribe: tcp://127.0.0.1:$P1: 2 connections, [1-9][0-9]* drops" "$E"
ok $? "alpha's URL: its reconnection is counted ($(grep "127.0.0.1:$P1:" "$E"))"
grep -Eq "^xpusup: subscribe: tcp://127.0.0.1:$P2: 1 connections, [01] drops" "$E"
ok $? "beta's URL: one connection ($(grep "127.0.0.1:$P2:" "$E"))"
grep -q "^xpusup: subscribe: tcp://127.0.0.1:$P3: never connected: Connection refused" "$E"
ok $? "the host that never came is reported ($(grep "127.0.0.1:$P3: never" "$E"))"
F=$WORK/folded.err
[ $rc_fold = 0 ] && [ "$(host_field "$F" alpha events)" = $((ev_a1 + ev_a2)) ] &&
	[ "$(host_field "$F" beta events)" = "$ev_b" ] && [ "$(sub_total "$F" missed)" = 0 ]
ok $? "folded subscriber: exits 0, the same per-host counts ($(tail -1 "$F"))"

got=$("$PY" - "$WORK/beta.raw" "$t0" <<'PYEOF'
import sys, time, msgpack
events, sessions, hosts, ok = 0, set(), set(), True
offset = time.time_ns() - time.monotonic_ns()
with open(sys.argv[1], 'rb') as f:
    for b in msgpack.Unpacker(f, raw=True, strict_map_key=False):
        hosts.add(b[b'host'])
        sessions.add(b[b'session'])
        mono, real = b[b'clock']
        # the session's pair: read on this machine during the run, the same two clocks
        ok &= int(sys.argv[2]) * 1000 <= mono <= time.monotonic_ns()
        ok &= abs((real - mono) - offset) < 10**6
        events += len(b[b'events'])
print(events, sorted(hosts), len(sessions), ok)
PYEOF
)
[ "$got" = "$ev_b [b'beta'] 1 True" ]
ok $? "nngcat and python3-msgpack: every batch of beta carries host, session and a clock pair ($got; want $ev_b [b'beta'] 1 True)"

# ---- one trace.json of both hosts -----------------------------------------------------------
"$XPUSUP" check "$WORK/trace.json" >"$WORK/check.out" 2>&1
ok $? "xpusup check accepts the merged trace.json ($(tail -1 "$WORK/check.out"))"
"$PY" - "$WORK/trace.json" "$t0" "$t1" >"$WORK/trace.py.out" 2>&1 <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1]))
t0, t1 = int(sys.argv[2]), int(sys.argv[3])
evs = t["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in evs
         if e.get("ph") == "M" and e.get("name") == "process_name"}
host_pids = {h: {p for p, n in names.items() if n.startswith(h + "/")} for h in ("alpha", "beta")}
# the same four synthetic pids on both hosts: four processes each, pids apart
for h, ps in host_pids.items():
    assert len(ps) == 4, (h, sorted(ps), names)
assert not host_pids["alpha"] & host_pids["beta"]
ranges = {h: {p >> 22 for p in ps} for h, ps in host_pids.items()}
assert all(len(r) == 1 for r in ranges.values()) and ranges["alpha"] != ranges["beta"], ranges
assert {p & ((1 << 22) - 1) for p in host_pids["alpha"]} == \
       {p & ((1 << 22) - 1) for p in host_pids["beta"]}
# GPU work of both hosts, on pseudo-processes that name each host's pids
gpu = [n for n in names.values() if n.startswith("GPU ") and "(pid " in n]
gpu_pids = {int(n.split("(pid ")[1].rstrip(")")) for n in gpu}
for h, ps in host_pids.items():
    assert gpu_pids & ps, (h, gpu)
# each host's GPU 0 a device of its own (its SM-active track): device 0 and 256
devices = sorted(n for n in names.values() if n.startswith("GPU ") and "(pid " not in n)
assert devices == ["GPU 0", "GPU 256"], devices
# every event of either host on this machine's CLOCK_MONOTONIC, inside the test's window
per_host = {"alpha": 0, "beta": 0}
for e in evs:
    if e.get("ph") == "M" or "ts" not in e:
        continue
    assert t0 <= float(e["ts"]) <= t1, (e, t0, t1)
    for h, ps in host_pids.items():
        if e["pid"] in ps:
            per_host[h] += 1
assert all(per_host.values()), per_host
print("processes", {h: sorted(ps) for h, ps in host_pids.items()}, "events", per_host,
      "gpu tracks", len(gpu))
PYEOF
ok $? "trace.json: processes named alpha/... and beta/... with pids apart, GPU tracks and devices of both, times inside the run ($(tail -c 300 "$WORK/trace.py.out"))"
grep -q "^alpha/synth;" "$WORK/flame.folded" && grep -q "^beta/synth;" "$WORK/flame.folded"
ok $? "flame.folded: stacks of both hosts, under alpha/synth and beta/synth"

[ $rc_stats = 0 ] && "$PY" - "$WORK/stats.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
comms = {p["comm"] for p in j["cpu"]["top_processes"]}
assert any(c.startswith("alpha/") for c in comms) and any(c.startswith("beta/") for c in comms), comms
PYEOF
ok $? "stats subscriber: exits 0, stats.json's top processes of both hosts ($(tail -1 "$WORK/stats.err"))"

# the profile files read by a few lines of protobuf wire format (tests/pprof_labels.py)
[ $rc_prof = 0 ] && "$PY" "$(dirname "$0")/pprof_labels.py" "$WORK"/prof/profile-*.pb.gz \
	>"$WORK/prof.out" 2>&1 && "$PY" - "$WORK/prof.out" >"$WORK/prof.check" 2>&1 <<'PYEOF'
import json, sys
samples = json.load(open(sys.argv[1]))
gpu = {"alpha": 0, "beta": 0}
for labels, values in samples:
    hosts = [v for k, v in labels if k == "host"]
    assert len(hosts) == 1 and hosts[0] in gpu, labels
    # the host label agrees with the comm the subscriber tagged with the same host
    comms = [v for k, v in labels if k == "comm"]
    assert all(c.startswith(hosts[0] + "/") for c in comms), labels
    gpu[hosts[0]] += values[2]
assert all(gpu.values()), gpu
print("samples", len(samples), "GPU ns by host", gpu)
PYEOF
ok $? "pprof subscriber: every sample labelled with the host its batch came from (alpha or beta, not the collector's), its comm tagged alike, GPU time on both ($(tail -c 300 "$WORK/prof.check"))"

# the per-host counts as Prometheus series (the families docs/fleet.md lists)
series() { # series FAMILY HOST
	sed -n "s/^$1{host=\"$2\"} \([0-9]*\)$/\1/p" "$WORK/metrics.page"
}
[ $rc_met = 0 ] && [ "$(series xpusup_subscribe_events_total alpha)" = $((ev_a1 + ev_a2)) ] &&
	[ "$(series xpusup_subscribe_events_total beta)" = "$ev_b" ] &&
	[ "$(series xpusup_subscribe_sessions_total alpha)" = 2 ] &&
	[ "$(series xpusup_subscribe_sessions_total beta)" = 1 ] &&
	[ "$(series xpusup_subscribe_missed_events_total alpha)" = 0 ] &&
	[ "$(series xpusup_subscribe_missed_events_total beta)" = 0 ] &&
	[ "$(series xpusup_subscribe_batches_total alpha)" = "$(host_field "$WORK/metrics.err" alpha batches)" ]
ok $? "metrics subscriber: per-host series of events ($(series xpusup_subscribe_events_total alpha) and $(series xpusup_subscribe_events_total beta)), sessions (alpha 2), gaps (0) and batches, as its summary says"

! grep -lE "Sanitizer|runtime error" "$WORK"/*.err "$WORK"/*.start 2>/dev/null
ok $? "no sanitizer report from a subscriber or a start"

echo "1..$n"
[ $failed = 0 ]
