#!/usr/bin/env python3
"""Copies a GGUF model with one value of one f32 tensor set to NaN or infinity.

    poison_tensor.py IN.gguf OUT.gguf TENSOR (nan|inf)
"""
import os
import shutil
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "reference"))
from gguf_file import GGUFFile  # noqa: E402


def main(source, target, tensor, value):
    model = GGUFFile(source)
    info = model.tensors[tensor]
    assert info.type_name == "F32", f"{tensor} is {info.type_name}, not F32"
    start = model.data_offset + info.offset
    shutil.copyfile(source, target)
    with open(target, "r+b") as out:
        out.seek(start + 4 * (info.n_elements // 2))
        out.write(struct.pack("<f", float(value)))


if __name__ == "__main__":
    main(*sys.argv[1:])
