"""Compares the logits a generator saves (--logits-out) with the NumPy reference's,
for the first prompt of a llama.cpp reference JSON.

    check_run_logits.py MODEL.gguf REFERENCE.json WORKDIR COMMAND...
        (the prompt, -n, --temp 0, --ignore-eos and --logits-out are appended)

The generator's rows are the prompt's last position and each decode step after it;
they must be within 1e-3 of the reference relative to each row's largest logit."""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_logits import compare  # noqa: E402

GENERATED = 24


def main(model, reference_path, workdir, *command):
    prompt = json.load(open(reference_path))["prompts"][0]
    ids = prompt["prompt_token_ids"]
    reference_npy = os.path.join(workdir, "reference.npy")
    candidate_npy = os.path.join(workdir, "candidate.npy")
    subprocess.run([sys.executable, os.path.join(HERE, "gguf_reference.py"), model,
                    "--tokens", ",".join(map(str, ids)), "--generate", str(GENERATED),
                    "--logits-out", reference_npy], check=True, capture_output=True)
    run = subprocess.run(list(command) + ["-p", prompt["prompt"], "-n", str(GENERATED),
                                          "--temp", "0", "--ignore-eos",
                                          "--logits-out", candidate_npy],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"the generator failed ({run.returncode}): {run.stderr.strip()}")
        return 1
    reference = np.load(reference_npy)[len(ids) - 1:]
    lines, passed = compare(reference, np.load(candidate_npy), atol=0.0, rtol=1e-3)
    for line in lines:
        print(line)
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
