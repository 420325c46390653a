#!/bin/bash
# `xpusup check` (docs/check.md): the traces the timeline sink writes in real synthetic
# sessions are clean, and agree with tests/timeline_check.py, an independent reader; a
# violation put into a real trace is found; hand-made traces with each kind of violation
# (kernels overlapping on a stream, a child outside its parent, a flow with one end,
# unordered B/E, bad counters, bad events) report each one with its event; malformed JSON
# (truncated, invalid, deep, mutated at random) exits 111 with the byte offset and never
# crashes, judged against Python's json module; reads split anywhere in the file give the
# same answer. TAP on stdout.
#
# Usage: check_test.sh XPUSUP_BINARY
set -u
XPUSUP=${1:?usage: check_test.sh XPUSUP_BINARY}
. "$(dirname "$0")/session_lib.sh"
session_lib_init checktest k
TIMELINE_CHECK="$(cd "$(dirname "$0")" && pwd)/timeline_check.py"

# trace NAME: the events on stdin, one a line, as $WORK/NAME.json
trace() {
	{ printf '{"traceEvents":[\n'; sed '$!s/$/,/'; printf '],\n"displayTimeUnit":"ns"}\n'; } >"$WORK/$1.json"
}

said() { head -c 400 "$1" | tr '\n' ' '; }

# check_bad NAME CHECK TEXT...: exit 1, and for each TEXT a CHECK violation line holding it
check_bad() {
	local name=$1 kind=$2 rc t miss=""
	shift 2
	"$XPUSUP" check "$WORK/$name.json" >"$WORK/$name.out" 2>&1
	rc=$?
	for t in "$@"; do
		grep -F ": $kind: " "$WORK/$name.out" | grep -qF -- "$t" || miss="$miss [$t]"
	done
	[ $rc = 1 ] && [ -z "$miss" ]
	ok $? "$name: exit 1 ($rc), $kind violations naming their events${miss:+, missing:$miss} ($(said "$WORK/$name.out"))"
}

# summary_is NAME TEXT: the summary line ends with TEXT
summary_is() {
	tail -n 1 "$WORK/$1.out" | grep -qF -- ": $2"
	ok $? "$1: summary '$2' ($(tail -n 1 "$WORK/$1.out"))"
}

# check_invalid NAME TEXT: exit 111 and the reason with its byte offset
check_invalid() {
	"$XPUSUP" check "$WORK/$1.json" >"$WORK/$1.out" 2>&1
	local rc=$?
	[ $rc = 111 ] && grep -qF -- "$2" "$WORK/$1.out"
	ok $? "$1: exit 111 ($rc): '$2' ($(said "$WORK/$1.out"))"
}

# ---- usage ---------------------------------------------------------------------------------
"$XPUSUP" check >/dev/null 2>&1
[ $? = 100 ]
ok $? "usage: no file: exit 100"
"$XPUSUP" check --frobnicate x.json >/dev/null 2>&1
[ $? = 100 ]
ok $? "usage: an unknown option: exit 100"
"$XPUSUP" check --max lots x.json >/dev/null 2>&1
[ $? = 100 ]
ok $? "usage: a bad --max: exit 100"
"$XPUSUP" check --help >"$WORK/help.out" 2>&1 &&
	for k in event order stream-overlap nesting flow counter metadata stack; do
		grep -q "^  $k " "$WORK/help.out" || exit 1
	done
ok $? "usage: --help explains every check"
"$XPUSUP" --help | grep -q "^  check TRACE.json"
ok $? "usage: xpusup --help lists check"

# ---- a clean hand-made trace: everything the format allows -----------------------------------
trace good <<'EOF'
{"ph":"M","name":"process_name","cat":"__metadata","pid":42,"tid":42,"args":{"name":"train.py"}}
{"ph":"X","name":"step","cat":"range","pid":42,"tid":42,"ts":100.000,"dur":50.000,"args":{"range_id":1}}
{"ph":"X","name":"cudaLaunchKernel","cat":"cuda_api","pid":42,"tid":42,"ts":110.000,"dur":4.000,"args":{"stack":["0x401a20","main"],"nested":{"a":[1,[2,{"b":null}]],"t":true}}}
{"ph":"X","name":"cudaMemcpy","cat":"cuda_api","pid":42,"tid":42,"ts":120.000,"dur":30.000}
{"ph":"X","name":"zero","cat":"cuda_api","pid":42,"tid":42,"ts":150.000,"dur":0}
{"ph":"s","name":"launch","cat":"launch","pid":42,"tid":42,"ts":110.000,"id":1}
{"ph":"f","name":"launch","cat":"launch","pid":1073741824,"tid":7,"ts":115.000,"bp":"e","id":"1"}
{"ph":"X","name":"_Z6vecAddPfS_S_i","cat":"kernel","pid":1073741824,"tid":7,"ts":115.000,"dur":31.000,"args":{"stream":7}}
{"ph":"X","name":"memcpy HtoD","cat":"memcpy","pid":1073741824,"tid":7,"ts":146.000,"dur":5.500}
{"ph":"X","name":"other stream","cat":"kernel","pid":1073741824,"tid":8,"ts":116.000,"dur":40.000}
{"ph":"B","name":"outer \u00e9\ud83d\ude00 \"q\"","pid":42,"tid":43,"ts":200.000}
{"ph":"B","name":"inner","pid":42,"tid":43,"ts":201.000}
{"ph":"E","pid":42,"tid":43,"ts":202.000}
{"ph":"E","name":"outer \u00e9\ud83d\ude00 \"q\"","pid":42,"tid":43,"ts":210.000}
{"ph":"X","name":"producer","cat":"task","pid":42,"tid":43,"ts":300.000,"dur":1.000,"bind_id":"0x9","flow_out":true}
{"ph":"X","name":"consumer","cat":"task","pid":42,"tid":44,"ts":302.000,"dur":1.000,"bind_id":"0x9","flow_in":true}
{"ph":"X","name":"consumer 2","cat":"task","pid":42,"tid":45,"ts":302.000,"dur":1.000,"bind_id":"0x9","flow_in":true}
{"ph":"X","name":"unbound","cat":"task","pid":42,"tid":45,"ts":304.000,"dur":1.000,"bind_id":"0xa","flow_out":true}
{"ph":"C","name":"SM active","cat":"sm_active","pid":1073741825,"tid":0,"ts":0.000,"args":{"%":80.000}}
{"ph":"C","name":"cycles cpu0","cat":"pmu","pid":1073741826,"tid":0,"ts":1e2,"args":{"delta":-1.5E+3,"x":0}}
{"ph":"i","name":"cpu sample","cat":"cpu","pid":42,"tid":42,"ts":130.123,"s":"t"}
{"ph":"b","name":"async","cat":"range","pid":42,"tid":42,"ts":400,"id":7}
{"ph":"e","name":"async","cat":"range","pid":42,"tid":42,"ts":390,"id":7}
{"ph":"M","name":"process_name","cat":"__metadata","pid":1073741824,"tid":0,"args":{"name":"GPU 0 (pid 42)"}}
{"ph":"M","name":"thread_name","cat":"__metadata","pid":1073741824,"tid":7,"args":{"name":"stream 7"}}
EOF
"$XPUSUP" check "$WORK/good.json" >"$WORK/good.out" 2>&1
ok $? "good: a clean hand-made trace exits 0 ($(said "$WORK/good.out"))"
summary_is good "25 events, 8 tracks (2 on GPU streams), 13 slices, 3 flows, 2 counter values: clean"
{ printf '[\n'; sed -n '2,$p' "$WORK/good.json" | sed '/^\],$/,$d'; printf ']\n'; } >"$WORK/array.json"
"$XPUSUP" check "$WORK/array.json" >"$WORK/array.out" 2>&1
ok $? "array: the JSON Array Format (events only) is read too ($(said "$WORK/array.out"))"

# ---- each kind of violation ----------------------------------------------------------------
# kernels overlapping on one stream: known by cat, and by the GPU process's name alone
trace overlap <<'EOF'
{"ph":"X","name":"k1","cat":"kernel","pid":1073741824,"tid":7,"ts":100.000,"dur":10.000}
{"ph":"X","name":"k2","cat":"kernel","pid":1073741824,"tid":7,"ts":105.000,"dur":10.000}
{"ph":"X","name":"k3","cat":"kernel","pid":1073741824,"tid":8,"ts":105.000,"dur":10.000}
{"ph":"X","name":"copy","cat":"gpu","pid":1073741825,"tid":3,"ts":200.000,"dur":10.000}
{"ph":"X","name":"set","cat":"gpu","pid":1073741825,"tid":3,"ts":209.999,"dur":1.000}
{"ph":"X","name":"cpu a","cat":"cuda_api","pid":42,"tid":42,"ts":100.000,"dur":10.000}
{"ph":"X","name":"cpu b","cat":"cuda_api","pid":42,"tid":42,"ts":100.000,"dur":10.000}
{"ph":"M","name":"process_name","pid":1073741825,"args":{"name":"GPU 1 (pid 42)"}}
EOF
check_bad overlap stream-overlap 'X "k2" ts 105.000 dur 10.000 on (1073741824, 7): starts before X "k1" ts 100.000' \
	'X "set" ts 209.999 dur 1.000 on (1073741825, 3): starts before X "copy"'
summary_is overlap "2 violations (stream-overlap 2)"

# a child range outside its parent; B/E pairs count as slices too
trace nesting <<'EOF'
{"ph":"X","name":"parent","cat":"range","pid":42,"tid":42,"ts":100.000,"dur":10.000}
{"ph":"X","name":"child","cat":"range","pid":42,"tid":42,"ts":105.000,"dur":10.000}
{"ph":"X","name":"inside","cat":"range","pid":42,"tid":42,"ts":106.000,"dur":1.000}
{"ph":"X","name":"call","cat":"cuda_api","pid":42,"tid":43,"ts":105.000,"dur":10.000}
{"ph":"B","name":"range","pid":42,"tid":43,"ts":100.000}
{"ph":"E","name":"range","pid":42,"tid":43,"ts":110.000}
EOF
check_bad nesting nesting 'X "child" ts 105.000 dur 10.000 on (42, 42): ends at 115.000, after its parent X "parent"' \
	'X "call" ts 105.000 dur 10.000 on (42, 43): ends at 115.000, after its parent B "range"'
summary_is nesting "2 violations (nesting 2)"

trace be <<'EOF'
{"ph":"B","name":"a","pid":42,"tid":42,"ts":100.000}
{"ph":"E","name":"b","pid":42,"tid":42,"ts":101.000}
{"ph":"E","name":"a","pid":42,"tid":42,"ts":102.000}
{"ph":"B","name":"never","pid":42,"tid":42,"ts":103.000}
EOF
check_bad be nesting 'E "b" ts 101.000 on (42, 42): closes B "a"' 'E "a" ts 102.000 on (42, 42): E with no B open' \
	'B "never" ts 103.000 on (42, 42): B never closed'

# flows: one end only, the start after the end, an end on no slice
trace flow <<'EOF'
{"ph":"X","name":"call","cat":"cuda_api","pid":42,"tid":42,"ts":100.000,"dur":10.000}
{"ph":"X","name":"k","cat":"kernel","pid":1073741824,"tid":7,"ts":120.000,"dur":10.000}
{"ph":"s","name":"launch","cat":"launch","pid":42,"tid":42,"ts":101.000,"id":1}
{"ph":"f","name":"launch","cat":"launch","pid":1073741824,"tid":7,"ts":125.000,"bp":"e","id":2}
{"ph":"s","name":"launch","cat":"launch","pid":42,"tid":42,"ts":140.000,"id":3}
{"ph":"f","name":"launch","cat":"launch","pid":1073741824,"tid":7,"ts":121.000,"bp":"e","id":3}
{"ph":"X","name":"lonely","cat":"task","pid":42,"tid":42,"ts":102.000,"dur":1.000,"bind_id":5,"flow_out":true}
{"ph":"X","name":"orphan","cat":"task","pid":42,"tid":44,"ts":102.000,"dur":1.000,"bind_id":6,"flow_in":true}
{"ph":"X","name":"early","cat":"task","pid":42,"tid":45,"ts":103.000,"dur":1.000,"bind_id":8,"flow_in":true}
{"ph":"X","name":"late","cat":"task","pid":42,"tid":43,"ts":104.000,"dur":1.000,"bind_id":8,"flow_out":true}
{"ph":"X","name":"again","cat":"task","pid":42,"tid":46,"ts":105.000,"dur":1.000,"bind_id":8,"flow_out":true}
EOF
check_bad flow flow 's "launch" ts 101.000 on (42, 42): a flow arrow with only its start' \
	'f "launch" ts 125.000 on (1073741824, 7): a flow arrow with only its end' \
	's "launch" ts 140.000 on (42, 42): the arrow starts at 140.000, after its end at 121.000' \
	"s \"launch\" ts 140.000 on (42, 42): the arrow's end is on no slice of its track" \
	'X "orphan" ts 102.000 dur 1.000 on (42, 44): a flow arrow with only its end' \
	'X "late" ts 104.000 dur 1.000 on (42, 43): the arrow starts at 104.000, after its end at 103.000' \
	'X "again" ts 105.000 dur 1.000 on (42, 46): a second flow_out with this bind_id'
summary_is flow "7 violations (flow 7)"

# timestamps out of the order the format promises (B/E in time order per track)
trace order <<'EOF'
{"ph":"B","name":"a","pid":42,"tid":42,"ts":200.000}
{"ph":"E","name":"a","pid":42,"tid":42,"ts":190.000}
{"ph":"B","name":"b","pid":42,"tid":42,"ts":300.000}
{"ph":"B","name":"c","pid":42,"tid":42,"ts":250.000}
{"ph":"E","name":"c","pid":42,"tid":42,"ts":310.000}
{"ph":"E","name":"b","pid":42,"tid":42,"ts":320.000}
{"ph":"X","name":"x late","cat":"range","pid":42,"tid":42,"ts":50.000,"dur":1.000}
EOF
check_bad order order 'E "a" ts 190.000 on (42, 42): before the previous B/E of its track (at 200.000)' \
	'B "c" ts 250.000 on (42, 42): before the previous B/E of its track (at 300.000)'
# (c and b, started out of order, then overlap without nesting)
summary_is order "3 violations (order 2, nesting 1)"

trace counter <<'EOF'
{"ph":"C","name":"mem","cat":"mem","pid":42,"tid":42,"ts":1.000,"args":{"bytes":"12"}}
{"ph":"C","name":"none","cat":"mem","pid":42,"tid":42,"ts":2.000,"args":{}}
{"ph":"C","name":"noargs","cat":"mem","pid":42,"tid":42,"ts":3.000}
{"ph":"C","name":"nul","cat":"mem","pid":42,"tid":42,"ts":4.000,"args":{"a":1,"b":null}}
{"ph":"C","name":"ok","cat":"mem","pid":42,"tid":42,"ts":5.000,"args":{"a":1,"b":2.5}}
EOF
check_bad counter counter "C \"mem\" ts 1.000 on (42, 42): value 'bytes' is not a number" \
	'C "none" ts 2.000 on (42, 42): a counter without values' 'C "noargs" ts 3.000 on (42, 42): a counter without values' \
	"C \"nul\" ts 4.000 on (42, 42): value 'b' is not a number"
summary_is counter "4 violations (counter 4)"

trace event <<'EOF'
{"ph":"X","name":"nots","cat":"x","pid":42,"tid":42,"dur":1}
{"ph":"X","name":"negdur","cat":"x","pid":42,"tid":42,"ts":1,"dur":-1}
{"ph":"X","name":"strpid","cat":"x","pid":"42","tid":42,"ts":1,"dur":1}
{"ph":"X","name":"negts","cat":"x","pid":42,"tid":42,"ts":-5,"dur":1}
{"ph":"Q","name":"unknown","pid":42,"tid":42,"ts":1}
{"name":"noph","pid":42,"tid":42,"ts":1}
{"ph":"i","pid":42,"tid":42,"ts":1,"s":"t"}
[1,2]
EOF
check_bad event event 'X "nots" dur 1 on (42, 42): no ts' 'X "negdur" ts 1 dur ? on (42, 42): X without a dur >= 0' \
	'X "strpid" ts 1 dur 1 on (0, 42): pid is not an integer' 'X "negts" ts ? dur 1 on (42, 42): ts is not a number >= 0' \
	'Q "unknown" ts 1 on (42, 42): unknown ph' '(no ph) "noph" ts 1 on (42, 42): no ph' 'i ts 1 on (42, 42): no name' \
	'event 8: not an object'

{ sed '$d' "$WORK/good.json"; printf '"otherData":{"events":26}}\n'; } >"$WORK/meta.json"
check_bad meta metadata "otherData.events is 26, the file holds 25 events"

# stacks: events name their stack in stackFrames by sf (a number or its string), before or
# after traceEvents; sf naming no frame, a parent that is not a frame, a frame without a
# name, a frame twice, parents in a cycle
cat >"$WORK/stacks.json" <<'EOF'
{"stackFrames":{"1":{"name":"main"},"2":{"name":"train_step","parent":"1"},"3":{"name":"k","parent":2}},
"traceEvents":[
{"ph":"i","name":"cpu sample","cat":"cpu","pid":42,"tid":42,"ts":1,"s":"t","sf":2},
{"ph":"i","name":"launch","cat":"launch","pid":42,"tid":42,"ts":2,"s":"t","sf":"3"}
],
"other":{"stackFrames":{"4":{}}},"displayTimeUnit":"ns"}
EOF
"$XPUSUP" check "$WORK/stacks.json" >"$WORK/stacks.out" 2>&1
ok $? "stacks: sf as a number and as a string, stackFrames before the events, parents both ways: clean ($(said "$WORK/stacks.out"))"
cat >"$WORK/stacks_bad.json" <<'EOF'
{"traceEvents":[
{"ph":"i","name":"lost","cat":"cpu","pid":42,"tid":42,"ts":1,"s":"t","sf":9},
{"ph":"i","name":"orphan","cat":"cpu","pid":42,"tid":42,"ts":2,"s":"t","sf":"5"},
{"ph":"i","name":"lost again","cat":"cpu","pid":42,"tid":42,"ts":3,"s":"t","sf":"9"},
{"ph":"i","name":"not an id","cat":"cpu","pid":42,"tid":42,"ts":4,"s":"t","sf":{"id":1}}
],
"stackFrames":{
"1":{"name":"main"},
"5":{"name":"orphan","parent":"7"},
"6":{"parent":"1"},
"1":{"name":"main again"},
"10":{"name":"a","parent":"11"},
"11":{"name":"b","parent":"12"},
"12":{"name":"c","parent":"10"},
"13":{"name":"d","parent":"12"},
"14":[]},
"displayTimeUnit":"ns"}
EOF
check_bad stacks_bad stack 'i "lost" ts 1 on (42, 42): its sf "9" names no frame of stackFrames' \
	'stackFrames "5": its parent "7" is not a frame' 'stackFrames "6": no name' \
	'stackFrames "1" is there twice' 'stackFrames "10": its parents lead back to it (a cycle)' \
	'stackFrames "14" is not an object' 'i "not an id" ts 4 on (42, 42): sf is not an id'
summary_is stacks_bad "7 violations (stack 7)"
printf '{"traceEvents":[{"ph":"i","name":"a","pid":1,"tid":1,"ts":1,"s":"t","sf":1}],"stackFrames":[]}' >"$WORK/stacks_none.json"
check_bad stacks_none stack 'stackFrames is not an object' \
	'i "a" ts 1 on (1, 1): its sf "1" names no frame of stackFrames'

# --max and --quiet print less; the summary counts everything
for i in $(seq 1 50); do
	echo "{\"ph\":\"C\",\"name\":\"c$i\",\"pid\":1,\"tid\":1,\"ts\":$i,\"args\":{}}"
done | trace many
"$XPUSUP" check --max 3 "$WORK/many.json" >"$WORK/many.out"
[ $? = 1 ] && [ "$(grep -c ': counter: ' "$WORK/many.out")" = 3 ]
ok $? "--max 3: 3 lines of 50 violations"
summary_is many "50 violations (counter 50)"
[ "$("$XPUSUP" check --quiet "$WORK/many.json" "$WORK/good.json" | wc -l)" = 2 ]
ok $? "--quiet: one summary line a file"
"$XPUSUP" check "$WORK/good.json" "$WORK/many.json" >/dev/null 2>&1
[ $? = 1 ]
ok $? "two files: the worse exit status (1)"

# ---- not a trace, or not JSON: 111 with the byte offset ------------------------------------
size=$(stat -c %s "$WORK/good.json")
head -c $((size / 2)) "$WORK/good.json" >"$WORK/truncated.json"
check_invalid truncated "unexpected end of file at byte $((size / 2))"
printf '{"traceEvents":[{"ph":"i","name":"a","pid":1,"tid":1,"ts":1,"s":"t"},]}' >"$WORK/comma.json"
check_invalid comma "expected a value at byte 69"
printf '{"traceEvents":[{"ph":"C","name":"a","pid":1,"tid":1,"ts":1,"args":{"v":NaN}}]}' >"$WORK/nan.json"
check_invalid nan "expected a value at byte 72"
printf '{"traceEvents":[{"ph":"i","name":"\xc3\x28","pid":1,"tid":1,"ts":1}]}' >"$WORK/utf8.json"
check_invalid utf8 "invalid UTF-8 at byte 35"
printf '{"traceEvents":[{"ph":"i","name":"\xed\xa0\x80","pid":1,"tid":1,"ts":1}]}' >"$WORK/surrogate.json"
check_invalid surrogate "invalid UTF-8 at byte 35"
printf '{"traceEvents":[{"ph":"i","name":"a\tb","pid":1,"tid":1,"ts":1}]}' >"$WORK/control.json"
check_invalid control "control character in a string at byte 35"
printf '{"traceEvents":[{"ph":"i","name":"a","pid":01,"tid":1,"ts":1}]}' >"$WORK/zero.json"
check_invalid zero "a number with a leading zero at byte 44"
"$PY" -c "print('{\"traceEvents\":[{\"args\":' + '[' * 100000 + ']' * 100000 + '}]}')" >"$WORK/deep.json"
check_invalid deep "nesting deeper than 256 at byte"
"$PY" -c "print('{\"traceEvents\":[{\"ph\":\"i\",\"name\":\"' + 'x' * 50000000 + '\",\"pid\":1,\"tid\":1,\"ts\":1,\"s\":\"t\"}]}')" >"$WORK/long.json"
"$XPUSUP" check "$WORK/long.json" >"$WORK/long.out" 2>&1
ok $? "long: a 50 MB name is read, kept in part ($(said "$WORK/long.out"))"
printf '{"traceEvents":[]} {}' >"$WORK/after.json"
check_invalid after "data after the end of the JSON text at byte 19"
: >"$WORK/empty.json"
check_invalid empty "unexpected end of file at byte 0"
printf '{"otherData":{}}' >"$WORK/notrace.json"
check_invalid notrace "not a trace: no traceEvents array"
printf '{"traceEvents":{}}' >"$WORK/notarray.json"
check_invalid notarray "traceEvents is not an array at byte 15"
"$XPUSUP" check "$WORK" >"$WORK/dir.out" 2>&1
[ $? = 111 ] && grep -q "not a regular file" "$WORK/dir.out"
ok $? "a folder: exit 111 ($(said "$WORK/dir.out"))"
"$XPUSUP" check "$WORK/nonexistent.json" >"$WORK/nofile.out" 2>&1
[ $? = 111 ] && grep -q "No such file" "$WORK/nofile.out"
ok $? "no such file: exit 111 ($(said "$WORK/nofile.out"))"

# ---- fuzz: every truncation, and random mutations judged against Python's json --------------
"$PY" - "$XPUSUP" "$WORK/good.json" "$WORK/fuzz" >"$WORK/fuzz.out" 2>&1 <<'PYEOF'
import json, os, random, subprocess, sys

xpusup, good, folder = sys.argv[1:4]
os.makedirs(folder, exist_ok=True)
data = open(good, "rb").read()
random.seed(4)


def judge(blob):
    """What Python's strict json says: 'trace', 'json' (not a trace) or 'invalid'."""
    def no_constant(name):
        raise ValueError(name)
    try:
        doc = json.loads(blob.decode("utf-8"), parse_constant=no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "invalid"
    if isinstance(doc, list) or (isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)):
        return "trace"
    return "json"


def run(blob, n):
    path = os.path.join(folder, f"f{n}.json")
    with open(path, "wb") as f:
        f.write(blob)
    r = subprocess.run([xpusup, "check", "--quiet", path], capture_output=True)
    if r.returncode not in (0, 1, 111) or b"Sanitizer" in r.stderr or b"runtime error" in r.stderr:
        print(f"CRASH {path}: exit {r.returncode}: {r.stderr[-300:]!r}")
        return None
    os.unlink(path)
    return r.returncode


bad = 0
# every proper prefix is invalid JSON: 111
end = data.rindex(b"}") + 1
for i in range(0, end):
    rc = run(data[:i], i)
    if rc != 111:
        print(f"prefix of {i} bytes: exit {rc}, want 111")
        bad += 1
# random mutations: 111 exactly when Python's json says it is not JSON or not a trace
tokens = [b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\u", b"\xff", b"\xc3", b"\xed\xa0\x80",
          b"-", b"0", b"1e", b".", b"null", b"true", b"NaN", b" ", b"\x00", b"\n", b'"ph":"X"',
          b'"ts":', b'"dur":-1', b'"args":{', b'"id":1', b'"ph":"f"', b'"ph":"B"', b'"ph":"E"']
for n in range(1500):
    blob = bytearray(data)
    for _ in range(random.randint(1, 4)):
        op = random.random()
        i = random.randrange(len(blob))
        if op < 0.3:
            blob[i] = random.randrange(256)
        elif op < 0.6:
            blob[i:i] = random.choice(tokens)
        elif op < 0.8:
            del blob[i:i + random.randint(1, 20)]
        else:
            j = random.randrange(len(blob))
            blob[i:i] = blob[j:j + random.randint(1, 200)]
    blob = bytes(blob)
    rc = run(blob, 100000 + n)
    want = judge(blob)
    if rc is None or (rc == 111) != (want != "trace"):
        bad += 1
        path = os.path.join(folder, f"f{100000 + n}.json")
        with open(path, "wb") as f:
            f.write(blob)
        print(f"mutation {n}: exit {rc}, Python's json says {want} ({path})")
print(f"{end} prefixes and 1500 mutations: {bad} wrong")
sys.exit(1 if bad else 0)
PYEOF
ok $? "fuzz: every truncation exits 111, 1500 mutations never crash and exit 111 exactly when Python's json rejects them ($(tail -c 400 "$WORK/fuzz.out" | tr '\n' ' '))"

# ---- real sessions: the timeline sink's traces ---------------------------------------------
run_session() { # run_session NAME COUNT LAUNCHES_PER_S [EXTRA SOURCE KEYS]
	local s="$PREFIX-$1"
	{
		printf '[sink trace]\nkind = timeline\npath = %s/trace.json\n' "$1"
		printf '[correlator]\nshards = 2\nexit_grace_ms = 200\nttl_ms = 300\n'
		printf '[source syn]\nkind = synthetic\nprocesses = 4\nlaunches_per_s = %s\ncount = %s\nanswer_frame = no\n%s\n' \
			"$3" "$2" "${4:-}"
	} >"$WORK/$1.conf"
	"$XPUSUP" start "$WORK/$1.conf" --session "$s" >/dev/null 2>&1 &&
		wait_for 120 "$s" "c('syn', 'launches') == $2 and sum_('pending') == 0 and c('trace', 'events_in') == c('syn', 'records_out')" &&
		"$XPUSUP" stop --session "$s" >/dev/null 2>&1 && [ -s "$WORK/$1/trace.json" ]
}

run_session paced 2400 2000
ok $? "paced: a synthetic session writes trace.json"
"$XPUSUP" check "$WORK/paced/trace.json" >"$WORK/paced.out" 2>&1
ok $? "paced: xpusup check finds it clean ($(tail -n 1 "$WORK/paced.out"))"
"$PY" "$TIMELINE_CHECK" "$WORK/paced/trace.json" --nesting >"$WORK/paced.py" 2>&1
ok $? "paced: so does timeline_check.py ($(tail -n 1 "$WORK/paced.py"))"
"$PY" - "$WORK/paced.py" "$WORK/paced.out" <<'PYEOF'
import json, re, sys
py = json.loads(open(sys.argv[1]).read().splitlines()[-1])
ours = open(sys.argv[2]).read().splitlines()[-1]
m = re.search(r": (\d+) events, \d+ tracks \((\d+) on GPU streams\), \d+ slices, (\d+) flows", ours)
sys.exit(0 if m and [int(x) for x in m.groups()] == [py["events"], py["gpu_tracks"], py["flows"]] else 1)
PYEOF
ok $? "paced: both readers count the same events, GPU stream tracks and flows"

run_session flat 30000 0 "reorder = 4096
missing_launch_pct = 5"
ok $? "flat out: a synthetic session, GPU records reordered, some launches missing"
"$XPUSUP" check "$WORK/flat/trace.json" >"$WORK/flat.out" 2>&1
ok $? "flat out: xpusup check finds it clean ($(tail -n 1 "$WORK/flat.out"))"

# a violation put into the real trace: a kernel written twice overlaps itself on its stream
"$PY" - "$WORK/paced/trace.json" "$WORK/dup.json" <<'PYEOF'
import sys
lines = open(sys.argv[1]).read().split("\n")
k = next(i for i, l in enumerate(lines) if '"cat":"kernel"' in l and '"dur":0.000' not in l)
lines.insert(k + 1, lines[k])
open(sys.argv[2], "w").write("\n".join(lines))
PYEOF
check_bad dup stream-overlap "work on one GPU stream overlaps"
summary_is dup "2 violations (stream-overlap 1, metadata 1)"

# reads split anywhere: the paced trace shifted by 0..299 bytes past its 1 MiB read
# boundaries (every kind of token split between two reads) gives the same answer
want=$(tail -n 1 "$WORK/paced.out" | sed 's/^[^:]*: //')
bad=""
for k in $(seq 0 299); do
	{ head -c "$k" /dev/zero | tr '\0' ' '; cat "$WORK/paced/trace.json"; } >"$WORK/shift.json"
	got=$("$XPUSUP" check --quiet "$WORK/shift.json" 2>&1 | sed 's/^[^:]*: //')
	[ "$got" = "$want" ] || bad="$bad $k"
done
[ -z "$bad" ]
ok $? "reads split anywhere: 300 shifts give the same clean summary${bad:+ (not:$bad)}"

echo "1..$n"
[ $failed = 0 ]
