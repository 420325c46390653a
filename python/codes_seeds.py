#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of codes_fuzz.c: for each of 3.11, 3.12, 3.13, a code object image
# laid out as python/tables.c says, with a compact ASCII qualified name, a file name of each
# str kind (latin-1, UCS-2, UCS-4) and a location table with every entry form.
#
# usage: codes_seeds.py DIR
import os
import struct
import sys

LAYOUTS = {  # object_type, filename, qualname, firstlineno, linetable, state, ascii, compact
    0: (8, 112, 128, 72, 136, 32, 48, 72),
    1: (8, 112, 128, 68, 136, 32, 40, 56),
    2: (8, 112, 128, 68, 136, 32, 40, 56),
}
TABLE = bytes([0xe8, 0x02, 0x81, 0x05, 0xe0, 0x01, 0x02, 0xf8, 0xf2, 0x05, 0x00, 0x01, 0x02,
               0xe8, 0x48, 0x03])


def put(img, off, data):
    img[off:off + len(data)] = data


def string(lay, text, kind, ascii):
    _, _, _, _, _, state_off, ascii_data, compact_data = lay
    data_off = ascii_data if ascii else compact_data
    obj = bytearray(data_off)
    put(obj, 16, struct.pack('<q', len(text)))
    put(obj, state_off, struct.pack('<I', kind << 2 | 1 << 5 | (1 << 6 if ascii else 0)))
    fmt = {1: 'B', 2: 'H', 4: 'I'}[kind]
    return bytes(obj) + b''.join(struct.pack('<' + fmt, ord(ch)) for ch in text)


def seed(version, kind, file_text):
    lay = LAYOUTS[version]
    obj_type, filename, qualname, firstlineno, linetable = lay[:5]
    img = bytearray(256)
    put(img, obj_type, struct.pack('<Q', 0))
    put(img, firstlineno, struct.pack('<i', 10))
    parts = [(qualname, string(lay, 'Outer.inner', 1, True)),
             (filename, string(lay, file_text, kind, False)),
             (linetable, bytes(16) + struct.pack('<q', len(TABLE)) + bytes(8) + TABLE)]
    for field, obj in parts:
        off = len(img)
        put(img, field, struct.pack('<Q', off))
        img += obj + bytes((-len(obj)) % 8)
    head = bytes([version, 1]) + struct.pack('<HHHH', 0, 3, 8, 0xffff)
    return head + bytes(img)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    files = {1: 'caf\u00e9.py', 2: 'x\u2192y.py', 4: '\U0001f600.py'}
    for version in LAYOUTS:
        for kind, text in files.items():
            with open(os.path.join(out, 'v%d-kind%d' % (version, kind)), 'wb') as f:
                f.write(seed(version, kind, text))


if __name__ == '__main__':
    main()
