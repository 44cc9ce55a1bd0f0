"""Unit tests of ggml_dequant: one hand-packed block per format against values worked out by hand."""

import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ggml_dequant  # noqa: E402
from gguf_file import GGML_TYPE_CODES  # noqa: E402


def f16_bytes(value):
    return struct.pack("<e", value)


def dequantize(type_name, raw):
    return ggml_dequant.dequantize(GGML_TYPE_CODES[type_name], np.frombuffer(bytes(raw), np.uint8))


class DequantizeTest(unittest.TestCase):
    def assert_values(self, actual, expected):
        # Every hand value is exact in float32, so equality is demanded, not closeness.
        expected = np.array(expected, dtype=np.float64)
        self.assertEqual(actual.dtype, np.float32)
        self.assertEqual(actual.shape, expected.shape)
        wrong = np.nonzero(actual.astype(np.float64) != expected)[0]
        if wrong.size:
            first = int(wrong[0])
            self.fail(f"{wrong.size} values differ; first at index {first}: "
                      f"got {actual[first]!r}, expected {expected[first]!r}")

    def test_f32(self):
        raw = struct.pack("<4f", 1.0, -2.5, 3.0e-5, 1.0e30)
        self.assert_values(dequantize("F32", raw),
                           [1.0, -2.5, np.float32(3.0e-5), np.float32(1.0e30)])

    def test_f16(self):
        # 0x3C00 = 1, 0xC000 = -2, 0x7BFF = 65504 (largest), 0x0001 = 2^-24 (smallest
        # subnormal), 0x3555 = 1365/4096 (the half nearest 1/3), 0x8000 = -0.
        raw = struct.pack("<6H", 0x3C00, 0xC000, 0x7BFF, 0x0001, 0x3555, 0x8000)
        self.assert_values(dequantize("F16", raw),
                           [1.0, -2.0, 65504.0, 2.0 ** -24, 1365 / 4096, -0.0])

    def test_bf16(self):
        # bf16 is the top 16 bits of a float32: 0x3F80 = 1, 0xC040 = -3,
        # 0x4049 = 3.140625 (0x40490000), 0x0080 = 2^-126 (smallest normal float32).
        raw = struct.pack("<4H", 0x3F80, 0xC040, 0x4049, 0x0080)
        self.assert_values(dequantize("BF16", raw), [1.0, -3.0, 3.140625, 2.0 ** -126])

    def test_q8_0(self):
        # block: f16 d = 0.25, then 32 int8 quants; value = q * d.
        quants = [-128, -127, -64, -1, 0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 127,
                  -100, -50, -25, -12, -6, -3, -2, 4, 6, 7, 9, 10, 11, 12, 100, 126]
        raw = f16_bytes(0.25) + struct.pack("<32b", *quants)
        expected = [-32.0, -31.75, -16.0, -0.25, 0.0, 0.25, 0.5, 0.75, 1.25, 2.0, 3.25, 5.25,
                    8.5, 13.75, 22.25, 31.75, -25.0, -12.5, -6.25, -3.0, -1.5, -0.75, -0.5,
                    1.0, 1.5, 1.75, 2.25, 2.5, 2.75, 3.0, 25.0, 31.5]
        self.assert_values(dequantize("Q8_0", raw), expected)

    def test_q4_0(self):
        # block: f16 d = 0.5, then 16 bytes; byte j holds element j in its low nibble and
        # element j+16 in its high nibble; value = (nibble - 8) * d.
        # Low nibbles 0..15 and high nibbles 15..0:
        packed = bytes(j | ((15 - j) << 4) for j in range(16))
        raw = f16_bytes(0.5) + packed
        expected = [-4.0, -3.5, -3.0, -2.5, -2.0, -1.5, -1.0, -0.5,
                    0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5,
                    3.5, 3.0, 2.5, 2.0, 1.5, 1.0, 0.5, 0.0,
                    -0.5, -1.0, -1.5, -2.0, -2.5, -3.0, -3.5, -4.0]
        self.assert_values(dequantize("Q4_0", raw), expected)

    def test_q4_0_two_blocks_in_order(self):
        # Blocks follow each other: the second block's scale applies to elements 32..63.
        first = f16_bytes(1.0) + bytes([0x88] * 16)  # every nibble 8 -> 0
        second = f16_bytes(-2.0) + bytes([0x9A] * 16)  # low 10 -> -4, high 9 -> -2
        self.assert_values(dequantize("Q4_0", first + second),
                           [0.0] * 32 + [-4.0] * 16 + [-2.0] * 16)

    def test_q4_k(self):
        # Super-block of 256 = 8 sub-blocks of 32. Layout: f16 d, f16 dmin, 12 bytes of
        # packed 6-bit scales and mins, 128 bytes of nibbles.
        # value(sub-block s, quant q) = d * scale[s] * q - dmin * min[s].
        d, dmin = 0.5, 0.25
        scales = [1, 2, 63, 17, 33, 48, 5, 60]  # values >= 16 in 4..7 use the split bits
        mins = [0, 3, 62, 16, 47, 31, 1, 63]
        packed_scales = bytearray(12)
        for j in range(4):
            # bytes 0..3: scale[j] in bits 0..5, bits 4..5 of scale[j+4] in bits 6..7
            packed_scales[j] = scales[j] | ((scales[j + 4] >> 4) << 6)
            # bytes 4..7: min[j] in bits 0..5, bits 4..5 of min[j+4] in bits 6..7
            packed_scales[j + 4] = mins[j] | ((mins[j + 4] >> 4) << 6)
            # bytes 8..11: low 4 bits of scale[j+4] and, above them, of min[j+4]
            packed_scales[j + 8] = (scales[j + 4] & 0xF) | ((mins[j + 4] & 0xF) << 4)
        # Quant of element e (0..15), varied so that every nibble position matters.
        quants = [(7 * e + e // 32) % 16 for e in range(256)]
        nibbles = bytearray(128)
        for e, q in enumerate(quants):
            # Elements 64c..64c+31 are the low nibbles of bytes 32c..32c+31, elements
            # 64c+32..64c+63 the high nibbles of the same bytes.
            chunk, within = divmod(e, 64)
            half, lane = divmod(within, 32)
            nibbles[32 * chunk + lane] |= q << (4 * half)
        raw = f16_bytes(d) + f16_bytes(dmin) + bytes(packed_scales) + bytes(nibbles)
        expected = [d * scales[e // 32] * quants[e] - dmin * mins[e // 32] for e in range(256)]
        # A few values worked out by hand, guarding the formula itself:
        self.assertEqual(expected[0], 0.0)  # 0.5*1*0 - 0.25*0
        self.assertEqual(expected[1], 3.5)  # 0.5*1*7 - 0
        self.assertEqual(expected[70], 0.5 * 63 * ((7 * 70 + 2) % 16) - 0.25 * 62)
        self.assertEqual(expected[255], 0.5 * 60 * ((7 * 255 + 7) % 16) - 0.25 * 63)
        self.assert_values(dequantize("Q4_K", raw), expected)

    def test_q4_k_scale_unpacking(self):
        # get_scale_min_k4 by hand for one packing: bytes 0..3 = 0xC1 (scale 1, top bits
        # 3), 4..7 = 0x42 (min 2, top bits 1), 8..11 = 0x5A (low nibbles 10 and 5).
        # Sub-blocks 4..7: scale = 10 | 3 << 4 = 58, min = 5 | 1 << 4 = 21.
        packed = np.array([[0xC1] * 4 + [0x42] * 4 + [0x5A] * 4], dtype=np.uint8)
        scales, mins = ggml_dequant.q4_k_scales_and_mins(packed)
        self.assertEqual(list(scales[0]), [1, 1, 1, 1, 58, 58, 58, 58])
        self.assertEqual(list(mins[0]), [2, 2, 2, 2, 21, 21, 21, 21])

    def test_q6_k(self):
        # Super-block of 256 = 16 sub-blocks of 16. Layout: ql[128] (low 4 bits),
        # qh[64] (high 2 bits), int8 scales[16], f16 d. value = d * scale[e/16] * (q - 32).
        d = 0.125
        scales = [1, -1, 2, -2, 3, 127, -128, 4, 5, -6, 7, 8, -9, 10, 11, 12]
        quants = [(5 * e + e // 64) % 64 for e in range(256)]  # 6-bit, 0..63
        ql = bytearray(128)
        qh = bytearray(64)
        for e, q in enumerate(quants):
            # Half n of 128 elements uses ql[64n..], qh[32n..]. Quarter k (32 elements)
            # at lane l: low 4 bits in ql[64n + l] (k = 0, 2) or ql[64n + 32 + l]
            # (k = 1, 3), low nibble for k < 2, high nibble for k >= 2; high 2 bits in
            # bits 2k..2k+1 of qh[32n + l].
            half, within = divmod(e, 128)
            quarter, lane = divmod(within, 32)
            ql_index = 64 * half + 32 * (quarter % 2) + lane
            ql[ql_index] |= (q & 0xF) << (4 * (quarter // 2))
            qh[32 * half + lane] |= (q >> 4) << (2 * quarter)
        raw = bytes(ql) + bytes(qh) + struct.pack("<16b", *scales) + f16_bytes(d)
        expected = [d * scales[e // 16] * (quants[e] - 32) for e in range(256)]
        self.assertEqual(expected[0], 0.125 * 1 * (0 - 32))
        self.assertEqual(expected[16], 0.125 * -1 * (16 - 32))
        self.assertEqual(expected[100], 0.125 * -128 * ((500 + 1) % 64 - 32))
        self.assert_values(dequantize("Q6_K", raw), expected)

    def test_q2_k(self):
        # d = 0.5, dmin = 0.25; pair j holds scale j in the low nibble and min 15 - j in
        # the high one; byte l of half n holds the 2-bit levels of elements
        # 128n + 32t + l in bits 2t..2t+1, here (l + t + n) % 4.
        block = bytearray(84)
        for j in range(16):
            block[j] = j | ((15 - j) << 4)
        for n in range(2):
            for l in range(32):
                block[16 + 32 * n + l] = sum(((l + t + n) % 4) << (2 * t) for t in range(4))
        block[80:82] = f16_bytes(0.5)
        block[82:84] = f16_bytes(0.25)
        expected = []
        for e in range(256):
            n, t, l = e // 128, (e % 128) // 32, e % 32
            j = 8 * n + 2 * t + l // 16
            expected.append(0.5 * j * ((l + t + n) % 4) - 0.25 * (15 - j))
        self.assert_values(dequantize("Q2_K", block), expected)

    def test_q3_k(self):
        # d = 0.25; six-bit scale j = 2j + 1 (low nibble in byte j % 8 of the scales,
        # low or high half by j < 8; top two bits at bits 2(j // 4) of byte 8 + j % 4);
        # level = low bits (l + t) % 4, + 4 where the third bit (bit 4n + t of hmask[l],
        # set when l + n + t is odd), - 4; y = 0.25 * (scale - 32) * level.
        block = bytearray(110)
        for j in range(16):
            scale = 2 * j + 1
            if j < 8:
                block[96 + j] |= scale & 0xF
            else:
                block[96 + j - 8] |= (scale & 0xF) << 4
            block[104 + j % 4] |= (scale >> 4) << (2 * (j // 4))
        for n in range(2):
            for l in range(32):
                for t in range(4):
                    block[32 + 32 * n + l] |= ((l + t) % 4) << (2 * t)
                    if (l + n + t) % 2:
                        block[l] |= 1 << (4 * n + t)
        block[108:110] = f16_bytes(0.25)
        expected = []
        for e in range(256):
            n, t, l = e // 128, (e % 128) // 32, e % 32
            j = 8 * n + 2 * t + l // 16
            level = (l + t) % 4 + 4 * ((l + n + t) % 2) - 4
            expected.append(0.25 * (2 * j + 1 - 32) * level)
        self.assert_values(dequantize("Q3_K", block), expected)

    def test_q5_k(self):
        # d = 0.125, dmin = 0.5; sub-block s has scale s + 1 and min 2s (Q4_K's 6-bit
        # packing); element 64c + 32h + l has level (l % 16) + 16 * ((l + c + h) % 2),
        # its fifth bit at bit 2c + h of qh[l]; y = 0.125 (s + 1) level - 0.5 * 2s.
        block = bytearray(176)
        for s_ in range(8):
            scale, minimum = s_ + 1, 2 * s_
            if s_ < 4:
                block[4 + s_] = scale
                block[8 + s_] = minimum
            else:
                block[8 + s_] = (scale & 0xF) | ((minimum & 0xF) << 4)
                block[s_] |= (scale >> 4) << 6
                block[4 + s_] |= (minimum >> 4) << 6
        for c in range(4):
            for l in range(32):
                block[48 + 32 * c + l] = (l % 16) | ((l % 16) << 4)
                for h in range(2):
                    if (l + c + h) % 2:
                        block[16 + l] |= 1 << (2 * c + h)
        block[0:2] = f16_bytes(0.125)
        block[2:4] = f16_bytes(0.5)
        expected = []
        for e in range(256):
            c, h, l = e // 64, (e % 64) // 32, e % 32
            s_ = 2 * c + h
            level = l % 16 + 16 * ((l + c + h) % 2)
            expected.append(0.125 * (s_ + 1) * level - 0.5 * 2 * s_)
        self.assert_values(dequantize("Q5_K", block), expected)

    def test_rejects_partial_block(self):
        with self.assertRaises(Exception):
            dequantize("Q8_0", bytes(33))


if __name__ == "__main__":
    unittest.main(verbosity=2)
