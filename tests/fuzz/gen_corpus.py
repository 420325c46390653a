#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of the wire fuzz target into corpus/wire/.

Run by hand when the format changes, then commit the files; CI only replays them:

    /usr/bin/python3 tests/fuzz/gen_corpus.py build/dev/tests/wire_dump

Seeds: batches from the C encoder (every kind, and frame names), batches from python3-msgpack
written the liberal ways a third party may write them, truncations, and hostile headers. Files named
crash-* or found-* come from fuzzing runs and are kept as they are.
"""

import os
import struct
import subprocess
import sys
import tempfile

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "wire")


def pack(obj):
    # bytes as MessagePack str, as the format wants for keys and names
    return msgpack.packb(obj, use_bin_type=False)


def batch(events, v=1, **extra):
    b = {b"v": v, b"producer": 1, b"seq": 1, b"events": events}
    b.update({k.encode(): val for k, val in extra.items()})
    return b


def ev(kind=10, id=1, ts=1, **fields):
    e = {b"k": kind, b"id": id, b"ts": ts}
    e.update({k.encode(): v for k, v in fields.items()})
    return e


def header(n_events_bytes):
    """"v" 1, "producer" 1, "seq" 1, then "events" and the given array header."""
    return (b"\x84\xa1v\x01\xa8producer\x01\xa3seq\x01\xa6events" + n_events_bytes)


def main():
    if len(sys.argv) != 2:
        print("usage: gen_corpus.py PATH/TO/wire_dump", file=sys.stderr)
        return 100
    seeds = {}
    with tempfile.TemporaryDirectory() as tmp:
        bin_path = os.path.join(tmp, "b.bin")
        subprocess.run([sys.argv[1], "encode", bin_path, os.path.join(tmp, "b.json")],
                       check=True)
        data = open(bin_path, "rb").read()
        pos, names = 0, ["c_cpu", "c_gpu", "c_other", "c_empty", "c_names", "c_counters"]
        while pos < len(data):
            (n,) = struct.unpack_from("<I", data, pos)
            seeds[names.pop(0) + ".mp"] = data[pos + 4:pos + 4 + n]
            pos += 4 + n
    gpu = seeds["c_gpu.mp"]
    seeds["trunc_half.mp"] = gpu[:len(gpu) // 2]
    seeds["trunc_last.mp"] = gpu[:-1]

    # a third party's batch: v last, unknown keys at both levels, float64 conf
    seeds["py_liberal.mp"] = pack({
        b"events": [ev(5, 2**63, 7, conf=0.5, grid=[-1, 2, 3], block=[32, 1, 1],
                       links=[[1, 1], [5, 2]], name=b"k\xce\xbb\xff", future={b"a": [1]}),
                    ev(2, 3, 8, stack=[1, 2**64 - 1, 3], nk=1, scale=1.5)],
        b"seq": 9, b"producer": 2, b"extra": [b"x"], b"v": 1})
    # every MessagePack type as an unknown value
    seeds["py_all_types.mp"] = pack(batch([ev(x=[None, False, True, -1, -200, 1.5,
                                                  b"s" * 40, 2**40, -2**40, {}, []])]))
    raw = bytearray(pack(batch([ev(y=0)])))
    raw[-1:] = b"\xc7\x02\x05ab"  # ext8 in place of y's value
    seeds["ext_value.mp"] = bytes(raw)
    seeds["many_events.mp"] = pack(batch([ev(id=i) for i in range(80)]))
    seeds["big_stacks.mp"] = pack(batch([ev(2, i, stack=list(range(200))) for i in range(6)]))
    seeds["v2.mp"] = pack(batch([], v=2))
    seeds["not_a_map.mp"] = pack([1, 2, 3])
    seeds["five_links.mp"] = pack(batch([ev(links=[[1, i] for i in range(5)])]))
    seeds["grid_two.mp"] = pack(batch([ev(5, grid=[1, 2])]))
    seeds["nk_over.mp"] = pack(batch([ev(2, stack=[1], nk=2)]))
    # hostile headers: lengths and counts far past the end of the message
    seeds["array32_huge.mp"] = b"\x82\xa1v\x01\xa6events\xdd\xff\xff\xff\xff" + b"\x80" * 6
    seeds["str32_huge.mp"] = header(b"\x91") + b"\x81\xdb\xff\xff\xff\x00k"
    seeds["map32_huge.mp"] = header(b"\x91") + b"\xdf\x7f\xff\xff\xff"
    seeds["deep.mp"] = b"\x81\xa1x" + b"\x91" * 200 + b"\xc0"

    # frame names: the symbol table first, names shared by events, nil, an unused symbol, an
    # empty one, a long one; then the malformed tables the decoder must refuse
    syms = [b"main", b"void f<\xce\xbb>(int)", b"", b"unused", b"x" * 300]
    named = [ev(2, 1, stack=[1, 2, 3, 4], nk=1, frames=[0, None, 1, 2]),
             ev(3, 2, frames=[4, 0], stack=[5, 6]), ev(5, 3, stack=[7], frames=[None])]
    seeds["names_first.mp"] = pack({b"symbols": syms, **batch(named)})
    seeds["names_many.mp"] = pack(batch(
        [ev(2, i, stack=list(range(40)), frames=[(i * 40 + j) % 700 for j in range(40)])
         for i in range(25)], symbols=[b"fn_%d" % i for i in range(700)]))
    seeds["names_index_over.mp"] = pack(batch([ev(2, stack=[1], frames=[1])], symbols=[b"a"]))
    seeds["names_not_str.mp"] = pack(batch([ev(2, stack=[1], frames=[0])], symbols=[1]))
    seeds["names_too_long.mp"] = pack(batch([ev(2, stack=[1], frames=[0])],
                                            symbols=[b"a" * 4097]))
    seeds["names_nul.mp"] = pack(batch([ev(2, stack=[1], frames=[0])], symbols=[b"a\0"]))
    seeds["names_len.mp"] = pack(batch([ev(2, stack=[1, 2], frames=[0])], symbols=[b"a"]))

    # counters: a third party's (keys in another order, a delta as float32); the malformed
    # ones are wire_test's (the corpus stays under 50 files)
    seeds["py_counters.mp"] = pack(batch([
        ev(5, 1, 10, end=20, cflags=1, ipc=0.5,
           counters=[[b"instructions", 1e9], [b"cycles", 2e9], [b"r01c2:u\xff", 0.0]]),
        ev(11, 2, 30, sub=2, counters=[[b"task-clock", 12.5]])]))
    raw = bytearray(pack(batch([ev(5, counters=[[b"c", 1.5]])])))
    raw[-9:] = b"\xca\x3f\xc0\x00\x00"  # the delta as float32
    seeds["counters_float32.mp"] = bytes(raw)

    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        if not name.startswith(("crash-", "found-")):
            os.unlink(os.path.join(OUT, name))
    for name, blob in sorted(seeds.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
    print(f"{len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
