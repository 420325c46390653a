#!/bin/bash
# The metrics sink (kind = metrics, docs/fleet.md) with a real session and the real
# Prometheus server (Debian's prometheus package). TAP on stdout.
#
# One synthetic session of about 12 s with a stats sink and a metrics sink on loopback; a
# Prometheus of our own (temporary storage, loopback) scrapes the sink every second. While the
# source runs, bad clients (tests/metrics_http.py): malformed requests, an unknown path,
# another method, headers over the bound, a slowloris, many connections at once; the sink
# answers each as it should, keeps serving, and the pipeline never waits (every event reaches
# both sinks). Once the source is done and Prometheus has scraped a page taken after it, one
# query per family (tests/metrics_check.py) must return what stats.json reports at stop.
# Then a second, short session: the ring families across a source killed with SIGKILL and
# restarted, and no ring file opened at each page (strace).
#
# Usage: metrics_test.sh XPUSUP_BINARY TESTS_DIR
set -u
XPUSUP=${1:?usage: metrics_test.sh XPUSUP_BINARY TESTS_DIR}
TESTS=${2:?usage: metrics_test.sh XPUSUP_BINARY TESTS_DIR}
PROMETHEUS=/usr/bin/prometheus
if [ ! -x "$PROMETHEUS" ]; then
	echo "1..0 # SKIP needs the Prometheus server ($PROMETHEUS: Debian's prometheus package)"
	exit 77
fi
. "$(dirname "$0")/session_lib.sh"
session_lib_init metricstest mt

# The checks of a Python helper ("ok - TEXT" / "not ok - TEXT" lines) as TAP lines of ours.
relay() { # relay WHAT FILE
	local line
	while read -r line; do
		case "$line" in
		"ok - "*) ok 0 "$1: ${line#ok - }" ;;
		"not ok - "*) ok 1 "$1: ${line#not ok - }" ;;
		*) echo "# $line" ;;
		esac
	done <"$2"
}

PROM_PID=
cleanup_extra() {
	if [ -n "$PROM_PID" ]; then
		kill "$PROM_PID" 2>/dev/null
		wait "$PROM_PID" 2>/dev/null
	fi
}

TOP_KERNELS=2 # the synthetic source has 3 names: one goes to [other kernels]
LAUNCHES=6000 # 1000 a second: the source runs about 6 s of the session's 12
TIMEOUT_MS=1500
MAX_CLIENTS=4
s="$PREFIX-m"
mkdir -p "$WORK/out" "$WORK/prom"

# Two free ports: one for the sink, one for Prometheus (retried once if taken meanwhile).
for try in 1 2; do
	PORT=$(free_port)
	PPORT=$(free_port)
	[ "$PORT" != "$PPORT" ] && break
done

cat >"$WORK/prom.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: xpusup
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOF
"$PROMETHEUS" --config.file="$WORK/prom.yml" --storage.tsdb.path="$WORK/prom" \
	--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$WORK/prom.log" 2>&1 &
PROM_PID=$!
for i in $(seq 1 100); do
	curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null 2>&1 && break
	sleep 0.2
done
curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null 2>&1
ok $? "Prometheus is ready on 127.0.0.1:$PPORT"

# SM-active windows of 250 ms, in both sinks: 250 kernels a window, below the 512 intervals an
# entity keeps in one (SM_INTERVALS_MAX). With the default 1 s, the device's 1000 a second are
# coarsened (gaps filled), and what is filled depends on the order the two correlator shards'
# batches arrived in, which is each sink's own: busy times then differ by a millisecond or so.
{
	printf '[sink st]\nkind = stats\npath = out/stats.json\nwindow_ms = 250\n'
	printf '[sink m]\nkind = metrics\nlisten = 127.0.0.1:%s\ntop_kernels = %s\n' "$PORT" "$TOP_KERNELS"
	printf 'window_ms = 250\n'
	printf 'timeout_ms = %s\nmax_clients = %s\n' "$TIMEOUT_MS" "$MAX_CLIENTS"
	synthetic "$LAUNCHES" | sed 's/^launches_per_s = 0$/launches_per_s = 1000/'
} >"$WORK/m.conf"
# Bad keys stop the start with exit 100 and say why, at the key's line.
printf '[sink m]\nkind = metrics\nlisten = localhost:9464\n' >"$WORK/bad.conf"
synthetic 10 >>"$WORK/bad.conf"
"$XPUSUP" start --check "$WORK/bad.conf" >/dev/null 2>"$WORK/bad.err"
[ $? = 100 ] && grep -q "bad.conf:3: bad value 'localhost:9464' for 'listen': expected IPV4:PORT" "$WORK/bad.err"
ok $? "config: a host name in listen is refused with exit 100 ($(head -c 200 "$WORK/bad.err"))"
sed -i 's/^listen = .*/top_kernels = 0/' "$WORK/bad.conf"
"$XPUSUP" start --check "$WORK/bad.conf" >/dev/null 2>"$WORK/bad.err"
[ $? = 100 ] && grep -q "bad.conf:3: bad value '0' for 'top_kernels'" "$WORK/bad.err"
ok $? "config: top_kernels = 0 is refused with exit 100"

started=$SECONDS
"$XPUSUP" start "$WORK/m.conf" --session "$s" >/dev/null 2>"$WORK/start.err"
ok $? "a session with a stats and a metrics sink starts ($(head -c 200 "$WORK/start.err"))"

# ---- bad clients while the source runs ------------------------------------------------------
"$PY" "$TESTS/metrics_http.py" "$PORT" "$(awk "BEGIN {print $TIMEOUT_MS / 1000}")" \
	"$MAX_CLIENTS" >"$WORK/http.tap" 2>&1
relay "http" "$WORK/http.tap"
grep -q "^ok - the server still serves" "$WORK/http.tap"
ok $? "http: the bad-client script ran to its end"

wait_for 30 "$s" "c('syn', 'launches') == $LAUNCHES and c('st', 'events_in') == c('syn', 'records_out') and c('m', 'events_in') == c('syn', 'records_out')"
ok $? "the pipeline never waited on the bad clients: both sinks received every event"
json "$s" "c('m', 'bad_requests') >= 5 and c('m', 'not_found') >= 2 and c('m', 'bad_methods') >= 3 and c('m', 'too_large') >= 1 and c('m', 'clients_timed_out') >= 1 and c('m', 'clients_evicted') >= 1 and c('syn', 'records_dropped') == 0" | grep -q True
ok $? "xpusup status shows the sink's counters: $(json "$s" "{k: c('m', k) for k in ('scrapes', 'bad_requests', 'not_found', 'bad_methods', 'too_large', 'clients_timed_out', 'clients_evicted', 'connections', 'series', 'kernels_folded')}")"

# ---- Prometheus: a scrape after the source finished -----------------------------------------
# Every event is in (above), and the page is rendered at each tick before the counters that
# said so were published: a scrape that starts from now on takes the final numbers.
done_at=$("$PY" -c 'import time; print(time.time())')
while [ $((SECONDS - started)) -lt 11 ]; do sleep 0.5; done # a session of at least 10 s
"$PY" - "$PPORT" "$done_at" <<'PYEOF'
import json, sys, time, urllib.request
from datetime import datetime
port, done_at = sys.argv[1], float(sys.argv[2])
for _ in range(100):  # bounded: 20 s
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets", timeout=5) as r:
        t = json.load(r)["data"]["activeTargets"]
    last = t[0]["lastScrape"] if t else ""
    if last and not last.startswith("0001"):
        ts = datetime.fromisoformat(last[:26].rstrip("Z") + "+00:00" if "." in last else last.replace("Z", "+00:00"))
        if ts.timestamp() > done_at + 0.2 and t[0]["health"] == "up":
            sys.exit(0)
    time.sleep(0.2)
sys.exit(1)
PYEOF
ok $? "Prometheus scraped the sink after the source finished"
"$PY" "$TESTS/metrics_check.py" query "$PPORT" "$WORK/prom.json" 2>"$WORK/query.err"
ok $? "one query per family through /api/v1/query ($(head -c 300 "$WORK/query.err"))"

"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "metrics"
"$PY" "$TESTS/metrics_check.py" compare "$WORK/prom.json" "$WORK/out/stats.json" "$TOP_KERNELS" \
	"$LAUNCHES" >"$WORK/compare.tap" 2>&1
echo "# compare exit $?"
relay "prometheus vs stats.json" "$WORK/compare.tap"
grep -q "xpusup_process_sm_busy_seconds_total" "$WORK/compare.tap"
ok $? "prometheus vs stats.json: every family was compared"
grep -E "level=(error|warn)" "$WORK/prom.log" | grep -iv "scrape manager\|storage" | head -5 | sed 's/^/# prometheus: /'

# ---- the ring families across a source restart ----------------------------------------------
# The format opens each ring once and keeps it (actors/sink/metrics.c, struct ring_watch): a
# second session, a metrics sink only, a slow source killed with SIGKILL and restarted by the
# supervisor. The page's produced counters keep rising over the restart, lie between what
# `xpusup status` reads just before and just after the scrape, and the sink opens no ring file
# while it runs (strace: no per-tick opens; at most one look at each ring's name a second).
s="$PREFIX-r"
RPORT=$(free_port)
{
	printf '[sink m]\nkind = metrics\nlisten = 127.0.0.1:%s\n' "$RPORT"
	synthetic 1000000 | sed 's/^launches_per_s = 0$/launches_per_s = 400/'
} >"$WORK/r.conf"
# "P0 P1": each shard's produced records on the page now ("" when the page has none)
page_produced() {
	curl -s --max-time 5 "http://127.0.0.1:$RPORT/metrics" |
		sed -n 's/^xpusup_ring_produced_records_total{source="syn",shard="\([01]\)"} \([0-9]*\)$/\1 \2/p' |
		sort | cut -d' ' -f2 | paste -sd' '
}
status_produced() {
	json "$s" "' '.join(str(r['produced']) for r in sorted(rings, key=lambda r: r['shard']))"
}
# whether each number of $2 is at least its counterpart in $1 (strictly more with $3 = gt)
at_least() {
	"$PY" -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); sys.exit(not (len(a) == len(b) == 2 and all(int(y) > int(x) if sys.argv[3] == "gt" else int(y) >= int(x) for x, y in zip(a, b))))' "$1" "$2" "${3:-ge}"
}
"$XPUSUP" start "$WORK/r.conf" --session "$s" >/dev/null 2>"$WORK/r.err"
ok $? "restart: a session with a slow source and a metrics sink starts ($(head -c 200 "$WORK/r.err"))"
wait_for 10 "$s" "c('syn', 'launches') > 200"
ok $? "restart: the source runs"
before=$(status_produced)
sleep 0.3 # the page is rendered every 100 ms: this one is taken after $before was read
on_page=$(page_produced)
after=$(status_produced)
at_least "$before" "$on_page" && at_least "$on_page" "$after"
ok $? "restart: the page's produced records lie between xpusup status before and after ($before <= $on_page <= $after)"
if command -v strace >/dev/null 2>&1; then
	spid=$(json "$s" "a['m']['pid']")
	timeout -s INT 2 strace -f -e trace=%file -o "$WORK/strace.txt" -p "$spid" 2>"$WORK/strace.err"
	opens=$(grep -c 'open.*"ring\.' "$WORK/strace.txt" 2>/dev/null)
	looks=$(grep -c '"ring\.' "$WORK/strace.txt" 2>/dev/null)
	if grep -q "attached" "$WORK/strace.err"; then
		# 2 s: each of the 2 rings is looked up once a second (3 times at the edges)
		[ "$opens" = 0 ] && [ "$looks" -ge 1 ] && [ "$looks" -le 6 ]
		ok $? "restart: in 2 s of strace the sink opened no ring file ($opens opens, $looks looks at a ring's name)"
	else # ptrace refused (yama ptrace_scope 3, a container without CAP_SYS_PTRACE)
		ok 0 "restart: the sink opens no ring file at each tick # SKIP strace could not attach: $(head -c 200 "$WORK/strace.err")"
	fi
else
	ok 0 "restart: the sink opens no ring file at each tick # SKIP strace is not installed"
fi
kill -9 "$(json "$s" "a['syn']['pid']")"
wait_for 10 "$s" "a['syn']['restarts'] == 1 and a['syn']['state'] == 'running'"
ok $? "restart: the source killed with SIGKILL is restarted"
p1=$(page_produced)
sleep 1
p2=$(page_produced)
at_least "$on_page" "$p1" && at_least "$p1" "$p2" gt
ok $? "restart: the page's produced records keep rising after the restart, on both shards ($on_page before, then $p1, then $p2)"
before=$(status_produced)
sleep 0.3
on_page=$(page_produced)
after=$(status_produced)
at_least "$before" "$on_page" && at_least "$on_page" "$after"
ok $? "restart: and still lie between xpusup status before and after ($before <= $on_page <= $after)"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "restart"

echo "1..$n"
[ "$failed" = 0 ]
