#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The wire format read and written by an independent MessagePack implementation.

Usage: /usr/bin/python3 wire_python_test.py PATH/TO/wire_dump

1. wire_dump encodes a fixed set of batches with the C encoder and writes, straight from
   its structs, a JSON sidecar of what they hold. python3-msgpack decodes each batch and
   every value is compared with the sidecar, including which keys are absent; frame names
   are looked up in the batch's symbol table, which must hold each name once.
2. Python writes batches its own way (minimal widths, other key order, an unknown key,
   float64 confidence, the symbol table before or after the events) and wire_dump decodes
   them with the C decoder; its JSON must say what Python meant. Malformed batches must be
   rejected with the documented reason.

TAP on stdout; exits 77 (skip) when python3-msgpack is missing.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

count = 0
failed = 0


def ok(cond, what):
    global count, failed
    count += 1
    if count == 1:
        print("TAP version 13")
    print(f"{'' if cond else 'not '}ok {count} - {what}")
    if not cond:
        failed += 1
    sys.stdout.flush()
    return cond


def diag(msg):
    sys.stdout.flush()
    print(f"# {msg}", file=sys.stderr)


try:
    import msgpack
except ImportError as e:
    print(f"1..0 # SKIP needs python3-msgpack for /usr/bin/python3 ({e})")
    sys.exit(77)

INT_KEYS = {"k", "id", "ts", "pid", "tid", "cpu", "end", "flags", "corr", "parent", "root",
            "ct", "dev", "ctx", "str", "graph", "node", "regs", "smem", "api", "sub",
            "bytes", "addr", "val", "delta", "nk", "cflags"}
KNOWN_KEYS = INT_KEYS | {"conf", "links", "grid", "block", "scale", "name", "stack", "frames",
                         "counters", "ipc"}


def resolve(frames, symbols):
    """An event's "frames" (indices or nil) as the sidecar writes them: hex names or None."""
    return [None if i is None else symbols[i].hex() for i in frames]


def check_event(got, want, where, symbols):
    """got: an event map from msgpack (bytes keys); want: the sidecar's object; symbols: the
    batch's symbol table."""
    keys = {k.decode() for k in got}
    if not ok(keys == set(want), f"{where}: keys {sorted(want)}"):
        diag(f"got keys {sorted(keys)}")
        return
    good = True
    for key, w in want.items():
        g = got[key.encode()]
        if key in INT_KEYS:
            same = type(g) is int and g == w
        elif key == "conf":
            same = type(g) is float and struct.pack(">f", g).hex() == w
        elif key in ("scale", "ipc"):
            same = type(g) is float and struct.pack(">d", g).hex() == w
        elif key == "counters":
            # [name, delta] pairs: the name a str (bytes), the delta a float64
            same = (type(g) is list and
                    all(type(p) is list and len(p) == 2 and type(p[0]) is bytes and
                        type(p[1]) is float for p in g) and
                    [[p[0].hex(), struct.pack(">d", p[1]).hex()] for p in g] == w)
        elif key == "name":
            same = type(g) is bytes and g.hex() == w
        elif key in ("grid", "block"):
            same = type(g) is list and len(g) == 3 and g == w
        elif key == "links":
            same = type(g) is list and [list(p) for p in g] == w
        elif key == "stack":
            same = type(g) is list and g == w
        elif key == "frames":
            same = (type(g) is list and len(g) == len(got[b"stack"])
                    and all(i is None or (type(i) is int and 0 <= i < len(symbols)) for i in g)
                    and resolve(g, symbols) == w)
        else:
            same = False
        if not same:
            diag(f"{where}: {key}: got {g!r}, want {w!r}")
            good = False
    ok(good, f"{where}: every value")


def read_batches(path):
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        out.append(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    return out


def encoded_by_c(wire_dump, tmp):
    bin_path = os.path.join(tmp, "batches.bin")
    json_path = os.path.join(tmp, "expected.json")
    r = subprocess.run([wire_dump, "encode", bin_path, json_path])
    if not ok(r.returncode == 0, "wire_dump encode ran"):
        return
    with open(json_path) as f:
        expected = json.load(f)
    raws = read_batches(bin_path)
    ok(len(raws) == len(expected), f"{len(raws)} batches, as the sidecar says")
    kinds = set()
    named = 0
    for i, (raw, want) in enumerate(zip(raws, expected)):
        b = msgpack.unpackb(raw, raw=True, strict_map_key=False)
        names = any("frames" in e for e in want["events"])
        keys = {b"v", b"producer", b"seq", b"events"} | ({b"symbols"} if names else set())
        ok(isinstance(b, dict) and set(b) == keys,
           f"batch {i}: a map of exactly {sorted(k.decode() for k in keys)}")
        ok(raw[0] == 0x80 + len(keys) and raw[1:3] == b"\xa1v",
           f"batch {i}: fixmap of {len(keys)}, \"v\" first")
        symbols = b.get(b"symbols", [])
        if names:
            named += 1
            # the encoder's own choices (docs/wire.md): the table last, after the events;
            # each name once, none empty, in the order the frames first use them
            ok(raw.rfind(b"\xa7symbols") > raw.find(b"\xa6events"),
               f"batch {i}: the symbol table after the events")
            used = []
            for e in b.get(b"events", []):
                for idx in e.get(b"frames", []):
                    if idx is not None and idx not in used:
                        used.append(idx)
            ok(all(type(n) is bytes and n for n in symbols)
               and len(set(symbols)) == len(symbols) and used == list(range(len(symbols))),
               f"batch {i}: {len(symbols)} names, each once, in order of first use")
        # the events array is always array32, its count patched in by finish()
        at = raw.find(b"\xa6events")
        ok(at > 0 and raw[at + 7] == 0xdd
           and struct.unpack_from(">I", raw, at + 8)[0] == len(want["events"]),
           f"batch {i}: events header is array32 of {len(want['events'])}")
        ok(b[b"v"] == 1 and b[b"producer"] == want["producer"] and b[b"seq"] == want["seq"],
           f"batch {i}: v 1, producer {want['producer']}, seq {want['seq']}")
        events = b[b"events"]
        if not ok(len(events) == len(want["events"]), f"batch {i}: {len(events)} events"):
            continue
        for j, (g, w) in enumerate(zip(events, want["events"])):
            kinds.add(w["k"])
            check_event(g, w, f"batch {i} event {j} (kind {w['k']})", symbols)
    ok(kinds == set(range(2, 17)), "every kind 2..16 was checked")
    ok(named > 0, "a batch with frame names was checked")
    ok(any("counters" in e and "ipc" in e and "cflags" in e
           for w in expected for e in w["events"]), "events with counters were checked")


def decoded_by_c(wire_dump, tmp):
    def c_decode(raw):
        path = os.path.join(tmp, "message.bin")
        with open(path, "wb") as f:
            f.write(raw)
        r = subprocess.run([wire_dump, "decode", path], capture_output=True, text=True)
        if r.returncode != 0:
            return {"error": "exit %d" % r.returncode}
        return json.loads(r.stdout)

    name = b"\xce\xbb kernel \xff\x00 tail"
    events = [
        # keys in an order of Python's choosing, an unknown key, conf as float64
        {b"zz-future": {b"nested": [1, 2.5, None, True]}, b"name": name,
         b"grid": [-3, 2, 1], b"block": [1024, -1, 1], b"conf": 0.25, b"ct": 2,
         b"links": [[1, 2**64 - 1], [4, 0]], b"str": 9, b"ts": 5, b"id": 2**63, b"k": 5},
        {b"stack": [1, 2**32, 2**64 - 1], b"nk": 1, b"k": 2, b"id": 1, b"ts": 0, b"cpu": 0},
        {b"scale": 1.5, b"val": 10, b"k": 10, b"id": 3, b"ts": 2**64 - 1, b"sub": 3},
    ]
    batch = {b"events": events, b"seq": 2**64 - 1, b"producer": 2**32 - 1, b"v": 1,
             b"extra": {b"a": b"b"}}
    # use_bin_type=False: bytes become MessagePack str, which is what names and keys are
    raw = msgpack.packb(batch, use_bin_type=False)
    got = c_decode(raw)
    ok("error" not in got, "C decodes a batch written by python3-msgpack")
    if "error" in got:
        diag(f"{got}")
        return
    ok(got["producer"] == 2**32 - 1 and got["seq"] == 2**64 - 1 and got["v"] == 1,
       "python batch: producer and seq at their maxima")
    want = [
        {"k": 5, "id": 2**63, "ts": 5, "ct": 2, "conf": struct.pack(">f", 0.25).hex(),
         "links": [[1, 2**64 - 1], [4, 0]], "str": 9, "grid": [-3, 2, 1],
         "block": [1024, -1, 1], "name": name.hex()},
        # "cpu": 0 was sent; zero reads as absent
        {"k": 2, "id": 1, "ts": 0, "nk": 1, "stack": [1, 2**32, 2**64 - 1]},
        {"k": 10, "id": 3, "ts": 2**64 - 1, "sub": 3, "val": 10,
         "scale": struct.pack(">d", 1.5).hex()},
    ]
    ok(len(got["events"]) == len(want), "python batch: 3 events")
    for j, (g, w) in enumerate(zip(got["events"], want)):
        same = g == w
        if not same:
            diag(f"event {j}: got {g}, want {w}")
        ok(same, f"python event {j} decoded by C as meant")

    # frame names: the symbol table before the events, shared names, nil, every index width
    syms = [b"main", "λ::f<int>(int; char)\n".encode(), b"\xff\xfe not UTF-8"]
    syms += [b"f%d" % i for i in range(3, 300)]
    ev_a = {b"k": 2, b"id": 1, b"ts": 1, b"stack": [10, 11, 12, 13], b"nk": 1,
            b"frames": [0, None, 1, 299]}
    ev_b = {b"frames": [2, 0, 200], b"stack": [20, 21, 22], b"k": 3, b"id": 2, b"ts": 2}
    ev_c = {b"k": 3, b"id": 3, b"ts": 3, b"stack": [30], b"frames": [None]}
    want_named = [
        {"k": 2, "id": 1, "ts": 1, "nk": 1, "stack": [10, 11, 12, 13],
         "frames": [syms[0].hex(), None, syms[1].hex(), syms[299].hex()]},
        {"k": 3, "id": 2, "ts": 2, "stack": [20, 21, 22],
         "frames": [syms[2].hex(), syms[0].hex(), syms[200].hex()]},
        {"k": 3, "id": 3, "ts": 3, "stack": [30]},  # nil only: no names
    ]
    for where, batch in (
            ("before", {b"symbols": syms, b"v": 1, b"producer": 5, b"seq": 0,
                        b"events": [ev_a, ev_b, ev_c]}),
            ("after", {b"v": 1, b"producer": 5, b"seq": 0, b"events": [ev_a, ev_b, ev_c],
                       b"symbols": syms})):
        got = c_decode(msgpack.packb(batch, use_bin_type=False))
        same = got.get("events") == want_named
        if not same:
            diag(f"got {got}, want {want_named}")
        ok(same, f"C decodes frame names, the symbol table {where} the events")

    # counters: deltas as float64 and float32, a name that is not UTF-8, flags and ipc
    ctr = {b"k": 5, b"id": 4, b"ts": 9, b"end": 19, b"ipc": 1.25, b"cflags": 1,
           b"counters": [[b"instructions", 2.5e9], [b"cycles", 2.0e9], [b"x\xff", 0.0]]}
    got = c_decode(msgpack.packb({b"v": 1, b"producer": 1, b"seq": 0, b"events": [ctr]},
                                 use_bin_type=False))
    want_ctr = {"k": 5, "id": 4, "ts": 9, "end": 19, "cflags": 1,
                "ipc": struct.pack(">d", 1.25).hex(),
                "counters": [[b"instructions".hex(), struct.pack(">d", 2.5e9).hex()],
                             [b"cycles".hex(), struct.pack(">d", 2.0e9).hex()],
                             [b"x\xff".hex(), struct.pack(">d", 0.0).hex()]]}
    same = got.get("events") == [want_ctr]
    if not same:
        diag(f"got {got}, want {want_ctr}")
    ok(same, "C decodes counters, cflags and ipc written by python3-msgpack")

    def bad(obj, reason, what):
        got = c_decode(msgpack.packb(obj, use_bin_type=False) if not isinstance(obj, bytes)
                       else obj)
        if not ok(got.get("error") == -74 and got.get("reason") == reason,
                  f"C rejects {what}: {reason}"):
            diag(f"got {got}")

    ev = {b"k": 5, b"id": 1, b"ts": 1}
    bad({b"v": 2, b"producer": 1, b"seq": 1, b"events": []}, "unsupported version", "v 2")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [{b"k": 5, b"ts": 1}]},
        "missing required key id", "an event without id")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [{**ev, b"conf": 1.01}]},
        "confidence outside 0..1", "conf 1.01")
    # str keys stay str, the bytes name becomes bin: what a careless producer sends
    bad(msgpack.packb({"v": 1, "producer": 1, "seq": 1,
                       "events": [{"k": 5, "id": 1, "ts": 1, "name": b"x"}]},
                      use_bin_type=True),
        "name is not a string", "a name packed as bin")
    bad(msgpack.packb({b"v": 1, b"producer": 1, b"seq": 1, b"events": [ev]},
                      use_bin_type=False)[:-1], "truncated", "a batch missing its last byte")
    bad([1, 2, 3], "batch is not a map", "an array")
    bad({b"v": 1, b"producer": 1, b"seq": 1,
         b"events": [{**ev, b"future": {b"nested": [1, [2]]}}]},
        "depth limit", "an unknown value nested 6 deep")
    named = {**ev, b"stack": [1, 2], b"frames": [0, None]}
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [{**named, b"frames": [1, None]}],
         b"symbols": [b"a"]}, "frame name index past the symbol table", "an index past the table")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [named]},
        "frame name index past the symbol table", "an index without a table")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [named], b"symbols": [7]},
        "symbol is not a string", "a symbol that is an integer")
    bad(msgpack.packb({"v": 1, "producer": 1, "seq": 1,
                       "events": [{"k": 5, "id": 1, "ts": 1, "stack": [1], "frames": [0]}],
                       "symbols": [b"x"]}, use_bin_type=True),
        "symbol is not a string", "a symbol packed as bin")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [named], b"symbols": [b"a" * 4097]},
        "symbol longer than XPU_WIRE_FRAME_NAME_MAX", "a symbol of 4097 bytes")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [named], b"symbols": [b"a\0b"]},
        "symbol holds a NUL byte", "a symbol with a NUL")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [{**named, b"frames": [0]}],
         b"symbols": [b"a"]}, "frames and stack differ in length", "1 name for 2 frames")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [{**named, b"frames": [b"a", None]}],
         b"symbols": [b"a"]}, "frame name is not an index or nil", "a name in place of an index")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [{**ev, b"counters": []}]},
        "empty counters array", "no counters in a counters array")
    bad({b"v": 1, b"producer": 1, b"seq": 1,
         b"events": [{**ev, b"counters": [[b"c", 1.0]] * 5}]}, "too many counters", "5 counters")
    bad(msgpack.packb({"v": 1, "producer": 1, "seq": 1,
                       "events": [{"k": 5, "id": 1, "ts": 1, "counters": [[b"c", 1.0]]}]},
                      use_bin_type=True),
        "counter name is not a string", "a counter name packed as bin")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [{**ev, b"counters": [[b"c", 7]]}]},
        "expected a float", "a counter delta as an integer")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [{**ev, b"counters": [[b"c", -1.0]]}]},
        "counter delta negative or not finite", "a negative delta")
    bad({b"v": 1, b"producer": 1, b"seq": 1, b"events": [{**ev, b"ipc": float("inf")}]},
        "ipc negative or not finite", "an infinite ipc")


def main():
    if len(sys.argv) != 2:
        print("usage: wire_python_test.py PATH/TO/wire_dump", file=sys.stderr)
        return 100
    with tempfile.TemporaryDirectory() as tmp:
        encoded_by_c(sys.argv[1], tmp)
        decoded_by_c(sys.argv[1], tmp)
    print(f"1..{count}")
    if failed:
        print(f"# {failed} of {count} checks failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
