"""Independent, bounds-checked GGUF v2/v3 reader (header, metadata, tensor infos, data)."""

import os
import struct
from dataclasses import dataclass

import numpy as np

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# Metadata value type codes of the GGUF specification.
VALUE_UINT8, VALUE_INT8, VALUE_UINT16, VALUE_INT16 = 0, 1, 2, 3
VALUE_UINT32, VALUE_INT32, VALUE_FLOAT32, VALUE_BOOL = 4, 5, 6, 7
VALUE_STRING, VALUE_ARRAY, VALUE_UINT64, VALUE_INT64 = 8, 9, 10, 11
VALUE_FLOAT64 = 12

SCALAR_VALUE_DTYPES = {
    VALUE_UINT8: np.dtype("<u1"),
    VALUE_INT8: np.dtype("<i1"),
    VALUE_UINT16: np.dtype("<u2"),
    VALUE_INT16: np.dtype("<i2"),
    VALUE_UINT32: np.dtype("<u4"),
    VALUE_INT32: np.dtype("<i4"),
    VALUE_FLOAT32: np.dtype("<f4"),
    VALUE_UINT64: np.dtype("<u8"),
    VALUE_INT64: np.dtype("<i8"),
    VALUE_FLOAT64: np.dtype("<f8"),
}

# ggml tensor types: code -> (name, elements per block, bytes per block). Only types
# whose block size is certain are listed; others load but cannot be sized or read.
GGML_TYPES = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    30: ("BF16", 1, 2),
}
GGML_TYPE_CODES = {name: code for code, (name, _, _) in GGML_TYPES.items()}

# Guards against absurd counts in corrupt files before any allocation happens.
MAX_DIMS = 4
MAX_NESTING = 8


class GGUFError(Exception):
    """A malformed or unsupported GGUF file; the message names the field and offset."""


def ggml_type_name(type_code):
    entry = GGML_TYPES.get(type_code)
    return entry[0] if entry else f"type#{type_code}"


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dims: tuple  # innermost (contiguous) dimension first, as stored in GGUF
    type_code: int
    offset: int  # relative to the data section
    nbytes: int  # None when the type's block size is unknown

    @property
    def type_name(self):
        return ggml_type_name(self.type_code)

    @property
    def n_elements(self):
        count = 1
        for dim in self.dims:
            count *= dim
        return count

    @property
    def numpy_shape(self):
        """Row-major shape: GGUF dims [K, N] are the N x K matrix."""
        return tuple(reversed(self.dims))


class _Cursor:
    """Reads little-endian fields from a byte buffer, never past its end."""

    def __init__(self, buffer):
        self.buffer = buffer
        self.position = 0

    def take(self, size, what):
        end = self.position + size
        if size < 0 or end > len(self.buffer):
            raise GGUFError(
                f"truncated file: {what} needs {size} bytes at offset "
                f"{self.position}, file has {len(self.buffer)}")
        chunk = self.buffer[self.position:end]
        self.position = end
        return chunk

    def unpack(self, fmt, what):
        return struct.unpack(fmt, bytes(self.take(struct.calcsize(fmt), what)))[0]

    def u32(self, what):
        return self.unpack("<I", what)

    def u64(self, what):
        return self.unpack("<Q", what)

    def string(self, what):
        length = self.u64(f"{what} length")
        raw = bytes(self.take(length, what))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise GGUFError(f"{what} at offset {self.position - length} is not UTF-8") from error


class GGUFFile:
    """A GGUF file mapped read-only: metadata dict, tensor infos, raw tensor bytes."""

    def __init__(self, path):
        self.path = path
        # numpy cannot map an empty file; it is simply too short to be GGUF.
        if os.path.getsize(path) == 0:
            raise GGUFError(f"truncated file: {path} is empty")
        self.mapping = np.memmap(path, dtype=np.uint8, mode="r")
        self._parse(_Cursor(memoryview(self.mapping)))

    def _parse(self, cursor):
        magic = bytes(cursor.take(4, "magic"))
        if magic != GGUF_MAGIC:
            raise GGUFError(f"bad magic {magic!r}, expected {GGUF_MAGIC!r}")
        self.version = cursor.u32("version")
        if self.version not in (2, 3):
            # A byte-swapped small number means a big-endian file.
            if self.version & 0xFFFF == 0 and self.version != 0:
                raise GGUFError("big-endian GGUF files are not supported")
            raise GGUFError(f"unsupported GGUF version {self.version} (need 2 or 3)")
        tensor_count = cursor.u64("tensor count")
        metadata_count = cursor.u64("metadata count")
        # Each entry occupies at least 8 bytes, so larger counts cannot be real.
        for count, what in ((tensor_count, "tensor count"), (metadata_count, "metadata count")):
            if count * 8 > len(cursor.buffer):
                raise GGUFError(f"{what} {count} is larger than the file allows")

        self.metadata = {}
        self.metadata_types = {}
        for index in range(metadata_count):
            key = cursor.string(f"metadata key #{index}")
            if key in self.metadata:
                raise GGUFError(f"duplicate metadata key {key!r}")
            value_type = cursor.u32(f"type of {key!r}")
            self.metadata[key] = self._read_value(cursor, value_type, key, depth=0)
            self.metadata_types[key] = value_type

        self.alignment = DEFAULT_ALIGNMENT
        if "general.alignment" in self.metadata:
            if self.metadata_types["general.alignment"] != VALUE_UINT32:
                raise GGUFError("general.alignment must be a uint32")
            self.alignment = int(self.metadata["general.alignment"])
            if self.alignment == 0 or self.alignment & (self.alignment - 1):
                raise GGUFError(f"general.alignment {self.alignment} is not a power of two")

        self.tensors = {}
        for index in range(tensor_count):
            info = self._read_tensor_info(cursor, index)
            if info.name in self.tensors:
                raise GGUFError(f"duplicate tensor name {info.name!r}")
            self.tensors[info.name] = info

        self.data_offset = -(-cursor.position // self.alignment) * self.alignment
        file_size = len(cursor.buffer)
        for info in self.tensors.values():
            if info.offset % self.alignment:
                raise GGUFError(
                    f"tensor {info.name!r} offset {info.offset} is not a multiple of "
                    f"the alignment {self.alignment}")
            if info.nbytes is not None and self.data_offset + info.offset + info.nbytes > file_size:
                raise GGUFError(
                    f"tensor {info.name!r} data [{self.data_offset + info.offset}, "
                    f"+{info.nbytes}) runs past the end of the file ({file_size} bytes)")

    def _read_value(self, cursor, value_type, key, depth):
        if value_type in SCALAR_VALUE_DTYPES:
            dtype = SCALAR_VALUE_DTYPES[value_type]
            return np.frombuffer(cursor.take(dtype.itemsize, key), dtype=dtype)[0].item()
        if value_type == VALUE_BOOL:
            byte = cursor.take(1, key)[0]
            if byte > 1:
                raise GGUFError(f"bool {key!r} has value {byte}, expected 0 or 1")
            return bool(byte)
        if value_type == VALUE_STRING:
            return cursor.string(key)
        if value_type == VALUE_ARRAY:
            if depth >= MAX_NESTING:
                raise GGUFError(f"array {key!r} nests deeper than {MAX_NESTING}")
            element_type = cursor.u32(f"element type of {key!r}")
            count = cursor.u64(f"element count of {key!r}")
            if element_type in SCALAR_VALUE_DTYPES:
                # Numeric arrays (token scores, type lists) are read in one go.
                dtype = SCALAR_VALUE_DTYPES[element_type]
                if count * dtype.itemsize > len(cursor.buffer):
                    raise GGUFError(f"array {key!r} count {count} is larger than the file")
                raw = cursor.take(count * dtype.itemsize, key)
                return np.frombuffer(raw, dtype=dtype).copy()
            if count > len(cursor.buffer):
                raise GGUFError(f"array {key!r} count {count} is larger than the file")
            return [self._read_value(cursor, element_type, f"{key}[{i}]", depth + 1)
                    for i in range(count)]
        raise GGUFError(f"unknown metadata value type {value_type} for {key!r}")

    def _read_tensor_info(self, cursor, index):
        name = cursor.string(f"tensor #{index} name")
        n_dims = cursor.u32(f"tensor {name!r} dimension count")
        if not 1 <= n_dims <= MAX_DIMS:
            raise GGUFError(f"tensor {name!r} has {n_dims} dimensions (1..{MAX_DIMS} allowed)")
        dims = tuple(cursor.u64(f"tensor {name!r} dim {d}") for d in range(n_dims))
        type_code = cursor.u32(f"tensor {name!r} type")
        offset = cursor.u64(f"tensor {name!r} offset")
        nbytes = None
        if type_code in GGML_TYPES:
            _, block_elements, block_bytes = GGML_TYPES[type_code]
            if dims[0] % block_elements:
                raise GGUFError(
                    f"tensor {name!r} row length {dims[0]} is not a multiple of the "
                    f"{ggml_type_name(type_code)} block size {block_elements}")
            n_elements = 1
            for dim in dims:
                n_elements *= dim
            nbytes = n_elements // block_elements * block_bytes
        return TensorInfo(name, dims, type_code, offset, nbytes)

    def tensor_bytes(self, name):
        """The raw bytes of a tensor as a read-only uint8 view of the mapping."""
        info = self.tensors[name]
        if info.nbytes is None:
            raise GGUFError(f"tensor {name!r} has unsupported type {info.type_name}")
        start = self.data_offset + info.offset
        return self.mapping[start:start + info.nbytes]

    def get(self, key, default=None):
        return self.metadata.get(key, default)
