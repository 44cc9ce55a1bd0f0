"""Unit tests of gguf_file: every metadata type, nested arrays, alignment, malformed files."""

import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from ggml_dequant import dequantize_tensor  # noqa: E402
from gguf_file import (VALUE_ARRAY, VALUE_BOOL, VALUE_FLOAT32, VALUE_FLOAT64, VALUE_INT8,  # noqa: E402
                       VALUE_INT16, VALUE_INT32, VALUE_INT64, VALUE_STRING, VALUE_UINT8,
                       VALUE_UINT16, VALUE_UINT32, VALUE_UINT64, GGUFError, GGUFFile)
from gguf_test_writer import build_gguf, f32_tensor  # noqa: E402

EVERY_TYPE_METADATA = [
    ("u8", VALUE_UINT8, 255),
    ("i8", VALUE_INT8, -128),
    ("u16", VALUE_UINT16, 65535),
    ("i16", VALUE_INT16, -32768),
    ("u32", VALUE_UINT32, 4294967295),
    ("i32", VALUE_INT32, -2147483648),
    ("f32", VALUE_FLOAT32, 1.5),
    ("bool", VALUE_BOOL, True),
    ("string", VALUE_STRING, "h\u00e9llo \u2581world"),
    ("u64", VALUE_UINT64, 2 ** 64 - 1),
    ("i64", VALUE_INT64, -2 ** 63),
    ("f64", VALUE_FLOAT64, 0.1),
    ("array.f32", VALUE_ARRAY, (VALUE_FLOAT32, [0.0, -1.5, 2.25])),
    ("array.strings", VALUE_ARRAY, (VALUE_STRING, ["<unk>", "", "\u2581a"])),
    ("array.bools", VALUE_ARRAY, (VALUE_BOOL, [True, False])),
    ("array.empty", VALUE_ARRAY, (VALUE_INT32, [])),
    ("array.nested", VALUE_ARRAY,
     (VALUE_ARRAY, [(VALUE_UINT8, [1, 2]), (VALUE_STRING, ["x"]), (VALUE_UINT8, [])])),
]


class ReaderTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.scratch.cleanup()

    def open_bytes(self, image):
        path = os.path.join(self.scratch.name, f"{self.id()}.gguf")
        with open(path, "wb") as file:
            file.write(image)
        return GGUFFile(path)

    def sample_image(self, alignment=None, version=3):
        metadata = list(EVERY_TYPE_METADATA)
        if alignment is not None:
            metadata.append(("general.alignment", VALUE_UINT32, alignment))
        # Q8_0 tensor of 2 rows x 32: row 0 scale 1 with quants 0..31, row 1 scale -0.5
        # with quants all 4.
        q8_rows = (struct.pack("<e", 1.0) + bytes(range(32))
                   + struct.pack("<e", -0.5) + bytes([4] * 32))
        tensors = [
            f32_tensor("matrix", np.arange(6, dtype=np.float32).reshape(2, 3)),
            ("quantized", (32, 2), 8, q8_rows),
            f32_tensor("vector", np.array([7.0, 8.0], dtype=np.float32)),
        ]
        return build_gguf(metadata, tensors, alignment=alignment or 32, version=version)

    def test_every_metadata_type(self):
        gguf = self.open_bytes(self.sample_image())
        self.assertEqual(gguf.version, 3)
        for key, value_type, value in EVERY_TYPE_METADATA:
            if value_type == VALUE_ARRAY:
                continue
            self.assertEqual(gguf.metadata_types[key], value_type, key)
            self.assertEqual(gguf.metadata[key], value, key)
        self.assertEqual(list(gguf.metadata["array.f32"]), [0.0, -1.5, 2.25])
        self.assertEqual(gguf.metadata["array.strings"], ["<unk>", "", "\u2581a"])
        self.assertEqual(list(gguf.metadata["array.bools"]), [True, False])
        self.assertEqual(len(gguf.metadata["array.empty"]), 0)
        nested = gguf.metadata["array.nested"]
        self.assertEqual([list(nested[0]), nested[1], list(nested[2])], [[1, 2], ["x"], []])

    def test_tensors_default_alignment(self):
        gguf = self.open_bytes(self.sample_image())
        self.assertEqual(gguf.alignment, 32)
        self.assertEqual(gguf.data_offset % 32, 0)
        matrix = gguf.tensors["matrix"]
        self.assertEqual(matrix.dims, (3, 2))
        self.assertEqual(matrix.numpy_shape, (2, 3))
        np.testing.assert_array_equal(dequantize_tensor(gguf, "matrix"),
                                      [[0, 1, 2], [3, 4, 5]])
        np.testing.assert_array_equal(dequantize_tensor(gguf, "vector"), [7, 8])
        quantized = dequantize_tensor(gguf, "quantized")
        self.assertEqual(quantized.shape, (2, 32))
        np.testing.assert_array_equal(quantized[0], np.arange(32))
        np.testing.assert_array_equal(quantized[1], [-2.0] * 32)
        np.testing.assert_array_equal(dequantize_tensor(gguf, "quantized", rows=[1, 0]),
                                      quantized[::-1])

    def test_custom_alignment(self):
        gguf = self.open_bytes(self.sample_image(alignment=64))
        self.assertEqual(gguf.alignment, 64)
        self.assertEqual(gguf.data_offset % 64, 0)
        self.assertEqual(gguf.tensors["quantized"].offset % 64, 0)
        np.testing.assert_array_equal(dequantize_tensor(gguf, "vector"), [7, 8])

    def test_version_2(self):
        gguf = self.open_bytes(self.sample_image(version=2))
        self.assertEqual(gguf.version, 2)
        np.testing.assert_array_equal(dequantize_tensor(gguf, "vector"), [7, 8])

    def test_rejects_bad_header(self):
        image = self.sample_image()
        for bad, message in ((b"GGUX" + image[4:], "bad magic"),
                             (image[:4] + struct.pack("<I", 1) + image[8:], "version 1"),
                             (image[:4] + struct.pack(">I", 3) + image[8:], "big-endian")):
            with self.subTest(message=message):
                with self.assertRaisesRegex(GGUFError, message):
                    self.open_bytes(bad)

    def test_rejects_every_truncation(self):
        image = self.sample_image()
        gguf = self.open_bytes(image)
        # Cutting anywhere before the end of the last tensor must be a GGUFError.
        last_end = gguf.data_offset + max(info.offset + info.nbytes for info in gguf.tensors.values())
        for length in range(0, last_end, 7):
            with self.subTest(length=length):
                with self.assertRaises(GGUFError):
                    self.open_bytes(image[:length])

    def test_rejects_bad_alignment_and_offsets(self):
        with self.assertRaisesRegex(GGUFError, "power of two"):
            self.open_bytes(self.sample_image(alignment=48))
        misaligned = build_gguf([], [("t", (1,), 0, b"\0" * 4)])
        # Patch the tensor's offset field (the last 8 bytes before the padding) to 4.
        offset_field = misaligned.index(b"t") + 1 + 4 + 8 + 4
        patched = (misaligned[:offset_field] + struct.pack("<Q", 4)
                   + misaligned[offset_field + 8:])
        with self.assertRaisesRegex(GGUFError, "not a multiple of the alignment"):
            self.open_bytes(patched)

    def test_rejects_huge_counts_and_bad_values(self):
        with self.assertRaisesRegex(GGUFError, "larger than the file"):
            self.open_bytes(b"GGUF" + struct.pack("<IQQ", 3, 2 ** 40, 0) + b"\0" * 64)
        # The first key's type tag follows the 24-byte header and the key string.
        def retag_first_key(image, key, value_type):
            at = 24 + 8 + len(key)
            return image[:at] + struct.pack("<I", value_type) + image[at + 4:]

        bad_bool = retag_first_key(build_gguf([("b", VALUE_UINT8, 2)], []), "b", VALUE_BOOL)
        with self.assertRaisesRegex(GGUFError, "expected 0 or 1"):
            self.open_bytes(bad_bool)
        unknown_type = retag_first_key(build_gguf([("k", VALUE_UINT8, 0)], []), "k", 99)
        with self.assertRaisesRegex(GGUFError, "unknown metadata value type"):
            self.open_bytes(unknown_type)

    def test_stories260k(self):
        shared = os.environ.get("HETC_SHARED_DIR")
        if not shared:
            self.skipTest("HETC_SHARED_DIR is not set")
        gguf = GGUFFile(os.path.join(shared, "models", "stories260K.gguf"))
        self.assertEqual(gguf.version, 3)
        self.assertEqual(gguf.metadata["general.architecture"], "llama")
        self.assertEqual(gguf.metadata["llama.context_length"], 512)
        self.assertEqual(len(gguf.tensors), 48)
        self.assertEqual({info.type_name for info in gguf.tensors.values()}, {"F32"})
        self.assertEqual(gguf.tensors["token_embd.weight"].numpy_shape, (512, 64))
        self.assertEqual(gguf.tensors["blk.0.ffn_down.weight"].numpy_shape, (64, 172))
        self.assertEqual(len(gguf.metadata["tokenizer.ggml.tokens"]), 512)
        self.assertEqual(gguf.metadata["tokenizer.ggml.tokens"][403], "\u2581Once")


if __name__ == "__main__":
    unittest.main(verbosity=2)
