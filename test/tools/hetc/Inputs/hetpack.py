#!/usr/bin/env python3
"""Reads and rewrites .hetpack files for tests of the runtime's pack checks.

    hetpack.py list PACK                    section names, sizes and checksums
    hetpack.py extract PACK SECTION OUT     one section's bytes
    hetpack.py set PACK OUT KEY=VALUE...    manifest fields changed (model.layers=1,
                                            variants.0.requires=[]), checksums
                                            written anew: a pack forged to look valid
    hetpack.py cut PACK OUT SECTION SIZE    a section cut to SIZE bytes, checksums
                                            written anew: a forged truncation
    hetpack.py zero PACK OUT SECTION FROM   a section's bytes zeroed from FROM on,
                                            checksums written anew
    hetpack.py replace PACK OUT SECTION OLD NEW
                                            bytes OLD replaced by NEW (same length)
                                            in a section, checksums written anew
    hetpack.py symbol PACK OUT SECTION NAME info|value NUMBER
                                            a dynamic symbol's type byte or address
                                            in a code section set, checksums
                                            written anew
    hetpack.py flip PACK OUT SECTION OFFSET one byte of a section inverted, checksums
                                            kept: damage the header does not know of
    hetpack.py trap PACK OUT SECTION        a section's bytes overwritten with int3
                                            (0xcc) from its middle on, checksums kept

The layout is runtime/format/Pack.cpp's: "HETCPACK", u32 version, u32 count, per
section u32 name length, name, u64 offset, u64 size, u64 XXH3-64, then the XXH3-64
of the header. XXH3 comes from libxxhash (a dependency of hetc) through ctypes.
"""
import ctypes
import ctypes.util
import json
import struct
import sys

_xxhash = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_xxhash.XXH3_64bits.restype = ctypes.c_uint64
_xxhash.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh3(data: bytes) -> int:
    return _xxhash.XXH3_64bits(data, len(data))


def read(path):
    data = open(path, "rb").read()
    assert data[:8] == b"HETCPACK", "not a pack"
    version, count = struct.unpack_from("<II", data, 8)
    pos = 16
    sections = []
    for _ in range(count):
        (length,) = struct.unpack_from("<I", data, pos)
        pos += 4
        name = data[pos : pos + length].decode()
        pos += length
        offset, size, checksum = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        sections.append([name, data[offset : offset + size], checksum])
    return version, sections


def write(path, version, sections, rechecksum):
    table = b""
    offset = 16 + sum(4 + len(n.encode()) + 24 for n, _, _ in sections) + 8
    for name, payload, checksum in sections:
        table += struct.pack("<I", len(name.encode())) + name.encode()
        table += struct.pack("<QQQ", offset, len(payload),
                             xxh3(payload) if rechecksum else checksum)
        offset += len(payload)
    header = b"HETCPACK" + struct.pack("<II", version, len(sections)) + table
    header += struct.pack("<Q", xxh3(header))
    with open(path, "wb") as out:
        out.write(header + b"".join(p for _, p, _ in sections))


def set_symbol(sections, section, symbol, field, number):
    """Sets st_info or st_value of `symbol` in the .dynsym of an ELF section."""
    entry = next(s for s in sections if s[0] == section)
    elf = bytearray(entry[1])
    (shoff,) = struct.unpack_from("<Q", elf, 40)
    (shnum,) = struct.unpack_from("<H", elf, 60)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + 64 * k)
               for k in range(shnum)]
    dynsym = next(h for h in headers if h[1] == 11)  # SHT_DYNSYM
    strings = headers[dynsym[6]][4]
    for k in range(dynsym[5] // 24):
        at = dynsym[4] + 24 * k
        (name,) = struct.unpack_from("<I", elf, at)
        if elf[strings + name:].split(b"\0")[0] == symbol.encode():
            if field == "info":
                elf[at + 4] = number
            else:
                struct.pack_into("<Q", elf, at + 8, number)
            entry[1] = bytes(elf)
            return
    sys.exit(f"no symbol {symbol} in {section}")


def main(argv):
    command = argv[1]
    version, sections = read(argv[2])
    if command == "list":
        for name, payload, checksum in sections:
            print(f"{name} {len(payload)} {checksum:016x}")
        return
    out = argv[3]
    if command == "extract":
        payload = next(p for n, p, _ in sections if n == argv[3])
        open(argv[4], "wb").write(payload)
    elif command == "set":
        for name_payload in sections:
            if name_payload[0] != "manifest.json":
                continue
            manifest = json.loads(name_payload[1])
            for assignment in argv[4:]:
                key, value = assignment.split("=", 1)
                *parents, field = [int(k) if k.isdigit() else k
                                   for k in key.split(".")]
                target = manifest
                for parent in parents:
                    target = target[parent]
                target[field] = json.loads(value)
            name_payload[1] = json.dumps(manifest, indent=2).encode()
        write(out, version, sections, rechecksum=True)
    elif command in ("cut", "zero"):
        for name_payload in sections:
            if name_payload[0] != argv[4]:
                continue
            at = int(argv[5])
            payload = name_payload[1]
            name_payload[1] = (payload[:at] if command == "cut" else
                               payload[:at] + bytes(len(payload) - at))
        write(out, version, sections, rechecksum=True)
    elif command == "replace":
        old, new = argv[5].encode(), argv[6].encode()
        assert len(old) == len(new), "OLD and NEW must have the same length"
        for name_payload in sections:
            if name_payload[0] == argv[4]:
                assert old in name_payload[1], f"{argv[5]} not in {argv[4]}"
                name_payload[1] = name_payload[1].replace(old, new)
        write(out, version, sections, rechecksum=True)
    elif command == "symbol":
        set_symbol(sections, argv[4], argv[5], argv[6], int(argv[7], 0))
        write(out, version, sections, rechecksum=True)
    elif command in ("flip", "trap"):
        for name_payload in sections:
            if name_payload[0] != argv[4]:
                continue
            payload = bytearray(name_payload[1])
            if command == "flip":
                payload[int(argv[5])] ^= 0xFF
            else:
                half = len(payload) // 2
                payload[half:] = b"\xcc" * (len(payload) - half)
            name_payload[1] = bytes(payload)
        write(out, version, sections, rechecksum=False)
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
