#!/bin/bash
# speedscope in headless Chromium, for tests that must show a viewer opens their files.
# Sourced after session_lib.sh (uses PY, WORK, ok, free_port); TESTS must name tests/.
#
#	speedscope_start             serves speedscope's files from $WORK/web on 127.0.0.1:$port
#				     (HTTP_PID; cleanup_extra should call speedscope_stop).
#				     Returns 1 with $SPEEDSCOPE_WHY when chromium or speedscope is
#				     missing (scripts/install-deps installs both), 2 when no server
#				     could be started.
#	speedscope_renders FILE WANT...
#				     speedscope fetches $WORK/web/FILE and its page, as headless
#				     Chromium leaves it, holds the title "FILE - speedscope" and every
#				     WANT text, and no error page. speedscope draws with WebGL after
#				     the fetch: virtual time lets that finish before the DOM is dumped;
#				     a browser start can fail, so up to 3 tries.
#	speedscope_said              what the last check found, and what Chromium said that matters
#	speedscope_missing TEXT      after speedscope_start returned 1: a failure in CI (which must
#				     have it), a skip elsewhere
#	speedscope_stop

SPEEDSCOPE="$TESTS/web/node_modules/speedscope/dist/release"
HTTP_PID=""

speedscope_start() {
	local try
	CHROMIUM=$(command -v chromium || command -v chromium-browser)
	if [ -z "$CHROMIUM" ] || [ ! -f "$SPEEDSCOPE/index.html" ]; then
		SPEEDSCOPE_WHY="needs chromium and speedscope: run scripts/install-deps"
		return 1
	fi
	mkdir -p "$WORK/web"
	cp -r "$SPEEDSCOPE/." "$WORK/web/" || return 2
	port=""
	for try in 1 2 3; do # a port another process takes between the pick and the bind
		port=$(free_port)
		"$PY" -m http.server "$port" --bind 127.0.0.1 --directory "$WORK/web" >"$WORK/http.log" 2>&1 &
		HTTP_PID=$!
		"$PY" - "$port" <<'PYEOF' && return 0
import sys, time, urllib.request
for _ in range(100):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/index.html", timeout=1).read()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PYEOF
		kill "$HTTP_PID" 2>/dev/null
		HTTP_PID=""
	done
	return 2
}

speedscope_stop() {
	[ -n "$HTTP_PID" ] && kill "$HTTP_PID" 2>/dev/null
	HTTP_PID=""
}

speedscope_renders() {
	local file=$1 try
	shift
	for try in 1 2 3; do
		rm -rf "$WORK/chrome"
		timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --enable-unsafe-swiftshader \
			--disable-dev-shm-usage --no-first-run --user-data-dir="$WORK/chrome" \
			--window-size=1400,900 --virtual-time-budget=20000 --dump-dom \
			"http://127.0.0.1:$port/index.html#profileURL=http%3A%2F%2F127.0.0.1%3A$port%2F$file&view=sandwich" \
			>"$WORK/dom.html" 2>"$WORK/chromium.err"
		"$PY" - "$WORK/dom.html" "$file - speedscope" "$@" >"$WORK/dom.check" 2>&1 <<'PYEOF' && return 0
import re, sys
dom = open(sys.argv[1], encoding="utf-8", errors="replace").read()
text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))
missing = [w for w in sys.argv[2:] if w not in text]
for w in ("Something went wrong", "Drag and drop a profile"):
    if w in text:
        missing.append(f"(shows {w!r})")
print("missing: " + ", ".join(missing) if missing else "rendered")
sys.exit(1 if missing else 0)
PYEOF
	done
	return 1
}

speedscope_said() {
	head -c 300 "$WORK/dom.check"
	grep -v -e dbus -e WebGL -e 'GL Driver' -e 'unexpected operator' "$WORK/chromium.err" | head -c 300
}

speedscope_missing() {
	if [ "${CI:-}" = true ]; then
		ok 1 "$1: $SPEEDSCOPE_WHY"
	else
		n=$((n + 1))
		echo "ok $n # SKIP $1: $SPEEDSCOPE_WHY"
	fi
}
