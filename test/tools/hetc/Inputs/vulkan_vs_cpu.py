"""For each weight format given, synthesizes a small model with hetc synth, runs it
greedily on the CPU and on vulkan0 with --logits-out, and compares the tokens and
(with compare_logits.py) the logits, within 1e-3 relative to each row's largest.

The CPU runs its AVX2 code (x86-64-v3), whose quantized matmuls decode the
weights to floats as the SPIR-V kernels do; the AVX-512 VNNI code rounds the
activations to int8 first, a different (and checked elsewhere) arithmetic.

    vulkan_vs_cpu.py WORKDIR FORMAT...

VOCAB (default 300) sets the vocabulary: past 65535 rows the output product's
workgroups go on along a second grid axis.
"""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "reference"))
from compare_logits import compare  # noqa: E402

HETC = os.environ.get("HETC", "hetc")
VOCAB = os.environ.get("VOCAB", "300")


def run(model, logits, device, workdir):
    command = [HETC, "run", model, "-p", "Hello world", "-n", "12", "--temp", "0",
               "--ignore-eos", "--json", "--logits-out", logits]
    if device:
        command += ["--device", device]
    env = dict(os.environ, HETC_CACHE_DIR=os.path.join(workdir, "cache"))
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(result.stdout)["tokens"]


def main(workdir, *formats):
    ok = True
    for weight_type in formats:
        model = os.path.join(workdir, f"{weight_type}.gguf")
        # K-quants take rows of whole 256-element super-blocks.
        dim, ffn = ("256", "512") if weight_type.startswith("q4_k") else ("64", "128")
        subprocess.run([HETC, "synth", "--dim", dim, "--layers", "2", "--heads", "4",
                        "--kv-heads", "2", "--ffn", ffn, "--vocab", VOCAB, "--context", "64",
                        "--type", weight_type, "-o", model], check=True, capture_output=True)
        cpu_logits = os.path.join(workdir, f"{weight_type}.cpu.npy")
        gpu_logits = os.path.join(workdir, f"{weight_type}.vulkan.npy")
        pack = os.path.join(workdir, f"{weight_type}.hetpack")
        subprocess.run([HETC, "compile", model, "-o", pack, "--cpu-variants", "x86-64-v3",
                        "--spirv", "-q"], check=True, capture_output=True)
        cpu = run(pack, cpu_logits, None, workdir)
        gpu = run(pack, gpu_logits, "vulkan0", workdir)
        _, passed = compare(np.load(cpu_logits), np.load(gpu_logits), atol=0.0, rtol=1e-3)
        print(f"{weight_type}: tokens {'equal' if cpu == gpu else 'differ'}, "
              f"logits {'PASS' if passed else 'FAIL'}")
        ok = ok and cpu == gpu and passed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
