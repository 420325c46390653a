#!/usr/bin/python3
"""Print the samples of gzip'd profile.proto files as JSON: [[[label key, label str], ...],
[values...]] each, string labels only. The wire format read by hand (varints and
length-delimited fields), from profile.proto's field numbers: Profile.sample = 2,
Profile.string_table = 6; Sample.value = 2 (packed or not), Sample.label = 3; Label.key = 1,
Label.str = 2. No protobuf module is needed."""
import gzip
import json
import sys


def fields(buf):
    """(field number, wire type, value) of each field of a message: an int or bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def samples(data):
    strings, raw = [], []
    for num, _, v in fields(data):
        if num == 6:
            strings.append(v.decode())
        elif num == 2:
            raw.append(v)
    out = []
    for s in raw:
        labels, values = [], []
        for num, wt, v in fields(s):
            if num == 2 and wt == 2:  # packed
                i = 0
                while i < len(v):
                    x, i = varint(v, i)
                    values.append(x)
            elif num == 2:
                values.append(v)
            elif num == 3:
                lab = {n: x for n, _, x in fields(v)}
                if lab.get(2):
                    labels.append([strings[lab.get(1, 0)], strings[lab[2]]])
        out.append([labels, values])
    return out


if __name__ == "__main__":
    result = []
    for path in sys.argv[1:]:
        with gzip.open(path, "rb") as f:
            result += samples(f.read())
    json.dump(result, sys.stdout)
