"""One line of the GPU check for a run of hetrt-run --json (on stdin): its
prefill and decode speeds, decode as a fraction of the GPU's memory-bandwidth
roofline and prefill as a fraction of its dense f16 tensor-core peak.

    report.py NAME MODEL.gguf "CUDA0 LINE OF hetrt-run --list-devices"

A decode step reads every weight once (the tied embedding is the output
projection), so the model file's bytes over the step's time is the bandwidth
it used. The peaks are the datasheets' (hardware/devices/*.json). The dispatches a
step and the decode time each stands for tell a step bound by kernel launches
(a few microseconds each) from one bound by memory."""
import json
import os
import sys

# GB/s of HBM and dense f16 TFLOP/s, by the name the driver gives.
PEAKS = [("H200", 4800, 989.5), ("H100", 3350, 989.5), ("A100", 2039, 312)]


def main(name, model, device):
    result = json.load(sys.stdin)
    weights = os.path.getsize(model)
    peak = next((p for p in PEAKS if p[0] in device), None)
    prompt = len(result["prompt_tokens"])
    prefill, decode = result["prefill_tokens_per_s"], result["decode_tokens_per_s"]
    used = {d["name"]: d["code"] for d in result["devices"]}
    line = (f"{name}: prefill {prompt} tokens at {prefill:.1f} tokens/s, "
            f"decode {len(result['tokens'])} tokens at {decode:.1f} tokens/s")
    if peak:
        bandwidth = weights * decode / 1e9
        flops = 2 * weights / (2 if "f16" in name else 0.5625) * prefill / 1e12
        line += (f"; decode reads {bandwidth:.0f} GB/s = {bandwidth / peak[1]:.1%} of "
                 f"{peak[0]}'s {peak[1]} GB/s; prefill {flops:.1f} TFLOP/s = "
                 f"{flops / peak[2]:.1%} of its {peak[2]} f16 TFLOP/s")
    steps = max(1, len(result["tokens"]))
    dispatches = sum(d.get("dispatches", 0) for d in result["devices"]) / steps
    if dispatches and decode > 0:
        line += (f"; {dispatches:.0f} dispatches a step, "
                 f"{1e6 / decode / dispatches:.1f} us of decode each")
    print(line + f" (devices: {used})")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
