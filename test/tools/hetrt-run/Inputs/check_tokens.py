"""Runs a generator on every prompt of a llama.cpp reference JSON and checks
that its --json output has exactly the reference prompt and generated ids.

    check_tokens.py REFERENCE.json COMMAND... (the prompt and -n are appended)
"""
import json
import subprocess
import sys


def main(reference_path, *command):
    reference = json.load(open(reference_path))
    ok = True
    for prompt in reference["prompts"]:
        expected = prompt["generated_token_ids"]
        run = subprocess.run(list(command) + ["-p", prompt["prompt"], "-n", str(len(expected)),
                                              "--temp", "0", "--ignore-eos", "--json"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{prompt['name']}: failed ({run.returncode}): {run.stderr.strip()}")
            ok = False
            continue
        result = json.loads(run.stdout)
        if result["prompt_tokens"] != prompt["prompt_token_ids"]:
            print(f"{prompt['name']}: prompt ids differ: {result['prompt_tokens']}")
            ok = False
        elif result["tokens"] != expected:
            first = next((i for i, (a, b) in enumerate(zip(result["tokens"], expected)) if a != b),
                         min(len(result["tokens"]), len(expected)))
            print(f"{prompt['name']}: generated ids differ from index {first}")
            ok = False
        else:
            print(f"{prompt['name']}: {len(expected)} generated ids identical to the reference")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
