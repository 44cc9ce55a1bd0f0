"""Whether two `hetc run --json --logits-out` results of one model (code
variants A and B, as PREFIX.json and PREFIX.npy) are identical: the same
prompt tokens, generated tokens and logits, bit for bit.

Usage: compare_variants.py PREFIX_A PREFIX_B
"""
import json
import sys

import numpy as np


def load(prefix):
    with open(prefix + ".json") as f:
        result = json.load(f)
    return result, np.load(prefix + ".npy")


def main():
    (a, a_logits), (b, b_logits) = load(sys.argv[1]), load(sys.argv[2])
    names = f"{a.get('variant')} and {b.get('variant')}"
    if a["prompt_tokens"] != b["prompt_tokens"] or a["tokens"] != b["tokens"]:
        print(f"{names}: different tokens: {a['tokens']} vs {b['tokens']}")
        return 1
    if a_logits.shape != b_logits.shape:
        print(f"{names}: logits of shapes {a_logits.shape} and {b_logits.shape}")
        return 1
    differ = np.flatnonzero((a_logits != b_logits).any(axis=1))
    verdict = "identical" if differ.size == 0 else (
        f"rows {differ.tolist()} differ (max |diff| "
        f"{np.abs(a_logits - b_logits).max():.3e})")
    print(f"{names}: {len(a['prompt_tokens'])} prompt tokens, "
          f"{a_logits.shape[0]} rows of logits, {verdict}")
    return 0 if differ.size == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
