#!/usr/bin/env python3
"""Bad clients against the metrics sink's HTTP server (tests/metrics_test.sh), loopback only.

Usage: metrics_http.py PORT TIMEOUT_S MAX_CLIENTS

Prints one TAP-style line per check ("ok - TEXT" or "not ok - TEXT"); the shell test counts
them. Every socket has a timeout and every loop a bound: nothing here can hang the test.
"""
import socket
import sys
import threading
import time

PORT = int(sys.argv[1])
TIMEOUT_S = float(sys.argv[2])
MAX_CLIENTS = int(sys.argv[3])
ADDR = ("127.0.0.1", PORT)


def say(cond, text):
    print(("ok - " if cond else "not ok - ") + text, flush=True)


def exchange(data, wait=5.0):
    """Send data, read until the server closes; the reply's bytes (b'' on a reset)."""
    s = socket.create_connection(ADDR, timeout=wait)
    try:
        s.sendall(data)
        out = b""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


def status_of(reply):
    line = reply.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def scrape(wait=2.0):
    """A normal scrape: (seconds it took, status, headers, body)."""
    t0 = time.monotonic()
    r = exchange(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n\r\n", wait)
    took = time.monotonic() - t0
    head, _, body = r.partition(b"\r\n\r\n")
    return took, status_of(r), head, body


# ---- the plain cases -------------------------------------------------------------------------
took, code, head, body = scrape()
say(code == 200 and b"Content-Type: text/plain; version=0.0.4; charset=utf-8" in head,
    "a scrape: 200 with the text format's Content-Type")
length = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
say(length and int(length[0].split(b":")[1]) == len(body) and body.endswith(b"\n"),
    "a scrape: Content-Length is the body's, which ends in a line feed")
r = exchange(b"HEAD /metrics HTTP/1.0\r\n\r\n")
say(status_of(r) == 200 and r.endswith(b"\r\n\r\n"), "HEAD: 200, headers only")
r = exchange(b"HEAD /nowhere HTTP/1.0\r\n\r\n")
say(status_of(r) == 404 and r.endswith(b"\r\n\r\n"), "HEAD of an unknown path: 404, headers only")
r = exchange(b"GET /metrics?x=1 HTTP/1.1\r\n\r\n")
say(status_of(r) == 200, "a query string is ignored: 200")
for req, want, what in (
        (b"GARBAGE\r\n\r\n", 400, "a request line of one word"),
        (b"GET /metrics HTTP/2.0\r\n\r\n", 400, "another HTTP version"),
        (b"GET metrics HTTP/1.1\r\n\r\n", 400, "a target without '/'"),
        (b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", 400, "a header line without ':'"),
        (b"\x00\x01\x02\xff GET\r\n\r\n", 400, "binary bytes"),
        (b"GET /nope HTTP/1.1\r\n\r\n", 404, "an unknown path"),
        (b"GET / HTTP/1.1\r\n\r\n", 404, "the root"),
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405, "POST"),
        (b"DELETE /metrics HTTP/1.1\r\n\r\n", 405, "DELETE"),
        (b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431,
         "headers over the bound")):
    r = exchange(req)
    say(status_of(r) == want, f"{what}: {want} (got {status_of(r)})")
r = exchange(b"POST /metrics HTTP/1.1\r\n\r\n")
say(b"Allow: GET, HEAD" in r, "405 says which methods are allowed")

# ---- a slowloris: a byte now and then, never a whole request --------------------------------
slow = socket.create_connection(ADDR, timeout=1)
slow.sendall(b"GET /metrics HTTP/1.1\r\n")
closed_at = [None]
t_slow = time.monotonic()


def dribble():
    for _ in range(int(4 * TIMEOUT_S) + 8):  # bounded: past the server's timeout
        try:
            slow.sendall(b"X")
            time.sleep(0.25)
            slow.setblocking(False)
            try:
                if slow.recv(4096) == b"":
                    closed_at[0] = time.monotonic()
                    return
            except BlockingIOError:
                pass
            finally:
                slow.setblocking(True)
        except OSError:  # reset or broken pipe: closed
            closed_at[0] = time.monotonic()
            return


th = threading.Thread(target=dribble)
th.start()
time.sleep(0.5)
took, code, _, _ = scrape()
say(code == 200 and took < 1.0, f"a scrape while a slowloris dribbles: 200 in {took:.3f} s")
th.join(timeout=4 * TIMEOUT_S + 15)
slow.close()
ended = closed_at[0]
say(ended is not None and ended - t_slow < TIMEOUT_S + 2.0,
    f"the slowloris is closed after the timeout ({TIMEOUT_S} s): "
    f"{'never' if ended is None else f'{ended - t_slow:.2f} s'}")

# ---- many connections at once ---------------------------------------------------------------
idle = []
for _ in range(4 * MAX_CLIENTS):
    try:
        idle.append(socket.create_connection(ADDR, timeout=1))
    except OSError:
        pass
time.sleep(0.3)
took, code, _, _ = scrape()
say(code == 200 and took < 1.0,
    f"a scrape after {len(idle)} idle connections (max_clients {MAX_CLIENTS}): 200 in {took:.3f} s")


def one(results, i):
    try:
        results[i] = scrape(5.0)[1]
    except OSError:
        results[i] = None


results = [None] * (2 * MAX_CLIENTS)
threads = [threading.Thread(target=one, args=(results, i)) for i in range(len(results))]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=15)
say(all(r == 200 for r in results), f"{len(results)} scrapes at once, all 200: {results}")
for s in idle:
    s.close()
took, code, _, _ = scrape()
say(code == 200, "the server still serves after all that")
