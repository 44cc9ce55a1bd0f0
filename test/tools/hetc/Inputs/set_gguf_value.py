#!/usr/bin/env python3
"""Copies a GGUF model with one scalar metadata value overwritten in place.

    set_gguf_value.py IN.gguf OUT.gguf KEY VALUE

The value keeps the key's stored type (an integer type or f32/f64), so the file
layout does not move; VALUE may be nan or inf for float keys.
"""
import shutil
import struct
import sys

FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
           10: "<Q", 11: "<q", 12: "<d"}


def main(source, target, key, value):
    data = open(source, "rb").read()
    needle = struct.pack("<Q", len(key)) + key.encode()
    at = data.find(needle)
    assert at >= 0, f"no metadata key {key}"
    at += len(needle)
    (value_type,) = struct.unpack_from("<I", data, at)
    fmt = FORMATS[value_type]
    number = float(value) if fmt in ("<f", "<d") else int(value)
    shutil.copyfile(source, target)
    with open(target, "r+b") as out:
        out.seek(at + 4)
        out.write(struct.pack(fmt, number))


if __name__ == "__main__":
    main(*sys.argv[1:])
