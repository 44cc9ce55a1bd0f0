"""Unit tests of llama_model on tiny random GGUF models against a loop-by-loop restatement."""

import math
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from gguf_file import VALUE_FLOAT32, VALUE_STRING, VALUE_UINT32, GGUFFile  # noqa: E402
from gguf_test_writer import build_gguf, f32_tensor  # noqa: E402
from llama_model import LlamaReference, greedy_generate  # noqa: E402

Q8_0_TYPE = 8


def quantize_q8_0(matrix):
    """Q8_0 bytes of a row-major float matrix, and the exact values they decode to."""
    blocks = matrix.reshape(-1, 32)
    raw = b""
    decoded = np.empty_like(blocks, dtype=np.float64)
    for index, block in enumerate(blocks):
        scale = np.float16(np.abs(block).max() / 127)
        quants = np.clip(np.round(block / np.float32(scale)), -127, 127).astype(np.int8)
        raw += struct.pack("<e", scale) + quants.tobytes()
        decoded[index] = np.float32(scale) * quants.astype(np.float32)
    return raw, decoded.reshape(matrix.shape)


def random_model(architecture, n_embd, n_head, n_head_kv, n_ff, vocab, n_layer, n_rot,
                 rope_base, tie_output, quantize, seed):
    """GGUF bytes of a random model and its weights as the model should see them."""
    rng = np.random.default_rng(seed)
    head_dim = n_embd // n_head
    weights = {}

    def add(name, shape, scale=0.4, quantizable=True):
        weights[name] = (rng.standard_normal(shape) * scale).astype(np.float32)
        weights[name + "/quantized"] = quantize and quantizable and len(shape) == 2

    add("token_embd.weight", (vocab, n_embd), 1.0)
    for layer in range(n_layer):
        prefix = f"blk.{layer}."
        add(prefix + "attn_norm.weight", (n_embd,), 1.0)
        add(prefix + "attn_q.weight", (n_head * head_dim, n_embd))
        add(prefix + "attn_k.weight", (n_head_kv * head_dim, n_embd))
        add(prefix + "attn_v.weight", (n_head_kv * head_dim, n_embd))
        add(prefix + "attn_output.weight", (n_embd, n_head * head_dim))
        if architecture == "qwen2":
            add(prefix + "attn_q.bias", (n_head * head_dim,))
            add(prefix + "attn_k.bias", (n_head_kv * head_dim,))
            add(prefix + "attn_v.bias", (n_head_kv * head_dim,))
        add(prefix + "ffn_norm.weight", (n_embd,), 1.0)
        add(prefix + "ffn_gate.weight", (n_ff, n_embd))
        add(prefix + "ffn_up.weight", (n_ff, n_embd))
        # ffn_down rows are n_ff long, not a multiple of 32 here, so it stays F32.
        add(prefix + "ffn_down.weight", (n_embd, n_ff), quantizable=n_ff % 32 == 0)
    add("output_norm.weight", (n_embd,), 1.0)
    if not tie_output:
        add("output.weight", (vocab, n_embd))

    tensors = []
    effective = {}
    for name, value in weights.items():
        if name.endswith("/quantized"):
            continue
        if weights[name + "/quantized"]:
            raw, decoded = quantize_q8_0(value)
            tensors.append((name, tuple(reversed(value.shape)), Q8_0_TYPE, raw))
            effective[name] = decoded
        else:
            tensors.append(f32_tensor(name, value))
            effective[name] = value.astype(np.float64)
    if tie_output:
        effective["output.weight"] = effective["token_embd.weight"]

    metadata = [
        ("general.architecture", VALUE_STRING, architecture),
        (f"{architecture}.embedding_length", VALUE_UINT32, n_embd),
        (f"{architecture}.block_count", VALUE_UINT32, n_layer),
        (f"{architecture}.feed_forward_length", VALUE_UINT32, n_ff),
        (f"{architecture}.attention.head_count", VALUE_UINT32, n_head),
        (f"{architecture}.attention.head_count_kv", VALUE_UINT32, n_head_kv),
        (f"{architecture}.attention.layer_norm_rms_epsilon", VALUE_FLOAT32, 1e-5),
        (f"{architecture}.rope.dimension_count", VALUE_UINT32, n_rot),
        (f"{architecture}.context_length", VALUE_UINT32, 64),
    ]
    if rope_base is not None:
        metadata.append((f"{architecture}.rope.freq_base", VALUE_FLOAT32, rope_base))
    return build_gguf(metadata, tensors), effective


def loop_forward(weights, tokens, n_head, n_head_kv, n_rot, rope_base, neox, eps):
    """Logits of every position, restated one token and one head at a time."""
    embedding = weights["token_embd.weight"]
    n_embd = embedding.shape[1]
    head_dim = n_embd // n_head
    layer_count = len([name for name in weights if name.endswith("attn_norm.weight")])

    def rms_norm(vector, weight):
        return vector / math.sqrt(sum(v * v for v in vector) / len(vector) + eps) * weight

    def rope(vector, position):
        rotated = vector.copy()
        for i in range(n_rot // 2):
            angle = position * rope_base ** (-2.0 * i / n_rot)
            a, b = (i, i + n_rot // 2) if neox else (2 * i, 2 * i + 1)
            rotated[a] = vector[a] * math.cos(angle) - vector[b] * math.sin(angle)
            rotated[b] = vector[a] * math.sin(angle) + vector[b] * math.cos(angle)
        return rotated

    states = [embedding[token].copy() for token in tokens]
    for layer in range(layer_count):
        w = {name[len(f"blk.{layer}."):]: value for name, value in weights.items()
             if name.startswith(f"blk.{layer}.")}
        keys, values, new_states = [], [], []
        for position, x in enumerate(states):
            h = rms_norm(x, w["attn_norm.weight"])
            q = w["attn_q.weight"] @ h + w.get("attn_q.bias", 0)
            k = w["attn_k.weight"] @ h + w.get("attn_k.bias", 0)
            v = w["attn_v.weight"] @ h + w.get("attn_v.bias", 0)
            keys.append([rope(k[g * head_dim:(g + 1) * head_dim], position) for g in range(n_head_kv)])
            values.append([v[g * head_dim:(g + 1) * head_dim] for g in range(n_head_kv)])
            attention = []
            for head in range(n_head):
                group = head * n_head_kv // n_head
                query = rope(q[head * head_dim:(head + 1) * head_dim], position)
                scores = [float(query @ keys[s][group]) / math.sqrt(head_dim)
                          for s in range(position + 1)]
                top = max(scores)
                exps = [math.exp(score - top) for score in scores]
                attention.append(sum(e / sum(exps) * values[s][group] for s, e in enumerate(exps)))
            x = x + w["attn_output.weight"] @ np.concatenate(attention)
            h = rms_norm(x, w["ffn_norm.weight"])
            gate = w["ffn_gate.weight"] @ h
            gated = np.array([g / (1 + math.exp(-g)) for g in gate]) * (w["ffn_up.weight"] @ h)
            new_states.append(x + w["ffn_down.weight"] @ gated)
        states = new_states
    return np.array([weights["output.weight"] @ rms_norm(x, weights["output_norm.weight"])
                     for x in states])


class LlamaModelTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.scratch.cleanup()

    def check(self, architecture, n_embd=16, n_head=4, n_head_kv=2, n_ff=24, vocab=40,
              n_layer=2, n_rot=None, rope_base=None, tie_output=False, quantize=False, seed=0):
        n_rot = n_rot or n_embd // n_head
        image, weights = random_model(architecture, n_embd, n_head, n_head_kv, n_ff, vocab,
                                      n_layer, n_rot, rope_base, tie_output, quantize, seed)
        path = os.path.join(self.scratch.name, "model.gguf")
        with open(path, "wb") as file:
            file.write(image)
        model = LlamaReference(GGUFFile(path))
        self.assertEqual(model.hparams.rope_neox, architecture == "qwen2")
        tokens = [1, 7, 3, vocab - 1, 0, 12, 7]
        expected = loop_forward(weights, tokens, n_head, n_head_kv, n_rot,
                                rope_base or 10000.0, architecture == "qwen2", np.float32(1e-5))

        batch_cache = model.new_cache(len(tokens))
        np.testing.assert_allclose(model.forward(tokens, batch_cache), expected,
                                   rtol=0, atol=1e-9, err_msg="prefill as one batch")
        # The KV cache must give the same logits when tokens arrive in pieces.
        piece_cache = model.new_cache(len(tokens))
        pieces = [model.forward(tokens[:3], piece_cache)]
        pieces += [model.forward([token], piece_cache) for token in tokens[3:]]
        np.testing.assert_allclose(np.concatenate(pieces), expected, rtol=0, atol=1e-9,
                                   err_msg="prefill of 3, then one token at a time")

        generated, logits = greedy_generate(model, tokens[:2], 4)
        self.assertEqual(logits.shape, (2 + 4 - 1, vocab))
        self.assertEqual(generated, [int(np.argmax(row)) for row in logits[1:]])

    def test_llama_gqa(self):
        self.check("llama")

    def test_llama_multi_query_partial_rope_tied_output(self):
        self.check("llama", n_head_kv=1, n_rot=2, rope_base=500.0, tie_output=True, seed=1)

    def test_llama_q8_0_weights(self):
        self.check("llama", n_embd=32, n_ff=64, vocab=48, quantize=True, seed=2)

    def test_mistral(self):
        self.check("mistral", n_head_kv=4, seed=3)

    def test_qwen2_neox_rope_and_biases(self):
        self.check("qwen2", rope_base=1e6, tie_output=True, seed=4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
