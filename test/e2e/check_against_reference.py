"""Runs hetc on a model for given prompts and checks it against references.

For each prompt, `hetc run --temp 0 --json --logits-out` must give exactly the
expected prompt and generated token ids (when the expectation file has them),
and its logits at every step must agree with the independent NumPy reference
(test/reference) within a relative tolerance of the row's largest logit. The
reference keeps its KV cache in the element type the run reports (an f16
cache rounds each key and value as it is stored).

Code variants with int8 dot products round the activations of quantized
matmuls to int8 blocks, and the reference does the same; but where hetc's f32
activations and the reference's f64 ones straddle a rounding boundary (values
such as 40.5000089 occur), one code differs by one. In the last layers that
moves a logit by about 1e-3 of the row's largest; in the first layer, at a
prompt position, it reaches every later position through the next layers'
attention and has moved logits by up to 1.1e-2 of the largest (any change of
the f32 summation order can move such a tie either way). Those runs are held
to --int8-rtol; the kernels' integer arithmetic itself is checked exactly by
the CPU quantized-matmul unit tests.

An f16 KV cache has the same kind of ties, many more of them: a key or value
element of hetc's float32 and the reference's float64 rounds to neighbouring
float16 values when it lies near the midpoint (a change of 2^-11 relative).
Once one has, every later layer's keys and values differ by about 1e-4 and a
good share of them round apart too, so the logits settle at a few 1e-4 of the
row's largest. Those runs are held to --f16-kv-rtol; packs compiled with
`--kv-type f32` keep the tight bound.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE_DIR = os.path.join(HERE, "..", "reference")
sys.path.insert(0, REFERENCE_DIR)

from compare_logits import compare  # noqa: E402
from gguf_file import GGUFFile  # noqa: E402
from llama_model import LlamaReference  # noqa: E402


# The CPU code variants whose quantized matmuls round their activations to
# int8 blocks (hetc's CpuVariant::int8Dot); the reference then does the same.
INT8_DOT_VARIANTS = {"avx512-vnni", "avx512-amx", "avx512-amx-bf16",
                     "avx512-amx-emulated"}
# The weight formats whose prompt matmuls each AMX variant runs on bf16 tiles
# (rounding activations and weights to bfloat16); the reference rounds them
# too.
BF16_TILE_VARIANTS = {"avx512-amx": ("bf16",),
                      "avx512-amx-bf16": ("f32", "f16", "bf16"),
                      "avx512-amx-emulated": ("f32", "f16", "bf16")}


def run_hetc(hetc, pack, prompt, count, logits_path):
    command = [hetc, "run", pack, "-p", prompt, "-n", str(count), "--temp", "0",
               "--json", "--ignore-eos", "--logits-out", logits_path]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"hetc run failed ({result.returncode}): {result.stderr}")
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hetc", required=True, help="the hetc binary")
    parser.add_argument("--pack", required=True, help="the compiled model")
    parser.add_argument("--model", required=True, help="the GGUF the pack was compiled from")
    parser.add_argument("--expected", help="JSON with prompts, prompt_token_ids and "
                        "generated_token_ids (the stories260K reference format)")
    parser.add_argument("--prompt", action="append", default=[],
                        help="a prompt to check against the NumPy reference only")
    parser.add_argument("--tokens", type=int, default=48, help="tokens to generate")
    parser.add_argument("--rtol", type=float, default=1e-4,
                        help="logit tolerance relative to the row's largest |logit|")
    parser.add_argument("--int8-rtol", type=float, default=2e-2,
                        help="the tolerance of runs that rounded activations to int8")
    parser.add_argument("--bf16-rtol", type=float, default=3e-3,
                        help="the tolerance of runs whose prompt matmuls rounded "
                             "to bf16 tiles")
    parser.add_argument("--f16-kv-rtol", type=float, default=2e-3,
                        help="the tolerance of runs with an f16 KV cache")
    args = parser.parse_args()

    cases = [{"name": f"prompt{i}", "prompt": text} for i, text in enumerate(args.prompt)]
    if args.expected:
        with open(args.expected) as f:
            cases += json.load(f)["prompts"]

    gguf = GGUFFile(args.model)
    reference_models = {}
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        for case in cases:
            name = case["name"]
            logits_path = os.path.join(scratch, name + ".npy")
            result = run_hetc(args.hetc, args.pack, case["prompt"], args.tokens, logits_path)
            prompt_ids = result["prompt_tokens"]
            generated = result["tokens"]
            int8 = result.get("variant") in INT8_DOT_VARIANTS
            bf16_tiles = BF16_TILE_VARIANTS.get(result.get("variant"), ())
            kv_element_type = result["kv_cache"]["element_type"]
            key = (int8, kv_element_type, bf16_tiles)
            if key not in reference_models:
                reference_models[key] = LlamaReference(
                    gguf, int8_activations=int8, kv_element_type=kv_element_type,
                    bf16_tile_types=bf16_tiles)
            reference_model = reference_models[key]
            if "prompt_token_ids" in case and prompt_ids != case["prompt_token_ids"]:
                print(f"{name}: prompt ids {prompt_ids} != expected {case['prompt_token_ids']}")
                failures += 1
            expected = case.get("generated_token_ids")
            if expected is not None:
                expected = expected[: args.tokens]
                if generated != expected:
                    first = next(i for i, (a, b) in enumerate(zip(generated + [None] * len(expected), expected)) if a != b)
                    print(f"{name}: generated ids differ first at index {first}: "
                          f"hetc {generated[first:first + 5]}, expected {expected[first:first + 5]}")
                    failures += 1
                else:
                    print(f"{name}: {len(generated)} generated ids identical to the expectation")

            # The reference runs the ids hetc ran (the prompt, then each generated
            # token but the last), so a near-tie cannot send them down different
            # paths.
            cache = reference_model.new_cache(len(prompt_ids) + len(generated))
            rows = [reference_model.forward(prompt_ids, cache, prefill=True)[-1:]]
            for token in generated[:-1]:
                rows.append(reference_model.forward([token], cache, prefill=False))
            reference_rows = np.concatenate(rows, axis=0)
            candidate = np.load(logits_path)
            rtol = args.rtol
            if int8 and reference_model.int8_weights:
                rtol = max(rtol, args.int8_rtol)
            if reference_model.bf16_tile_weights:
                rtol = max(rtol, args.bf16_rtol)
            if kv_element_type != "f32":
                rtol = max(rtol, args.f16_kv_rtol)
            lines, passed = compare(reference_rows, candidate, atol=0.0, rtol=rtol)
            for line in lines:
                print(f"{name}: {line}")
            if not passed:
                failures += 1
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
