#!/bin/bash
# The pprof sink with real sessions, read by the real pprof tool: Go builds google/pprof from
# Debian's source offline, once, into the build folder; a synthetic session (the story: named
# frames, kernels under their launching code) with a folded and a pprof sink; then
# pprof -top and -traces over the interval files against flame.folded of the same session
# (tests/pprof_compare.py): the same top functions, shares within 1 point, each GPU kernel
# under its launch stack, the labels. Bad input: a bad key's value names the file and line; a
# folder that cannot be made is a problem in status while the pipeline runs on, and clears.
# push_url: every file posted to a local stand-in for Pyroscope's /ingest
# (tests/push_receiver.py), which refuses for a while: nothing lost, each file once, bodies
# byte-identical to the files on disk. TAP on stdout.
#
# Usage: pprof_test.sh XPUSUP_BINARY BUILD_DIR
set -u
XPUSUP=${1:?usage: pprof_test.sh XPUSUP_BINARY BUILD_DIR}
BUILD=${2:?usage: pprof_test.sh XPUSUP_BINARY BUILD_DIR}
HERE=$(dirname "$0")
. "$HERE/session_lib.sh"
session_lib_init pproftest p

# ---- pprof itself, built once ------------------------------------------------------------
GOSRC=/usr/share/gocode/src/github.com/google/pprof
PPROF="$BUILD/pprof-tool/pprof"
if [ ! -x "$PPROF" ]; then
	if ! command -v go >/dev/null; then
		echo "1..0 # SKIP needs go (golang-go) to build pprof"
		exit 77
	fi
	if [ ! -d "$GOSRC" ]; then
		echo "1..0 # SKIP needs pprof's source in $GOSRC (golang-github-google-pprof-dev)"
		exit 77
	fi
	mkdir -p "$BUILD/pprof-tool"
	# offline: Debian's GOPATH, no modules, no proxy; the cache inside the build folder
	if ! GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= \
		GOCACHE="$BUILD/pprof-tool/cache" go build -o "$PPROF.tmp" github.com/google/pprof \
		>"$WORK/go.log" 2>&1; then
		echo "not ok 1 - go build github.com/google/pprof failed"
		sed 's/^/# /' "$WORK/go.log" | head -20
		echo "1..1"
		exit 1
	fi
	mv "$PPROF.tmp" "$PPROF"
fi
"$PPROF" -h >/dev/null 2>&1
ok $? "pprof built from Debian's source runs ($PPROF)"

# ---- sessions with a folded and a pprof sink, read by pprof against flame.folded ----------
# story: named frames, C++-free names; plain: unnamed frames (hex, in both outputs), kernel
# frames, C++ kernel names ("void synth_kernel_0<float>(float*, int)") pprof must not shorten.
for kind in story plain; do
	s="$PREFIX-$kind"
	mkdir -p "$WORK/$kind"
	LAUNCHES=24000
	{ printf '[sink flame]\nkind = folded\npath = %s/flame.folded\nsnapshot_s = 0\n' $kind
	  printf '[sink prof]\nkind = pprof\npath = %s/profile.pb.gz\ninterval_s = 1\n' $kind
	  printf 'host = testhost\nlabels = team=ml,job=resnet\n'
	  synthetic $LAUNCHES | sed "s/launches_per_s = 0/launches_per_s = 10000\nthreads = 2\nstory = $([ $kind = story ] && echo yes || echo no)/"
	} >"$WORK/$kind.conf"
	"$XPUSUP" start "$WORK/$kind.conf" --session "$s" >/dev/null 2>&1
	ok $? "$kind: a session with a folded and a pprof sink starts"
	wait_for 40 "$s" "c('syn', 'launches') == $LAUNCHES and sum_('pending') == 0 and c('flame', 'events_in') == sum_('events_out') and c('prof', 'events_in') == sum_('events_out')"
	ok $? "$kind: both sinks received every event the correlators sent ($(json "$s" "sum_('events_out'), c('flame', 'events_in'), c('prof', 'events_in')"))"
	got=$(json "$s" "c('prof', 'files_written') >= 1, c('prof', 'cpu_samples') == c('flame', 'cpu_samples'), c('prof', 'gpu_events') == c('flame', 'gpu_events'), c('prof', 'events_full')")
	[ "$got" = "True True True 0" ]
	ok $? "$kind: status: files written while running, the CPU samples and GPU events folded has, no table full ($got)"
	"$XPUSUP" status --session "$s" 2>/dev/null | grep -E "^prof .*files_written=[0-9]+ .*samples=.*locations=.*functions=.*strings=.*events_full=0" >/dev/null
	ok $? "$kind: status text shows the pprof sink's counters"
	"$XPUSUP" stop --session "$s" >/dev/null 2>&1
	log_clean "$s" "$kind"
	files=$(ls "$WORK"/$kind/profile-*.pb.gz 2>/dev/null)
	nfiles=$(echo "$files" | grep -c .)
	[ "$nfiles" -ge 2 ] && ! echo "$files" | grep -Evq '/profile-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z\.pb\.gz$'
	ok $? "$kind: one file per interval and a last one, named profile-YYYYMMDDTHHMMSS.mmmZ.pb.gz ($nfiles files)"
	[ -z "$(ls "$WORK"/$kind/ | grep partial)" ]
	ok $? "$kind: no partial file left"
	for f in $files; do gzip -t "$f" || break; done
	ok $? "$kind: every file is whole gzip"
	"$PY" "$HERE/pprof_compare.py" "$PPROF" "$WORK/$kind/flame.folded" $files >"$WORK/compare.txt" 2>&1
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok "*) ok 0 "$kind: ${line#ok }" ;;
		"not ok "*) ok 1 "$kind: ${line#not ok }" ;;
		*) echo "# $line" ;;
		esac
	done <"$WORK/compare.txt"
	[ $rc = 0 ] && grep -q "^ok gpu_time: each kernel" "$WORK/compare.txt"
	ok $? "$kind: pprof_compare.py: every comparison held"
done
grep -q '<float>(float\*, int)' "$WORK/compare.txt"
ok $? "plain: the C++ kernel names are whole in pprof's reading"

# ---- bad input ---------------------------------------------------------------------------
printf '[sink prof]\nkind = pprof\npath = x/p.pb.gz\nlabels = team=ml,pid=3\n' >"$WORK/bad1.conf"
synthetic 10 >>"$WORK/bad1.conf"
out=$("$XPUSUP" start "$WORK/bad1.conf" --session "$s-bad" 2>&1)
rc=$?
[ $rc = 100 ] && echo "$out" | grep -q "bad1.conf:4:.*pid"
ok $? "labels naming a label of the sink's own: refused with file and line (exit $rc: $out)"
printf '[sink prof]\nkind = pprof\npath = x/p.pb.gz\ninterval_s = 0\n' >"$WORK/bad2.conf"
synthetic 10 >>"$WORK/bad2.conf"
out=$("$XPUSUP" start "$WORK/bad2.conf" --session "$s-bad" 2>&1)
rc=$?
[ $rc = 100 ] && echo "$out" | grep -q "bad2.conf:4:.*interval_s"
ok $? "interval_s = 0: refused with file and line (exit $rc: $out)"

s="$PREFIX-nodir"
: >"$WORK/notadir" # a file where the sink's folder should be
{ printf '[sink prof]\nkind = pprof\npath = notadir/profile.pb.gz\ninterval_s = 1\n'
  synthetic 0 | sed 's/launches_per_s = 0/launches_per_s = 2000/'; } >"$WORK/nodir.conf"
"$XPUSUP" start "$WORK/nodir.conf" --session "$s" >/dev/null 2>&1
ok $? "not a folder: the session starts"
wait_for 15 "$s" "c('prof', 'write_errors') > 0 and 'Not a directory' in (a['prof']['problem'] or '') and 'notadir/profile-' in (a['prof']['problem'] or '')"
ok $? "not a folder: the problem, naming the file, is shown in status ($(json "$s" "a['prof']['problem']"))"
"$XPUSUP" status --session "$s" 2>/dev/null | grep -q "prof.*PROBLEM.*notadir/profile-"
ok $? "not a folder: and in the text status"
e1=$(json "$s" "sum_('events_out')")
sleep 1
got=$(json "$s" "sum_('events_out') > $e1, c('syn', 'records_dropped'), a['prof']['state']")
[ "$got" = "True 0 running" ]
ok $? "not a folder: the pipeline runs on, nothing dropped, the sink running ($got)"
rm "$WORK/notadir"
wait_for 15 "$s" "a['prof']['problem'] is None and c('prof', 'files_written') > 0"
ok $? "not a folder: once the file is gone the problem clears and a file is written"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "not a folder"
f=$(ls "$WORK"/notadir/profile-*.pb.gz 2>/dev/null | head -1)
[ -n "$f" ] && "$PPROF" -top -sample_index=gpu_time "$f" 2>/dev/null | grep -q "\[gpu\]"
ok $? "not a folder: the file written after it holds GPU time pprof reads"

# ---- push_url: each file posted, through a refusing spell, to a local /ingest --------------
s="$PREFIX-push"
mkdir -p "$WORK/push/bodies"
"$PY" "$HERE/push_receiver.py" "$WORK/push/port" "$WORK/push/log" "$WORK/push/bodies" &
recv=$!
for _ in $(seq 1 100); do [ -s "$WORK/push/port" ] && break; sleep 0.05; done
port=$(cat "$WORK/push/port" 2>/dev/null)
control() { curl -sf "http://127.0.0.1:$port/control?mode=$1&n=-1" >/dev/null; }
LAUNCHES=9000
{ printf '[sink prof]\nkind = pprof\npath = push/profile.pb.gz\ninterval_s = 1\n'
  printf 'host = testhost\nlabels = team=ml\npush_url = http://127.0.0.1:%s\n' "$port"
  printf 'push_app = trainer\npush_backoff_ms = 100\npush_backoff_max_s = 1\n'
  synthetic $LAUNCHES | sed 's/launches_per_s = 0/launches_per_s = 1500/'; } >"$WORK/push.conf"
"$XPUSUP" start "$WORK/push.conf" --session "$s" >/dev/null 2>&1
ok $? "push: a session with a pprof sink that pushes starts (receiver on port $port)"
wait_for 15 "$s" "c('prof', 'push_sent') >= 1"
ok $? "push: files are posted while the session runs ($(json "$s" "c('prof', 'push_sent')"))"
control refuse
wait_for 15 "$s" "c('prof', 'push_failures') >= 2 and c('prof', 'push_spooled') >= 2"
ok $? "push: while the receiver answers 500, files wait in the spool and failures are counted ($(json "$s" "c('prof', 'push_failures'), c('prof', 'push_spooled')"))"
control accept
wait_for 40 "$s" "c('syn', 'launches') == $LAUNCHES and c('prof', 'events_in') == sum_('events_out') and c('prof', 'push_spooled') == 0"
ok $? "push: once it accepts again, the spool empties while the session runs ($(json "$s" "c('prof', 'push_sent'), c('prof', 'push_spooled'), c('prof', 'push_retries')"))"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "push"

# a spool on a full disk (a 16 KiB tmpfs) while the receiver refuses: the files that cannot be
# copied there are dropped and counted, the sink and the pipeline run on
s="$PREFIX-pushfull"
mkdir -p "$WORK/pushfull" "$WORK/spoolfs"
if mount -t tmpfs -o size=16k tmpfs "$WORK/spoolfs" 2>/dev/null; then
	control refuse
	{ printf '[sink prof]\nkind = pprof\npath = pushfull/profile.pb.gz\ninterval_s = 1\n'
	  printf 'push_url = http://127.0.0.1:%s\npush_spool = spoolfs\n' "$port"
	  synthetic 0 | sed 's/launches_per_s = 0/launches_per_s = 3000/'; } >"$WORK/pushfull.conf"
	"$XPUSUP" start "$WORK/pushfull.conf" --session "$s" >/dev/null 2>&1
	wait_for 30 "$s" "c('prof', 'push_dropped') >= 1"
	ok $? "push: a full spool disk: the files that cannot be spooled are dropped and counted ($(json "$s" "c('prof', 'files_written'), c('prof', 'push_spooled'), c('prof', 'push_dropped')"))"
	e1=$(json "$s" "sum_('events_out')")
	sleep 1
	got=$(json "$s" "sum_('events_out') > $e1, c('syn', 'records_dropped'), a['prof']['state'], c('prof', 'write_errors')")
	[ "$got" = "True 0 running 0" ]
	ok $? "push: with the spool's disk full the pipeline and the sink run on, its files written ($got)"
	"$XPUSUP" stop --session "$s" >/dev/null 2>&1
	log_clean "$s" "push, full spool disk"
	umount "$WORK/spoolfs"
	control accept
else
	ok 1 "push: mount a 16 KiB tmpfs for the spool (needs root)"
fi
kill "$recv" 2>/dev/null
wait "$recv" 2>/dev/null
"$PY" - "$WORK/push" <<'PYEOF' >"$WORK/push/check.txt" 2>&1
import glob, hashlib, os, sys
d = sys.argv[1]
files = sorted(glob.glob(os.path.join(d, "profile-*.pb.gz")))
disk = {hashlib.sha256(open(f, "rb").read()).hexdigest(): f for f in files}
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "log"))]
ok = [r for r in rows if r[1] == "200"]
got = [r[3] for r in ok]
bad = []
if sorted(got) != sorted(disk):
    bad.append("accepted %d bodies, %d files on disk, %d in common" % (len(got), len(disk), len(set(got) & set(disk))))
for r in ok:
    if r[5] != "/ingest" or r[6] != "trainer{host=testhost,team=ml}" or r[9] != "pprof" or not (0 < int(r[7]) <= int(r[8])):
        bad.append("request %s: path %s name %s from %s until %s format %s" % (r[0], r[5], r[6], r[7], r[8], r[9]))
        break
if not any(r[1] == "500" for r in rows):
    bad.append("no request was refused")
leftover = os.listdir(os.path.join(d, "push-spool")) if os.path.isdir(os.path.join(d, "push-spool")) else []
leftover = [f for f in leftover if f.endswith(".pprof")]
if leftover:
    bad.append("left in the spool: %s" % leftover)
print("%d files, %d requests, %d accepted, %d refused" % (len(files), len(rows), len(ok), sum(r[1] == "500" for r in rows)))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PYEOF
ok $? "push: after the refusals every file on disk reached the receiver once, byte for byte, as trainer{host=testhost,team=ml} from..until format=pprof, none left in the spool ($(head -3 "$WORK/push/check.txt" | tr '\n' ' '))"
out=$(printf '[sink prof]\nkind = pprof\npath = p.pb.gz\npush_url = ftp://x\n' >"$WORK/bad3.conf"; "$XPUSUP" start --check "$WORK/bad3.conf" 2>&1)
rc=$?
[ $rc = 100 ] && echo "$out" | grep -q "bad3.conf:4:.*push_url"
ok $? "push: a push_url that is not http(s) is refused with file and line (exit $rc: $out)"

echo "1..$n"
[ $failed = 0 ]
