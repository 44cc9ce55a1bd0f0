#!/usr/bin/env python3
"""Copies a GGUF model with one metadata key added (or replaced).

    add_gguf_value.py IN.gguf OUT.gguf KEY TYPE VALUE

TYPE is u32, i32, f32, str or bool. The tensor infos and data are copied
unchanged; the data section is realigned after the grown metadata.
"""
import struct
import sys

SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
WRITERS = {"u32": (4, "<I", int), "i32": (5, "<i", int),
           "f32": (6, "<f", float), "bool": (7, "<?", lambda v: v == "true")}


def skip_value(data, at, value_type):
    if value_type in SCALARS:
        return at + SCALARS[value_type]
    if value_type == 8:
        (length,) = struct.unpack_from("<Q", data, at)
        return at + 8 + length
    assert value_type == 9, f"unknown GGUF value type {value_type}"
    element_type, count = struct.unpack_from("<IQ", data, at)
    at += 12
    for _ in range(count):
        at = skip_value(data, at, element_type)
    return at


def read_string(data, at):
    (length,) = struct.unpack_from("<Q", data, at)
    return data[at + 8:at + 8 + length].decode(), at + 8 + length


def encode(key, type_name, value):
    name = struct.pack("<Q", len(key)) + key.encode()
    if type_name == "str":
        return name + struct.pack("<IQ", 8, len(value)) + value.encode()
    code, fmt, convert = WRITERS[type_name]
    return name + struct.pack("<I", code) + struct.pack(fmt, convert(value))


def main(source, target, key, type_name, value):
    data = open(source, "rb").read()
    magic, version, tensor_count, kv_count = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF", f"{source} is not a GGUF file"
    at = 24
    kvs = []
    alignment = 32
    for _ in range(kv_count):
        start = at
        name, at = read_string(data, at)
        (value_type,) = struct.unpack_from("<I", data, at)
        if name == "general.alignment":
            (alignment,) = struct.unpack_from("<I", data, at + 4)
        at = skip_value(data, at + 4, value_type)
        if name != key:
            kvs.append(data[start:at])
    infos_start = at
    for _ in range(tensor_count):
        _, at = read_string(data, at)
        (dims,) = struct.unpack_from("<I", data, at)
        at += 4 + 8 * dims + 4 + 8
    infos = data[infos_start:at]
    data_start = (at + alignment - 1) // alignment * alignment
    kvs.append(encode(key, type_name, value))
    head = struct.pack("<4sIQQ", magic, version, tensor_count, len(kvs))
    head += b"".join(kvs) + infos
    head += b"\0" * ((-len(head)) % alignment)
    with open(target, "wb") as out:
        out.write(head + data[data_start:])


if __name__ == "__main__":
    main(*sys.argv[1:])
