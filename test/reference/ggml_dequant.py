"""Dequantization of ggml block formats (F32, F16, BF16, Q8_0, Q4_0, Q2_K, Q3_K, Q4_K, Q5_K,
Q6_K) to float32.

Each function reproduces ggml's dequantize_row_* arithmetic in float32, step for step,
so the values are bit-identical to ggml's; callers upcast to float64 afterwards.
"""

import numpy as np

from gguf_file import GGML_TYPES, GGUFError, ggml_type_name

QK4_0 = 32
QK8_0 = 32
QK_K = 256


def _f16_field(blocks, start):
    """A little-endian half-precision field of every block, widened exactly to float32."""
    return np.ascontiguousarray(blocks[:, start:start + 2]).view("<f2")[:, 0].astype(np.float32)


def dequantize_f32(raw):
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


def dequantize_f16(raw):
    return np.frombuffer(raw, dtype="<f2").astype(np.float32)


def dequantize_bf16(raw):
    # bfloat16 is the upper half of a float32.
    upper = np.frombuffer(raw, dtype="<u2").astype(np.uint32)
    return (upper << 16).view(np.float32)


def dequantize_q8_0(raw):
    # block: f16 d, int8 qs[32]; y = qs * d
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 2 + QK8_0)
    scale = _f16_field(blocks, 0)
    quants = blocks[:, 2:].view(np.int8).astype(np.float32)
    return (quants * scale[:, None]).reshape(-1)


def dequantize_q4_0(raw):
    # block: f16 d, uint8 qs[16]; element j is the low nibble of qs[j], element j+16 the
    # high nibble; y = (nibble - 8) * d
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 2 + QK4_0 // 2)
    scale = _f16_field(blocks, 0)
    packed = blocks[:, 2:]
    nibbles = np.concatenate([packed & 0x0F, packed >> 4], axis=1)
    return ((nibbles.astype(np.int32) - 8).astype(np.float32) * scale[:, None]).reshape(-1)


def q4_k_scales_and_mins(scales_bytes):
    """Unpacks the 8 six-bit (scale, min) pairs of Q4_K blocks (ggml's get_scale_min_k4).

    Sub-blocks 0..3 use the low 6 bits of bytes 0..3 (scales) and 4..7 (mins); sub-blocks
    4..7 take their low 4 bits from the nibbles of bytes 8..11 and their top 2 bits from
    the spare top bits of bytes 0..3 (scales) and 4..7 (mins).
    """
    packed = scales_bytes.astype(np.uint32)
    scales = np.empty((packed.shape[0], 8), dtype=np.uint32)
    mins = np.empty((packed.shape[0], 8), dtype=np.uint32)
    scales[:, 0:4] = packed[:, 0:4] & 63
    mins[:, 0:4] = packed[:, 4:8] & 63
    scales[:, 4:8] = (packed[:, 8:12] & 0x0F) | ((packed[:, 0:4] >> 6) << 4)
    mins[:, 4:8] = (packed[:, 8:12] >> 4) | ((packed[:, 4:8] >> 6) << 4)
    return scales, mins


def dequantize_q4_k(raw):
    # block: f16 d, f16 dmin, uint8 scales[12], uint8 qs[128]; 8 sub-blocks of 32.
    # Sub-blocks 2c and 2c+1 are the low and high nibbles of qs[32c:32c+32];
    # y = (d*scale) * q - (dmin*min), each product rounded to float32 as in ggml.
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 4 + 12 + QK_K // 2)
    super_scale = _f16_field(blocks, 0)
    super_min = _f16_field(blocks, 2)
    scales, mins = q4_k_scales_and_mins(blocks[:, 4:16])
    sub_scale = super_scale[:, None] * scales.astype(np.float32)  # (blocks, 8)
    sub_min = super_min[:, None] * mins.astype(np.float32)
    packed = blocks[:, 16:].reshape(-1, 4, 32)
    # (blocks, chunk, nibble half, 32) -> sub-block index 2*chunk + half
    nibbles = np.stack([packed & 0x0F, packed >> 4], axis=2).reshape(-1, 8, 32)
    values = sub_scale[:, :, None] * nibbles.astype(np.float32) - sub_min[:, :, None]
    return values.reshape(-1)


def dequantize_q6_k(raw):
    # block: uint8 ql[128], uint8 qh[64], int8 scales[16], f16 d; 16 sub-blocks of 16.
    # Each 128-element half n uses ql[64n:64n+64] and qh[32n:32n+32]: for l < 32 its
    # quarter k (elements 32k+l) takes low/high nibble of ql[l] (k=0/2) or ql[l+32]
    # (k=1/3) and bits 2k..2k+1 of qh[l]; y = (d*scale[e/16]) * (q - 32).
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, QK_K // 2 + QK_K // 4 + QK_K // 16 + 2)
    low_bits = blocks[:, 0:128].reshape(-1, 2, 2, 32)  # (block, half, ql row 0/1, l)
    high_bits = blocks[:, 128:192].reshape(-1, 2, 32)  # (block, half, l)
    scales = blocks[:, 192:208].view(np.int8).astype(np.float32)
    super_scale = _f16_field(blocks, 208)
    quarters = []
    for quarter in range(4):
        ql_row = low_bits[:, :, quarter % 2, :]
        low4 = (ql_row & 0x0F) if quarter < 2 else (ql_row >> 4)
        high2 = (high_bits >> (2 * quarter)) & 3
        quarters.append(low4.astype(np.int32) | (high2.astype(np.int32) << 4))
    quants = np.stack(quarters, axis=2).reshape(-1, 16, 16) - 32  # (block, sub-block, 16)
    sub_scale = super_scale[:, None] * scales  # (blocks, 16)
    return (sub_scale[:, :, None] * quants.astype(np.float32)).reshape(-1)


def _two_bit_levels(packed):
    """The 256 two-bit levels of Q2_K/Q3_K blocks in element order: in each half of 128,
    byte l of the half's 32 holds elements l, l+32, l+64 and l+96 (bits 0-1 .. 6-7)."""
    halves = packed.reshape(-1, 2, 32)
    levels = np.stack([(halves >> (2 * t)) & 3 for t in range(4)], axis=2)  # (b, half, t, l)
    return levels.reshape(-1, QK_K).astype(np.int32)


def dequantize_q2_k(raw):
    # block: uint8 scales[16] (low nibble scale, high nibble min per 16), uint8 qs[64],
    # f16 d, f16 dmin; y = (d*scale) * q - (dmin*min), each product rounded to float32.
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 84)
    pairs = blocks[:, 0:16].astype(np.uint32)
    d = _f16_field(blocks, 80)
    dmin = _f16_field(blocks, 82)
    sub_scale = d[:, None] * (pairs & 0xF).astype(np.float32)  # (blocks, 16)
    sub_min = dmin[:, None] * (pairs >> 4).astype(np.float32)
    quants = _two_bit_levels(blocks[:, 16:80]).reshape(-1, 16, 16).astype(np.float32)
    return (sub_scale[:, :, None] * quants - sub_min[:, :, None]).reshape(-1)


def q3_k_scales(scales_bytes):
    """The 16 six-bit scales of Q3_K blocks: scale j has its low 4 bits in the low
    (j < 8) or high (j >= 8) nibble of byte j mod 8 and its top 2 bits at bits
    2*(j // 4) of byte 8 + j mod 4."""
    packed = scales_bytes.astype(np.int32)
    scales = np.empty((packed.shape[0], 16), dtype=np.int32)
    for j in range(16):
        low = (packed[:, j] & 0xF) if j < 8 else (packed[:, j - 8] >> 4)
        high = (packed[:, 8 + j % 4] >> (2 * (j // 4))) & 3
        scales[:, j] = low | (high << 4)
    return scales


def dequantize_q3_k(raw):
    # block: uint8 hmask[32], uint8 qs[64], uint8 scales[12], f16 d; 16 sub-blocks of 16.
    # Element e = 128n + 32t + l has low bits from qs as Q2_K and its third bit at bit
    # 4n + t of hmask[l]; a clear bit subtracts 4. y = (d*(scale - 32)) * q.
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 110)
    low = _two_bit_levels(blocks[:, 32:96])
    hmask = blocks[:, 0:32].astype(np.int32)
    high = np.stack([(hmask >> bit) & 1 for bit in range(8)], axis=1).reshape(-1, QK_K)
    quants = (low - 4 * (1 - high)).reshape(-1, 16, 16).astype(np.float32)
    d = _f16_field(blocks, 108)
    sub_scale = d[:, None] * (q3_k_scales(blocks[:, 96:108]) - 32).astype(np.float32)
    return (sub_scale[:, :, None] * quants).reshape(-1)


def dequantize_q5_k(raw):
    # block: f16 d, f16 dmin, uint8 scales[12] (as Q4_K), uint8 qh[32], uint8 qs[128];
    # 8 sub-blocks of 32. Sub-blocks 2c and 2c+1 are the low and high nibbles of
    # qs[32c:32c+32] with fifth bits 2c and 2c+1 of qh; y = (d*scale) * q - (dmin*min).
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 176)
    super_scale = _f16_field(blocks, 0)
    super_min = _f16_field(blocks, 2)
    scales, mins = q4_k_scales_and_mins(blocks[:, 4:16])
    sub_scale = super_scale[:, None] * scales.astype(np.float32)
    sub_min = super_min[:, None] * mins.astype(np.float32)
    qh = blocks[:, 16:48].astype(np.int32)
    packed = blocks[:, 48:].reshape(-1, 4, 32).astype(np.int32)
    nibbles = np.stack([packed & 0x0F, packed >> 4], axis=2).reshape(-1, 8, 32)
    fifth = np.stack([(qh >> s) & 1 for s in range(8)], axis=1)  # (blocks, sub-block, 32)
    quants = (nibbles | (fifth << 4)).astype(np.float32)
    return (sub_scale[:, :, None] * quants - sub_min[:, :, None]).reshape(-1)


DEQUANTIZERS = {
    "F32": dequantize_f32,
    "F16": dequantize_f16,
    "BF16": dequantize_bf16,
    "Q8_0": dequantize_q8_0,
    "Q4_0": dequantize_q4_0,
    "Q2_K": dequantize_q2_k,
    "Q3_K": dequantize_q3_k,
    "Q4_K": dequantize_q4_k,
    "Q5_K": dequantize_q5_k,
    "Q6_K": dequantize_q6_k,
}


def dequantize(type_code, raw):
    """Dequantizes a whole number of blocks of `type_code` to a flat float32 array."""
    name = ggml_type_name(type_code)
    function = DEQUANTIZERS.get(name)
    if function is None:
        raise GGUFError(f"dequantization of {name} is not implemented")
    _, _, block_bytes = GGML_TYPES[type_code]
    raw = np.asarray(raw, dtype=np.uint8)
    if raw.size % block_bytes:
        raise GGUFError(f"{raw.size} bytes is not a whole number of {name} blocks")
    return function(raw)


def dequantize_tensor(gguf, name, rows=None):
    """A tensor as a float32 array of its row-major shape, or only the given rows of
    its 2-D view (innermost dim x everything else), which avoids expanding a whole
    quantized embedding table to look up a few tokens."""
    info = gguf.tensors[name]
    raw = gguf.tensor_bytes(name)
    if rows is None:
        return dequantize(info.type_code, raw).reshape(info.numpy_shape)
    row_bytes = info.nbytes // (info.n_elements // info.dims[0])
    matrix = np.asarray(raw).reshape(-1, row_bytes)
    return np.stack([dequantize(info.type_code, matrix[row]) for row in rows])
