#!/usr/bin/env python3
"""Load on `hetc serve`: concurrent clients on 127.0.0.1, each streaming
requests of different prompts and lengths, greedy, for a bounded time per
level of concurrency (1, 8 and 64 clients by default). Checks that no
request fails, that each stream's text equals the same request run alone
(no token lost or mixed up between requests), and that the server's memory
and KV pool return to their idle level after the load; reports the
throughput of each level beside single-stream decode (`hetc run`). Exits 1
when a check fails.

usage: bench/serve-load.py [--model M] [--seconds S] [--clients 1,8,64] [-- SERVE_FLAGS]
Needs a built hetc ($HETC or build/bin/hetc) and the models beside the
checkout ($HETC_SHARED_DIR, default ../shared).
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HETC = os.environ.get("HETC", os.path.join(ROOT, "build", "bin", "hetc"))
SHARED = os.environ.get("HETC_SHARED_DIR", os.path.join(ROOT, "..", "shared"))

PROMPTS = ["Once upon a time", "The little dog", "Lily and Ben went to the park",
           "One day, a cat", "Tom had a big red ball", "The sun was hot",
           "Sue liked to sing", "A bird flew", "Max was a happy boy",
           "The old tree", "Mom made a cake", "It was raining"]
LENGTHS = [16, 48, 96, 32, 128, 64, 24, 80]


def requests():
    """The request mix: (endpoint kind, prompt, max_tokens)."""
    mix = []
    for i, prompt in enumerate(PROMPTS):
        for j in range(2):
            chat = (i + j) % 3 == 0
            mix.append((chat, prompt, LENGTHS[(i * 2 + j) % len(LENGTHS)]))
    return mix


class Server:
    def __init__(self, model, parallel, flags):
        self.process = subprocess.Popen(
            [HETC, "serve", model, "--port", "0", "--parallel", str(parallel),
             "--max-queued", "256"] + flags, stderr=subprocess.PIPE, text=True)
        self.log = []
        for line in self.process.stderr:
            self.log.append(line)
            found = re.search(r"listening on http://([^:]+):(\d+)", line)
            if found:
                self.host, self.port = found.group(1), int(found.group(2))
                break
        else:
            sys.exit("hetc serve did not start:\n" + "".join(self.log))
        threading.Thread(target=self._drain, daemon=True).start()
        while self.get("/health")[0] != 200:
            if self.process.poll() is not None:
                sys.exit("hetc serve stopped:\n" + "".join(self.log))
            time.sleep(0.2)
        self.model = json.loads(self.get("/v1/models")[1])["data"][0]["id"]

    def _drain(self):
        for line in self.process.stderr:
            self.log.append(line)

    def get(self, path):
        try:
            connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, response.read().decode()
        except OSError:
            return 0, ""

    def stream(self, chat, prompt, max_tokens):
        """One streamed greedy request: (text, completion tokens, error)."""
        body = {"model": self.model, "max_tokens": max_tokens, "temperature": 0,
                "stream": True, "stream_options": {"include_usage": True}}
        if chat:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        path = "/v1/chat/completions" if chat else "/v1/completions"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=600)
        try:
            connection.request("POST", path, body=json.dumps(body),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            if response.status != 200:
                return "", 0, f"HTTP {response.status}: {response.read()[:200]!r}"
            text, tokens, done = "", 0, False
            for raw in response:
                line = raw.decode("utf-8").rstrip("\r\n")
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    done = True
                    break
                event = json.loads(data)
                if "error" in event:
                    return text, tokens, "error event: " + event["error"]["message"]
                if event.get("usage"):
                    tokens = event["usage"]["completion_tokens"]
                for choice in event["choices"]:
                    text += choice["delta"].get("content", "") if chat else choice["text"]
            return text, tokens, None if done else "the stream ended without [DONE]"
        except (OSError, http.client.HTTPException, ValueError) as error:
            return "", 0, f"{type(error).__name__}: {error}"
        finally:
            connection.close()

    def memory_kib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def metrics(self):
        values = {}
        for line in self.get("/metrics")[1].splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self):
        self.process.terminate()
        return self.process.wait(timeout=60)


def load(server, clients, seconds, expected, mix):
    """`clients` clients streaming the mix, each from its own offset, until
    `seconds` have passed; returns (tokens, requests, errors, mismatches,
    elapsed)."""
    lock = threading.Lock()
    totals = {"tokens": 0, "requests": 0, "errors": [], "mismatches": []}
    deadline = time.time() + seconds

    def client(index):
        k = index * 5
        while time.time() < deadline:
            chat, prompt, length = mix[k % len(mix)]
            k += 1
            text, tokens, error = server.stream(chat, prompt, length)
            with lock:
                totals["requests"] += 1
                totals["tokens"] += tokens
                if error:
                    totals["errors"].append(error)
                elif text != expected[(chat, prompt, length)]:
                    totals["mismatches"].append((chat, prompt, length, text))

    start = time.time()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.time() - start
    return (totals["tokens"], totals["requests"], totals["errors"],
            totals["mismatches"], elapsed)


def settle(server):
    """Waits until no request runs; the metrics then."""
    for _ in range(300):
        metrics = server.metrics()
        if metrics.get("hetc_running_requests", 1) == 0 and metrics.get("hetc_queue_length", 1) == 0:
            return metrics
        time.sleep(0.1)
    return server.metrics()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=os.path.join(SHARED, "models", "stories260K.gguf"))
    parser.add_argument("--seconds", type=float, default=20,
                        help="how long each level of concurrency runs (default 20)")
    parser.add_argument("--clients", default="1,8,64",
                        help="the levels of concurrency, comma-separated (default 1,8,64)")
    parser.add_argument("serve_flags", nargs="*",
                        help="flags for hetc serve, after --: -t 1, --system SYS, ...")
    args = parser.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    if not levels or min(levels) < 1 or args.seconds <= 0:
        parser.error("--clients needs whole numbers from 1, --seconds a positive time")

    single = subprocess.run([HETC, "run", args.model, "-p", PROMPTS[0], "-n", "128",
                             "--temp", "0", "--ignore-eos", "--json"],
                            capture_output=True, text=True, check=True)
    single_rate = json.loads(single.stdout)["decode_tokens_per_s"]

    server = Server(args.model, min(64, max(levels)), args.serve_flags)
    mix = requests()
    # Each request alone, one at a time: what every stream under load must
    # give again.
    expected = {}
    for request in mix:
        text, _, error = server.stream(*request)
        if error:
            sys.exit(f"serve-load: a request alone failed: {error}")
        expected[request] = text
    # A short burst at the highest concurrency first: the pool's pages and
    # the connections' threads are then in use, as in any server that has
    # served, so what stays after the load is what the load kept.
    load(server, max(levels), 2, expected, mix)
    idle = settle(server)
    idle_kib = server.memory_kib()

    failed = False
    rows = []
    for clients in levels:
        before = server.metrics()
        tokens, count, errors, mismatches, elapsed = load(server, clients, args.seconds,
                                                          expected, mix)
        after = server.metrics()
        steps = (after["hetc_batch_size_per_step_count"] -
                 before["hetc_batch_size_per_step_count"])
        batch = (after["hetc_batch_size_per_step_sum"] -
                 before["hetc_batch_size_per_step_sum"]) / max(steps, 1)
        rows.append((clients, count, tokens, tokens / elapsed, batch, len(errors),
                     len(mismatches)))
        for error in errors[:5]:
            print(f"  error ({clients} clients): {error}")
        for chat, prompt, length, text in mismatches[:5]:
            print(f"  mixed up ({clients} clients): {'chat' if chat else 'completion'} "
                  f"{prompt!r} {length}: {text!r} != {expected[(chat, prompt, length)]!r}")
        failed |= bool(errors or mismatches)
    after = settle(server)
    after_kib = server.memory_kib()
    code = server.stop()

    print(f"model {os.path.basename(args.model)}, {args.seconds:g} s per level, "
          f"{len(mix)} distinct requests (16 to 128 tokens, greedy, streamed)")
    print(f"single-stream decode (hetc run): {single_rate:.1f} tokens/s")
    print("| clients | requests | tokens | tokens/s | vs single stream | mean batch | errors | mixed up |")
    print("|---|---|---|---|---|---|---|---|")
    for clients, count, tokens, rate, batch, errors, mismatches in rows:
        print(f"| {clients} | {count} | {tokens} | {rate:.1f} | {rate / single_rate:.2f}x "
              f"| {batch:.1f} | {errors} | {mismatches} |")
    pool = 'hetc_kv_blocks{tier="pool",state="used"}'
    # More than a sixteenth of the idle size, or 8 MiB, is memory the load
    # did not give back.
    memory_ok = after_kib <= idle_kib + max(idle_kib // 16, 8 * 1024)
    print(f"server memory: idle {idle_kib / 1024:.1f} MiB, after the load "
          f"{after_kib / 1024:.1f} MiB ({'back to idle' if memory_ok else 'NOT back to idle'}); "
          f"KV pool blocks used: idle {idle.get(pool, -1):.0f}, after {after.get(pool, -1):.0f}; "
          f"server exit code {code}")
    failed |= not memory_ok or after.get(pool, -1) != 0 or code != 0
    print("serve-load: " + ("FAILED" if failed else "passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
