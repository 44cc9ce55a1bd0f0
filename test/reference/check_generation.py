"""Runs the reference CLI on every prompt of a llama.cpp reference JSON and compares the ids."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

REFERENCE_CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf_reference.py")


def first_difference(expected, actual):
    for index, (want, got) in enumerate(zip(expected, actual)):
        if want != got:
            return index
    return None if len(expected) == len(actual) else min(len(expected), len(actual))


def check_prompt(model_path, prompt, logits_path, perturb_index):
    expected = list(prompt["generated_token_ids"])
    if perturb_index is not None:
        # Proves the comparison can fail: a corrupted expectation must be reported.
        expected[perturb_index] += 1
    command = [sys.executable, REFERENCE_CLI, model_path,
               "--tokens", ",".join(map(str, prompt["prompt_token_ids"])),
               "--generate", str(len(expected)), "--json", "--logits-out", logits_path]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"{prompt['name']}: reference CLI failed ({run.returncode}): {run.stderr.strip()}")
        return False
    actual = json.loads(run.stdout)["generated_token_ids"]

    ok = True
    mismatch = first_difference(expected, actual)
    if mismatch is None:
        print(f"{prompt['name']}: {len(actual)} of {len(expected)} generated ids match")
    else:
        want = expected[mismatch] if mismatch < len(expected) else "<end>"
        got = actual[mismatch] if mismatch < len(actual) else "<end>"
        print(f"{prompt['name']}: MISMATCH at generated index {mismatch}: "
              f"expected {want}, got {got}")
        ok = False

    # The saved logits must explain the ids: row len(prompt)-1+i chose generated id i.
    logits = np.load(logits_path)
    prompt_length = len(prompt["prompt_token_ids"])
    expected_rows = prompt_length + len(expected) - 1
    if logits.shape[0] != expected_rows:
        print(f"{prompt['name']}: logits have {logits.shape[0]} rows, expected {expected_rows}")
        ok = False
    elif list(np.argmax(logits[prompt_length - 1:], axis=1)) != actual:
        print(f"{prompt['name']}: argmax of the saved logits differs from the generated ids")
        ok = False
    else:
        print(f"{prompt['name']}: logits {logits.shape[0]}x{logits.shape[1]} consistent")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", help="GGUF model file")
    parser.add_argument("reference_json", help="JSON with prompts[].prompt_token_ids and "
                                               "prompts[].generated_token_ids")
    parser.add_argument("--perturb-expected", metavar="NAME:INDEX",
                        help="add 1 to expected id INDEX of prompt NAME (self-test of the checker)")
    args = parser.parse_args()

    with open(args.reference_json) as file:
        prompts = json.load(file)["prompts"]
    perturb_name, perturb_index = None, None
    if args.perturb_expected:
        perturb_name, index_text = args.perturb_expected.split(":")
        perturb_index = int(index_text)

    all_ok = True
    with tempfile.TemporaryDirectory() as scratch:
        for prompt in prompts:
            index = perturb_index if prompt["name"] == perturb_name else None
            logits_path = os.path.join(scratch, prompt["name"] + ".npy")
            all_ok &= check_prompt(args.model, prompt, logits_path, index)
    print("PASS" if all_ok else "FAIL")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
