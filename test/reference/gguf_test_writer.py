"""Minimal GGUF v3 writer used only by the tests to build small files byte by byte."""

import struct

import numpy as np

from gguf_file import (VALUE_ARRAY, VALUE_BOOL, VALUE_FLOAT32, VALUE_FLOAT64, VALUE_INT8,
                       VALUE_INT16, VALUE_INT32, VALUE_INT64, VALUE_STRING, VALUE_UINT8,
                       VALUE_UINT16, VALUE_UINT32, VALUE_UINT64)

SCALAR_FORMATS = {
    VALUE_UINT8: "<B", VALUE_INT8: "<b", VALUE_UINT16: "<H", VALUE_INT16: "<h",
    VALUE_UINT32: "<I", VALUE_INT32: "<i", VALUE_FLOAT32: "<f", VALUE_BOOL: "<?",
    VALUE_UINT64: "<Q", VALUE_INT64: "<q", VALUE_FLOAT64: "<d",
}


def encode_string(text):
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def encode_value(value_type, value):
    """Bytes of a value without its type tag. Arrays are (element type, [elements])."""
    if value_type in SCALAR_FORMATS:
        return struct.pack(SCALAR_FORMATS[value_type], value)
    if value_type == VALUE_STRING:
        return encode_string(value)
    if value_type == VALUE_ARRAY:
        element_type, elements = value
        body = b"".join(encode_value(element_type, element) for element in elements)
        return struct.pack("<IQ", element_type, len(elements)) + body
    raise ValueError(f"unknown value type {value_type}")


def build_gguf(metadata, tensors, alignment=32, version=3):
    """metadata: [(key, value type, value)]; tensors: [(name, dims innermost-first,
    ggml type code, raw bytes)]. Tensor data are laid out in order, each aligned."""
    header = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata))
    body = b"".join(encode_string(key) + struct.pack("<I", value_type)
                    + encode_value(value_type, value) for key, value_type, value in metadata)
    infos = b""
    data = b""
    for name, dims, type_code, raw in tensors:
        data += b"\0" * (-len(data) % alignment)
        infos += (encode_string(name) + struct.pack("<I", len(dims))
                  + struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", type_code, len(data)))
        data += bytes(raw)
    prefix = header + body + infos
    return prefix + b"\0" * (-len(prefix) % alignment) + data


def f32_tensor(name, array):
    """A float32 tensor entry; array is row-major, so GGUF dims are its shape reversed."""
    array = np.ascontiguousarray(array, dtype="<f4")
    return (name, tuple(reversed(array.shape)), 0, array.tobytes())
