#!/bin/bash
# The metrics sink's HTTP server when replies really stall (docs/fleet.md, "The HTTP server"):
# every slot is held by a client that asked for the page and never reads it, and a scraper
# comes. TAP on stdout.
#
# On plain loopback no reply stalls: the kernel's send buffer grows to megabytes and takes the
# whole page at once. So the test runs in a network namespace of its own (unshare -n, root),
# where net.ipv4.tcp_wmem and tcp_rmem are the namespace's: 4 KiB there, and a page of about
# 70 KiB (200 processes' series). The session runs in that namespace too (its folders are in
# the file system, shared); the clients are Python sockets with a small SO_RCVBUF.
#
# max_clients (4) clients send a GET and never read: their replies stall (a few KiB in flight).
# A scraper that connects 0.2 s later must wait: no reply has waited 1 s (REPLY_GRACE_NS), so
# none may be closed for it; it gets its page no sooner than 1 s after the stalled requests,
# and within 3 s of them, far below timeout_ms (30 s), which is what it would wait without
# the eviction. The oldest stalled client's reply is cut, the others get their whole pages
# once they read; the sink counts exactly one client evicted, none timed out.
#
# Usage: metrics_stall_test.sh XPUSUP_BINARY
set -u
XPUSUP=${1:?usage: metrics_stall_test.sh XPUSUP_BINARY}
if [ -z "${XPUSUP_STALL_NETNS:-}" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "1..0 # SKIP needs root for a network namespace of its own (unshare -n)"
		exit 77
	fi
	if ! err=$(unshare -n true 2>&1); then
		echo "1..0 # SKIP unshare -n is refused here: $err"
		exit 77
	fi
	# the namespace we leave, so that the run inside can tell it is elsewhere
	XPUSUP_STALL_NETNS=$(readlink /proc/self/ns/net) exec unshare -n "$BASH" "$0" "$@"
fi
# the sysctls below must never be the host's
if [ "$(readlink /proc/self/ns/net)" = "$XPUSUP_STALL_NETNS" ]; then
	echo "1..1"
	echo "not ok 1 - not in a network namespace of its own: XPUSUP_STALL_NETNS from outside?"
	exit 1
fi
. "$(dirname "$0")/session_lib.sh"
session_lib_init metricsstall ms

# ---- the namespace: loopback up, small TCP buffers ------------------------------------------
if command -v ip >/dev/null 2>&1; then
	ip link set lo up 2>"$WORK/ip.err"
else # SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP
	"$PY" -c 'import fcntl, socket, struct
s = socket.socket()
name, flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0))[:18])
fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))' 2>"$WORK/ip.err"
fi
ok $? "namespace: loopback is up ($(head -c 200 "$WORK/ip.err"))"
echo "4096 4096 4096" >/proc/sys/net/ipv4/tcp_wmem &&
	echo "4096 4096 4096" >/proc/sys/net/ipv4/tcp_rmem
ok $? "namespace: tcp_wmem and tcp_rmem are 4 KiB: $(tr '\t' ' ' </proc/sys/net/ipv4/tcp_wmem), $(tr '\t' ' ' </proc/sys/net/ipv4/tcp_rmem)"

MAX_CLIENTS=4
s="$PREFIX-s"
PORT=$(free_port)
{
	printf '[sink m]\nkind = metrics\nlisten = 127.0.0.1:%s\n' "$PORT"
	printf 'max_clients = %s\ntimeout_ms = 30000\ntop_processes = 1000\n' "$MAX_CLIENTS"
	# 200 processes: about 70 KiB of page, far more than the few KiB a stalled client holds
	synthetic 1000000 | sed -e 's/^launches_per_s = 0$/launches_per_s = 2000/' \
		-e 's/^processes = .*/processes = 200/'
} >"$WORK/s.conf"
"$XPUSUP" start "$WORK/s.conf" --session "$s" >/dev/null 2>"$WORK/start.err"
ok $? "a session with a metrics sink starts in the namespace ($(head -c 200 "$WORK/start.err"))"
# every process has been seen (its CPU samples): the page is at its size
wait_for 20 "$s" "c('m', 'series') > 800"
ok $? "the page has its series: $(json "$s" "c('m', 'series')")"

"$PY" - "$PORT" "$MAX_CLIENTS" >"$WORK/stall.tap" 2>&1 <<'PYEOF'
import fcntl, re, socket, struct, sys, termios, time

ADDR = ("127.0.0.1", int(sys.argv[1]))
MAX_CLIENTS = int(sys.argv[2])
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
SAMPLE = re.compile(rb'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [0-9.e+-]+$')


def say(cond, text):
    print(("0 " if cond else "1 ") + text, flush=True)


def scrape(s, wait):
    """Read a reply to the end (bounded by wait); (status, headers, body) or None."""
    s.settimeout(wait)
    deadline = time.monotonic() + wait
    out = b""
    while time.monotonic() < deadline:
        try:
            d = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            return None
        if not d:
            break
        out += d
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    hdr = dict(l.split(b": ", 1) for l in lines[1:] if b": " in l)
    return lines[0], hdr, body


def whole_page(r):
    """A 200 with its whole body, every line a comment or a sample."""
    if not r or r[0] != b"HTTP/1.1 200 OK":
        return False
    _, hdr, body = r
    return (int(hdr.get(b"Content-Length", b"-1")) == len(body) and body.endswith(b"\n")
            and b"xpusup_actor_up{" in body and b"xpusup_process_info{" in body
            and all(l.startswith(b"# ") or SAMPLE.match(l) for l in body.split(b"\n")[:-1]))


# a normal scrape first: the page's size
n = socket.create_connection(ADDR, timeout=5)
n.sendall(REQUEST)
r = scrape(n, 5)
n.close()
size = len(r[2]) if r else 0
say(whole_page(r) and size > 50000, f"a scrape before: the whole page, {size} bytes")

# max_clients clients that ask and never read
stuck = []
t0 = time.monotonic()
for i in range(MAX_CLIENTS):
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    c.settimeout(5)
    c.connect(ADDR)
    c.sendall(REQUEST)
    stuck.append(c)

# 0.2 s later a scraper: no slot is free, no reply has waited 1 s
time.sleep(0.2)
a = socket.create_connection(ADDR, timeout=5)
a.sendall(REQUEST)
time.sleep(0.6)  # 0.8 s after the stalled requests: still none may be closed
inq = [struct.unpack("i", fcntl.ioctl(c, termios.FIONREAD, b"\0" * 4))[0] for c in stuck]
say(all(q < size // 4 for q in inq),
    f"the {MAX_CLIENTS} clients that never read hold their replies stalled: "
    f"{inq} bytes of {size} arrived")
tp = time.monotonic() - t0
a.setblocking(False)
try:
    early = a.recv(1, socket.MSG_PEEK)  # a byte, or b"": the server closed it
except BlockingIOError:
    early = None
if tp < 1.0:
    say(early is None, f"{tp:.3f} s after them the scraper is not served yet (no reply has "
        "waited 1 s)")
else:  # this script was held up: nothing to tell from it (the first byte's time below does)
    say(True, f"the scraper not served yet # SKIP looked {tp:.3f} s late (a busy machine)")
a.settimeout(10)
try:
    a.recv(1, socket.MSG_PEEK)
    first = time.monotonic() - t0
except socket.timeout:
    first = 99.0
r = scrape(a, 10)
took = time.monotonic() - t0
a.close()
say(whole_page(r), "the scraper then gets the whole page")
# the server's clock is this one (CLOCK_MONOTONIC), and the stalled replies started after t0
say(1.0 <= first and took <= 3.0,
    f"... its first byte {first:.3f} s after the stalled requests (once a reply had waited "
    f"1 s), the whole page {took:.3f} s after (not at timeout_ms, 30 s)")

# Now each stalled client reads its reply to the end: the oldest (the first to ask) was
# closed for the scraper, so its reply ends short; the others were kept, and get the whole page
# (their page: the one current when they asked, so its length is theirs, not `size`).
got = []
for i, c in enumerate(stuck):
    r = scrape(c, 10)
    c.close()
    body = r[2] if r else b""
    cut = r is None or r[0] != b"HTTP/1.1 200 OK" or \
        int(r[1].get(b"Content-Length", b"-1")) != len(body)
    got.append(f"{len(body)} bytes{' (cut)' if cut else ''}")
    if i:
        say(not cut and whole_page(r), f"stalled client {i} was kept: its whole page at last")
    else:
        say(cut, "stalled client 0, the oldest, was closed for the scraper: its reply is cut")
print("# the stalled clients' replies: " + ", ".join(got), flush=True)
PYEOF
# the Python checks ("0 TEXT" passed, "1 TEXT" failed, "# TEXT" a note) as TAP lines of ours
while read -r rc text; do
	if [ "$rc" = "#" ]; then echo "# $text"; else ok "$rc" "$text"; fi
done <"$WORK/stall.tap"
[ "$(grep -c '^[01] ' "$WORK/stall.tap")" = 9 ]
ok $? "the clients' script ran to its end"
wait_for 5 "$s" "c('m', 'clients_evicted') == 1 and c('m', 'clients_timed_out') == 0"
ok $? "the sink counts one client evicted, none timed out: $(json "$s" "{k: c('m', k) for k in ('clients_evicted', 'clients_timed_out', 'scrapes', 'connections')}")"
"$XPUSUP" stop --session "$s" >/dev/null 2>&1
log_clean "$s" "stall"

echo "1..$n"
[ "$failed" = 0 ]
