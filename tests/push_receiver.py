#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A stand-in for a Pyroscope /ingest endpoint, for actors/sink/push_test.c (loopback only).

    push_receiver.py PORT_FILE LOG BODIES [PORT]

Listens on 127.0.0.1:PORT (0: any free port) and writes the port to PORT_FILE once it
listens. Each POST is one line of LOG, tab-separated:

    N STATUS LENGTH SHA256 CONTENT_TYPE PATH NAME FROM UNTIL FORMAT KEYS TENANT

(STATUS 0: the request was left hanging; KEYS: the query's parameter names, sorted, joined by
commas, a parameter given twice shows twice; TENANT: the X-Scope-OrgID header, - for none). The body of every accepted request is kept as
BODIES/N.body, for a byte-for-byte comparison.

The test switches the mode with GET /control?mode=MODE&n=N[&sleep=S]: the next N requests
(-1: all of them) are answered so, then the receiver accepts again:
    accept  200
    refuse  500, as a server in trouble
    reject  400, as a server that will never take this body
    slow    nothing for S seconds (past the client's timeout), then 503
    busy    429 with Retry-After: S
"Gone" is the test killing this process. It exits by itself after 300 s in any case.
"""
import hashlib
import http.server
import os
import sys
import threading
import urllib.parse

LOCK = threading.Lock()
STATE = {"mode": "accept", "n": 0, "sleep": 3.0, "seq": 0}


def take_mode():
    with LOCK:
        STATE["seq"] += 1
        mode = STATE["mode"]
        if mode != "accept":
            if STATE["n"] > 0:
                STATE["n"] -= 1
                if STATE["n"] == 0:
                    STATE["mode"] = "accept"
        return STATE["seq"], mode, STATE["sleep"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server: the client reuses it

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, text, retry_after=None):
        body = text.encode()
        self.send_response(status)
        if retry_after is not None:
            self.send_header("Retry-After", "%d" % retry_after)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/control":
            self.reply(404, "no such page")
            return
        q = urllib.parse.parse_qs(url.query)
        with LOCK:
            STATE["mode"] = q.get("mode", ["accept"])[0]
            STATE["n"] = int(q.get("n", ["-1"])[0])
            STATE["sleep"] = float(q.get("sleep", ["3"])[0])
        self.reply(200, "ok")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        url = urllib.parse.urlsplit(self.path)
        pairs = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        q = dict(pairs)
        seq, mode, sleep = take_mode()
        status = {"accept": 200, "refuse": 500, "reject": 400, "slow": 0, "busy": 429}[mode]
        fields = [
            str(seq), str(status), str(len(body)), hashlib.sha256(body).hexdigest(),
            self.headers.get("Content-Type", "-"), url.path, q.get("name", "-"),
            q.get("from", "-"), q.get("until", "-"), q.get("format", "-"),
            ",".join(sorted(k for k, _ in pairs)), self.headers.get("X-Scope-OrgID", "-"),
        ]
        if status == 200:
            with open(os.path.join(BODIES, "%d.body" % seq), "wb") as f:
                f.write(body)
        with LOCK:
            with open(LOG, "a") as f:
                f.write("\t".join(fields) + "\n")
        try:
            if mode == "slow":
                threading.Event().wait(sleep)
                self.reply(503, "too late")
            elif status == 200:
                self.reply(200, "")
            elif status == 500:
                self.reply(500, "refused by the test")
            elif status == 429:
                self.reply(429, "slow down", retry_after=sleep)
            else:
                self.reply(400, "bad profile\nsecond line")
        except OSError:
            pass  # the client gave up first


def main():
    global LOG, BODIES
    port_file, LOG, BODIES = sys.argv[1:4]
    port = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    limit = threading.Timer(300, os._exit, args=(0,))
    limit.daemon = True
    limit.start()
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
