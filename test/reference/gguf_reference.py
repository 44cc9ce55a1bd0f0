"""Command line of the independent NumPy reference: greedy generation from a GGUF model.

Example:
  /usr/bin/python3 test/reference/gguf_reference.py MODEL.gguf \\
      --tokens 1,403,407,261,378 --generate 48 --logits-out ref.npy

Weights are held in float64, so a model needs about 8 bytes of memory per parameter.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from gguf_file import GGUFError, GGUFFile  # noqa: E402
from llama_model import LlamaReference, greedy_generate  # noqa: E402


def parse_token_ids(text):
    try:
        ids = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not ids:
        raise argparse.ArgumentTypeError("at least one token id is needed")
    return ids


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Reference Llama inference in float64 NumPy, independent of llama.cpp "
                    "and hetc: prefill the given token ids, then decode greedily.")
    parser.add_argument("model", help="GGUF v2/v3 file (llama, mistral or qwen2)")
    parser.add_argument("--tokens", type=parse_token_ids, required=True,
                        help="prompt token ids, comma-separated (BOS included if wanted)")
    parser.add_argument("--generate", type=int, default=16,
                        help="number of tokens to generate greedily (default 16)")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON object instead of the bare generated ids")
    parser.add_argument("--logits-out", metavar="FILE.npy",
                        help="save float64 logits, one row per processed position: the "
                             "prompt positions, then each decode step "
                             "(len(tokens) + generate - 1 rows)")
    args = parser.parse_args(argv)
    if args.generate < 0:
        parser.error("--generate must not be negative")

    started = time.perf_counter()
    try:
        model = LlamaReference(GGUFFile(args.model))
        generated, logits = greedy_generate(model, args.tokens, args.generate)
    except (GGUFError, OSError, ValueError) as error:
        print(f"gguf_reference: error: {error}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - started

    if args.logits_out:
        np.save(args.logits_out, logits)
    if args.json:
        print(json.dumps({
            "model": os.path.basename(args.model),
            "architecture": model.hparams.architecture,
            "prompt_token_ids": args.tokens,
            "generated_token_ids": generated,
            "logits_shape": list(logits.shape),
            "seconds": round(seconds, 3),
        }))
    else:
        print(",".join(str(token) for token in generated))
    return 0


if __name__ == "__main__":
    sys.exit(main())
