"""Float64 Llama-family forward pass (llama, mistral, qwen2) over GGUF weights, with a KV cache."""

import math
from dataclasses import dataclass

import numpy as np

from ggml_dequant import dequantize_tensor
from gguf_file import GGUFError

SUPPORTED_ARCHITECTURES = ("llama", "mistral", "qwen2")
# llama.cpp rotates adjacent pairs for llama-style models ("normal" mode) and the two
# halves of the rotary dims for qwen2 ("NeoX" mode).
NEOX_ROPE_ARCHITECTURES = ("qwen2",)
BIASED_QKV_ARCHITECTURES = ("qwen2",)


@dataclass(frozen=True)
class Hyperparameters:
    architecture: str
    n_embd: int
    n_layer: int
    n_ff: tuple  # per layer: GGUF allows one value or one per block
    n_head: int
    n_head_kv: int
    head_dim_k: int
    head_dim_v: int
    rms_eps: float
    rope_base: float
    rope_position_scale: float
    n_rot: int
    rope_neox: bool
    context_length: int
    vocab_size: int

    @staticmethod
    def from_gguf(gguf):
        architecture = gguf.get("general.architecture")
        if architecture not in SUPPORTED_ARCHITECTURES:
            raise GGUFError(f"architecture {architecture!r} is not supported "
                            f"({', '.join(SUPPORTED_ARCHITECTURES)})")

        def key(name, default=None):
            value = gguf.get(f"{architecture}.{name}", default)
            if value is None:
                raise GGUFError(f"metadata {architecture}.{name} is missing")
            return value

        n_embd = int(key("embedding_length"))
        n_layer = int(key("block_count"))
        n_head = int(key("attention.head_count"))
        n_head_kv = int(key("attention.head_count_kv", n_head))
        if n_head <= 0 or n_head_kv <= 0 or n_head % n_head_kv:
            raise GGUFError(f"head_count {n_head} is not a multiple of head_count_kv {n_head_kv}")
        head_dim_k = int(key("attention.key_length", n_embd // n_head))
        head_dim_v = int(key("attention.value_length", n_embd // n_head))
        n_ff = key("feed_forward_length")
        n_ff = tuple(int(v) for v in n_ff) if np.ndim(n_ff) else (int(n_ff),) * n_layer
        if len(n_ff) != n_layer:
            raise GGUFError(f"feed_forward_length has {len(n_ff)} entries for {n_layer} blocks")
        n_rot = int(key("rope.dimension_count", head_dim_k))
        if n_rot % 2 or n_rot > head_dim_k:
            raise GGUFError(f"rope.dimension_count {n_rot} must be even and <= head dim {head_dim_k}")

        scaling_type = gguf.get(f"{architecture}.rope.scaling.type", "none")
        if scaling_type == "linear":
            rope_position_scale = 1.0 / float(key("rope.scaling.factor"))
        elif scaling_type == "none":
            rope_position_scale = 1.0
        else:
            raise GGUFError(f"rope scaling {scaling_type!r} is not supported (none, linear)")

        if "token_embd.weight" not in gguf.tensors:
            raise GGUFError("tensor 'token_embd.weight' is missing")
        vocab_size = gguf.tensors["token_embd.weight"].numpy_shape[0]
        return Hyperparameters(
            architecture=architecture,
            n_embd=n_embd,
            n_layer=n_layer,
            n_ff=n_ff,
            n_head=n_head,
            n_head_kv=n_head_kv,
            head_dim_k=head_dim_k,
            head_dim_v=head_dim_v,
            rms_eps=float(key("attention.layer_norm_rms_epsilon")),
            rope_base=float(key("rope.freq_base", 10000.0)),
            rope_position_scale=rope_position_scale,
            n_rot=n_rot,
            rope_neox=architecture in NEOX_ROPE_ARCHITECTURES,
            context_length=int(key("context_length")),
            vocab_size=vocab_size,
        )


class KVCache:
    """Keys (after RoPE) and values of every processed position, per layer."""

    def __init__(self, hparams, capacity):
        self.capacity = capacity
        self.length = 0
        self.keys = [np.zeros((capacity, hparams.n_head_kv, hparams.head_dim_k))
                     for _ in range(hparams.n_layer)]
        self.values = [np.zeros((capacity, hparams.n_head_kv, hparams.head_dim_v))
                       for _ in range(hparams.n_layer)]


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def silu(x):
    # The tanh form cannot overflow for large negative x, unlike x / (1 + exp(-x)).
    return x * 0.5 * (1.0 + np.tanh(0.5 * x))


def softmax(scores, axis):
    shifted = scores - np.max(scores, axis=axis, keepdims=True)
    weights = np.exp(shifted)
    return weights / np.sum(weights, axis=axis, keepdims=True)


# ggml type codes of the block formats the CPU multiplies with int8 activations.
INT8_DOT_TYPES = {2, 8, 12, 13, 14}  # Q4_0, Q8_0, Q4_K, Q5_K, Q6_K
# The CPU's int8 kernels take whole 512-bit vectors (64 codes) of a row; a
# matmul with other row lengths keeps float activations.
INT8_DOT_ROW_MULTIPLE = 64


def quantize_activations(x):
    """x (rows, K) as the CPU's int8 matmuls see it: its float32 values in blocks
    of 32, each block's scale d = max|x| / 127 and codes roundeven(x * (1/d)),
    all in float32; returns d * code in float64 (exact)."""
    blocks = x.astype(np.float32).reshape(x.shape[0], -1, 32)
    scale = np.max(np.abs(blocks), axis=2, keepdims=True) / np.float32(127)
    safe = np.where(scale == 0, np.float32(1), scale)
    inverse = np.where(scale == 0, np.float32(0), np.float32(1) / safe)
    codes = np.rint(blocks * inverse)
    return (codes.astype(np.float64) * scale.astype(np.float64)).reshape(x.shape)


# ggml type codes of the float formats the CPU's AMX variants can multiply
# through bf16 tiles in a prompt's matmuls (F32, F16, BF16), and the weight
# shapes they take: rows and row length multiples of 32.
BF16_TILE_TYPES = {"f32": 0, "f16": 1, "bf16": 30}
BF16_TILE_MULTIPLE = 32


def round_to_bf16(x):
    """x's float32 values rounded to bfloat16 (to nearest, ties to even), as
    float64 (exact)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) \
        & np.uint32(0xFFFF0000)
    return rounded.view(np.float32).astype(np.float64)


# KV-cache element types hetc packs: keys and values as stored.
KV_ELEMENT_TYPES = {"f32": np.float32, "f16": np.float16}


class LlamaReference:
    """Weights dequantized once and held in float64; every step computes in float64.

    With int8_activations, a matmul whose weight is a block format the CPU
    multiplies with int8 dot products (INT8_DOT_TYPES, rows a multiple of
    INT8_DOT_ROW_MULTIPLE) first rounds its activations as those kernels do.
    With kv_element_type "f16", keys and values are rounded to float16 as
    they enter the cache (from their float32 values, as the CPU does).
    With bf16_tile_types (names in BF16_TILE_TYPES), a prompt's matmul whose
    weight has one of those formats and a shape the tiles take rounds its
    activations and its weight to bfloat16, as the AMX bf16 tile kernels do
    (the sums stay exact here; the tiles add in float32)."""

    def __init__(self, gguf, int8_activations=False, kv_element_type="f32",
                 bf16_tile_types=()):
        if kv_element_type not in KV_ELEMENT_TYPES:
            raise ValueError(f"KV element type {kv_element_type!r} is not one of "
                             f"{sorted(KV_ELEMENT_TYPES)}")
        self.gguf = gguf
        self.int8_activations = int8_activations
        self.kv_element_type = kv_element_type
        self.int8_weights = set()
        unknown = set(bf16_tile_types) - set(BF16_TILE_TYPES)
        if unknown:
            raise ValueError(f"bf16 tile types {sorted(unknown)} are not among "
                             f"{sorted(BF16_TILE_TYPES)}")
        self.bf16_tile_codes = {BF16_TILE_TYPES[name] for name in bf16_tile_types}
        # By id of the float64 weight: its bfloat16 rounding.
        self.bf16_tile_weights = {}
        self._prefill = False
        self.hparams = Hyperparameters.from_gguf(gguf)
        hp = self.hparams
        self.token_embedding_name = "token_embd.weight"
        self._check_shape(self.token_embedding_name, (hp.vocab_size, hp.n_embd))
        self.layers = [self._load_layer(index) for index in range(hp.n_layer)]
        self.output_norm = self._weight("output_norm.weight", (hp.n_embd,))
        # A missing output.weight means the classifier is tied to the embedding table.
        output_name = "output.weight" if "output.weight" in gguf.tensors else "token_embd.weight"
        self.output = self._weight(output_name, (hp.vocab_size, hp.n_embd))
        self.rope_inverse_frequencies = hp.rope_base ** (
            -np.arange(0, hp.n_rot, 2, dtype=np.float64) / hp.n_rot)

    def _check_shape(self, name, shape):
        if name not in self.gguf.tensors:
            raise GGUFError(f"tensor {name!r} is missing")
        actual = self.gguf.tensors[name].numpy_shape
        if actual != shape:
            raise GGUFError(f"tensor {name!r} has shape {actual}, expected {shape}")

    def _weight(self, name, shape):
        self._check_shape(name, shape)
        weight = dequantize_tensor(self.gguf, name).astype(np.float64)
        if (self.gguf.tensors[name].type_code in INT8_DOT_TYPES and len(shape) == 2
                and shape[1] % INT8_DOT_ROW_MULTIPLE == 0):
            self.int8_weights.add(id(weight))
        if (self.gguf.tensors[name].type_code in self.bf16_tile_codes and len(shape) == 2
                and shape[0] % BF16_TILE_MULTIPLE == 0 and shape[1] % BF16_TILE_MULTIPLE == 0):
            self.bf16_tile_weights[id(weight)] = round_to_bf16(weight)
        return weight

    def _project(self, x, weight):
        """x @ weight.T, with x rounded to int8 blocks where the CPU does so."""
        if self.int8_activations and id(weight) in self.int8_weights:
            x = quantize_activations(x)
        elif self._prefill and id(weight) in self.bf16_tile_weights:
            return round_to_bf16(x) @ self.bf16_tile_weights[id(weight)].T
        return x @ weight.T

    def _load_layer(self, index):
        hp = self.hparams
        prefix = f"blk.{index}."
        q_width = hp.n_head * hp.head_dim_k
        k_width = hp.n_head_kv * hp.head_dim_k
        v_width = hp.n_head_kv * hp.head_dim_v
        n_ff = hp.n_ff[index]
        layer = {
            "attn_norm": self._weight(prefix + "attn_norm.weight", (hp.n_embd,)),
            "attn_q": self._weight(prefix + "attn_q.weight", (q_width, hp.n_embd)),
            "attn_k": self._weight(prefix + "attn_k.weight", (k_width, hp.n_embd)),
            "attn_v": self._weight(prefix + "attn_v.weight", (v_width, hp.n_embd)),
            "attn_output": self._weight(prefix + "attn_output.weight",
                                        (hp.n_embd, hp.n_head * hp.head_dim_v)),
            "ffn_norm": self._weight(prefix + "ffn_norm.weight", (hp.n_embd,)),
            "ffn_gate": self._weight(prefix + "ffn_gate.weight", (n_ff, hp.n_embd)),
            "ffn_up": self._weight(prefix + "ffn_up.weight", (n_ff, hp.n_embd)),
            "ffn_down": self._weight(prefix + "ffn_down.weight", (hp.n_embd, n_ff)),
        }
        for projection, width in (("attn_q", q_width), ("attn_k", k_width), ("attn_v", v_width)):
            bias_name = f"{prefix}{projection}.bias"
            if bias_name in self.gguf.tensors:
                layer[projection + "_bias"] = self._weight(bias_name, (width,))
            elif hp.architecture in BIASED_QKV_ARCHITECTURES:
                raise GGUFError(f"tensor {bias_name!r} is missing ({hp.architecture} has Q/K/V biases)")
        return layer

    def _stored(self, x):
        """x as the KV cache holds it; f32 caches are taken as exact (the
        reference's float64 stands for the CPU's float32 arithmetic)."""
        if self.kv_element_type == "f32":
            return x
        element = KV_ELEMENT_TYPES[self.kv_element_type]
        return x.astype(np.float32).astype(element).astype(np.float64)

    def new_cache(self, capacity):
        if capacity > self.hparams.context_length:
            raise GGUFError(f"{capacity} positions exceed the model's context length "
                            f"{self.hparams.context_length}")
        return KVCache(self.hparams, capacity)

    def _rope(self, x, positions):
        """Rotates the first n_rot dims of every head of x (tokens, heads, dim) in place."""
        hp = self.hparams
        angles = (positions * hp.rope_position_scale)[:, None] * self.rope_inverse_frequencies
        cos = np.cos(angles)[:, None, :]  # (tokens, 1, n_rot/2), shared by all heads
        sin = np.sin(angles)[:, None, :]
        if hp.rope_neox:
            half = hp.n_rot // 2
            first, second = x[..., :half].copy(), x[..., half:hp.n_rot].copy()
            x[..., :half] = first * cos - second * sin
            x[..., half:hp.n_rot] = first * sin + second * cos
        else:
            even, odd = x[..., 0:hp.n_rot:2].copy(), x[..., 1:hp.n_rot:2].copy()
            x[..., 0:hp.n_rot:2] = even * cos - odd * sin
            x[..., 1:hp.n_rot:2] = even * sin + odd * cos

    def forward(self, token_ids, cache, prefill=None):
        """Appends token_ids at the cache's next positions; returns their logits
        (len(token_ids), vocab) in float64. prefill says whether hetc runs
        them as a prompt (its prefill entry point, where bf16 tiles apply);
        by default, when there are several or the cache is empty."""
        hp = self.hparams
        token_ids = np.asarray(token_ids, dtype=np.int64)
        count = len(token_ids)
        start = cache.length
        self._prefill = prefill if prefill is not None else (count > 1 or start == 0)
        if start + count > cache.capacity:
            raise GGUFError(f"KV cache of {cache.capacity} positions is full")
        if np.any((token_ids < 0) | (token_ids >= hp.vocab_size)):
            raise GGUFError(f"token id out of range [0, {hp.vocab_size})")
        end = start + count
        positions = np.arange(start, end, dtype=np.float64)
        heads_per_kv = hp.n_head // hp.n_head_kv
        scale = 1.0 / math.sqrt(hp.head_dim_k)
        # Query t (at position start+t) may see cached positions 0..start+t only.
        causal_mask = np.arange(end)[None, :] > (start + np.arange(count))[:, None]

        x = dequantize_tensor(self.gguf, self.token_embedding_name, rows=token_ids).astype(np.float64)
        for layer_index, layer in enumerate(self.layers):
            h = rms_norm(x, layer["attn_norm"], hp.rms_eps)
            q = self._project(h, layer["attn_q"])
            k = self._project(h, layer["attn_k"])
            v = self._project(h, layer["attn_v"])
            if "attn_q_bias" in layer:
                q += layer["attn_q_bias"]
            if "attn_k_bias" in layer:
                k += layer["attn_k_bias"]
            if "attn_v_bias" in layer:
                v += layer["attn_v_bias"]
            q = q.reshape(count, hp.n_head, hp.head_dim_k)
            k = k.reshape(count, hp.n_head_kv, hp.head_dim_k)
            v = v.reshape(count, hp.n_head_kv, hp.head_dim_v)
            self._rope(q, positions)
            self._rope(k, positions)
            cache.keys[layer_index][start:end] = self._stored(k)
            cache.values[layer_index][start:end] = self._stored(v)
            # GQA: query head i reads KV head i // heads_per_kv.
            keys = np.repeat(cache.keys[layer_index][:end], heads_per_kv, axis=1)
            values = np.repeat(cache.values[layer_index][:end], heads_per_kv, axis=1)
            scores = np.einsum("thd,shd->hts", q, keys) * scale
            scores[:, causal_mask] = -np.inf
            attention = np.einsum("hts,shd->thd", softmax(scores, axis=-1), values)
            x = x + self._project(attention.reshape(count, hp.n_head * hp.head_dim_v),
                                  layer["attn_output"])

            h = rms_norm(x, layer["ffn_norm"], hp.rms_eps)
            gated = silu(self._project(h, layer["ffn_gate"])) * self._project(h, layer["ffn_up"])
            x = x + self._project(gated, layer["ffn_down"])
        cache.length = end
        return self._project(rms_norm(x, self.output_norm, hp.rms_eps), self.output)


def greedy_generate(model, prompt_ids, generate_count):
    """Prefills the prompt as one batch, then decodes greedily (argmax, ties to the
    lowest id). Returns (generated ids, logits of every processed position): row r is
    the logits after the token at position r; len(prompt) + generate_count - 1 rows,
    since the last generated token is never fed back."""
    if not prompt_ids:
        raise ValueError("the prompt must hold at least one token")
    cache = model.new_cache(len(prompt_ids) + max(generate_count - 1, 0))
    logits_rows = [model.forward(prompt_ids, cache)]
    generated = []
    for step in range(generate_count):
        next_id = int(np.argmax(logits_rows[-1][-1]))  # np.argmax returns the first maximum
        generated.append(next_id)
        if step + 1 < generate_count:
            logits_rows.append(model.forward([next_id], cache))
    return generated, np.concatenate(logits_rows, axis=0)
