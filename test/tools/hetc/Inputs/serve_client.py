"""Drives `hetc serve` for the serve tests: starts it on a free port of
127.0.0.1, waits for /health, runs one scenario and prints what the test
checks, then stops it with SIGTERM and checks that it exits cleanly.

usage: serve_client.py HETC MODEL SCENARIO [-- SERVE_FLAGS...]
"""
import http.client
import json
import re
import socket
import subprocess
import sys
import threading
import time


class Server:
    def __init__(self, hetc, model, flags):
        self.process = subprocess.Popen(
            [hetc, "serve", model, "--port", "0"] + flags,
            stderr=subprocess.PIPE, text=True)
        self.log = []
        port = None
        for line in self.process.stderr:
            self.log.append(line)
            found = re.search(r"listening on http://([^:]+):(\d+)", line)
            if found:
                self.host, port = found.group(1), int(found.group(2))
                break
        if port is None:
            sys.exit("hetc serve did not start:\n" + "".join(self.log))
        self.port = port
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.time() + 600
        while True:
            status, _, _ = self.request("GET", "/health")
            if status == 200:
                break
            if self.process.poll() is not None or time.time() > deadline:
                sys.exit("hetc serve never became ready:\n" + "".join(self.log))
            time.sleep(0.2)

    def _drain(self):
        for line in self.process.stderr:
            self.log.append(line)

    def request(self, method, path, body=None, headers=None, raw=None):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=300)
        sent = dict(headers or {})
        data = raw if raw is not None else (None if body is None else json.dumps(body))
        if data is not None:
            sent.setdefault("Content-Type", "application/json")
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        payload = response.read().decode("utf-8", "replace")
        connection.close()
        return response.status, dict(response.getheaders()), payload

    def post(self, path, body, headers=None):
        status, response_headers, payload = self.request("POST", path, body, headers)
        return status, response_headers, json.loads(payload)

    def stream(self, path, body, headers=None):
        """The events of a streamed request, parsed; "[DONE]" last."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=300)
        sent = {"Content-Type": "application/json"}
        sent.update(headers or {})
        connection.request("POST", path, body=json.dumps(body), headers=sent)
        response = connection.getresponse()
        events = []
        for line in response.read().decode("utf-8").split("\n"):
            if line.startswith("data: "):
                data = line[len("data: "):]
                events.append(data if data == "[DONE]" else json.loads(data))
        connection.close()
        return response.status, response.getheader("Content-Type"), events

    def metrics(self):
        _, _, text = self.request("GET", "/metrics")
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self):
        self.process.terminate()
        code = self.process.wait(timeout=60)
        print(f"server exit code: {code}")


def streamed_text(events, chat):
    text = ""
    for event in events:
        if event == "[DONE]" or not event.get("choices"):
            continue
        choice = event["choices"][0]
        text += choice["delta"].get("content", "") if chat else choice["text"]
    return text


def run_alone(hetc, model, prompt, tokens, chat, ignore_eos=False):
    command = [hetc, "run", model, "-p", prompt, "-n", str(tokens), "--temp", "0", "--json"]
    if chat:
        command.append("--chat")
    if ignore_eos:
        command.append("--ignore-eos")
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["text"]


POOL_USED = 'hetc_kv_blocks{tier="pool",state="used"}'
CANCELLED = 'hetc_requests_finished_total{reason="cancelled"}'
PROMPTS = ["Once upon a time", "The little dog", "Lily and Ben went to the park",
           "One day, a cat", "Tom had a big red ball", "The sun was hot",
           "Sue liked to sing", "A bird flew"]


def scenario_compare(server, hetc, model):
    """Greedy texts equal `hetc run`'s, streamed and not, both endpoints."""
    for chat in (False, True):
        endpoint = "/v1/chat/completions" if chat else "/v1/completions"
        for prompt, tokens in (("Once upon a time", 40), ("The little dog", 25)):
            body = {"model": "stories260K", "max_tokens": tokens, "temperature": 0}
            if chat:
                body["messages"] = [{"role": "user", "content": prompt}]
            else:
                body["prompt"] = prompt
            status, _, whole = server.post(endpoint, body)
            choice = whole["choices"][0]
            text = choice["message"]["content"] if chat else choice["text"]
            body["stream"] = True
            _, content_type, events = server.stream(endpoint, body)
            alone = run_alone(hetc, model, prompt, tokens, chat)
            print(f"{endpoint} {prompt!r}: status {status}, {content_type}, "
                  f"finish {choice['finish_reason']}, "
                  f"usage {whole['usage']['completion_tokens']}, "
                  f"same as hetc run: {text == alone}, "
                  f"streamed same: {streamed_text(events, chat) == alone}, "
                  f"ends with DONE: {events[-1] == '[DONE]'}")
    # A stop string ends the text before it, across tokens, as hetc run does.
    body = {"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 40,
            "temperature": 0, "stop": ["named Li"]}
    _, _, whole = server.post("/v1/completions", body)
    result = subprocess.run([hetc, "run", model, "-p", "Once upon a time", "-n", "40",
                             "--temp", "0", "--json", "--stop", "named Li"],
                            capture_output=True, text=True, check=True)
    alone = json.loads(result.stdout)
    print(f"stop: {whole['choices'][0]['text']!r} {whole['choices'][0]['finish_reason']}, "
          f"hetc run: {alone['text']!r} {alone['stop_reason']}")
    # Log-probabilities: the greedy token is the most likely alternative.
    body = {"model": "stories260K", "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 5, "temperature": 0, "logprobs": True, "top_logprobs": 3}
    _, _, whole = server.post("/v1/chat/completions", body)
    content = whole["choices"][0]["logprobs"]["content"]
    print(f"chat logprobs: {len(content)} tokens, "
          f"greedy is the top: {all(t['token'] == t['top_logprobs'][0]['token'] for t in content)}, "
          f"3 alternatives: {all(len(t['top_logprobs']) == 3 for t in content)}, "
          f"joined: {''.join(t['token'] for t in content) == whole['choices'][0]['message']['content']}")
    body = {"model": "stories260K", "prompt": "Once", "max_tokens": 4, "temperature": 0,
            "logprobs": 2}
    _, _, whole = server.post("/v1/completions", body)
    logprobs = whole["choices"][0]["logprobs"]
    print(f"completion logprobs: {len(logprobs['tokens'])} tokens, "
          f"offsets {logprobs['text_offset']}, "
          f"negative: {all(lp <= 0 for lp in logprobs['token_logprobs'])}")
    # n choices; the same seed gives the same texts.
    body = {"model": "stories260K", "prompt": "Once", "max_tokens": 12, "n": 3,
            "temperature": 1.0, "seed": 11}
    _, _, first = server.post("/v1/completions", body)
    _, _, second = server.post("/v1/completions", body)
    texts = [c["text"] for c in first["choices"]]
    print(f"n=3: indexes {[c['index'] for c in first['choices']]}, "
          f"seeded again the same: {texts == [c['text'] for c in second['choices']]}, "
          f"usage {first['usage']['completion_tokens']}")
    status, _, models = server.request("GET", "/v1/models")
    print(f"models: {status} {[m['id'] for m in json.loads(models)['data']]}")


def scenario_batch(server, hetc, model):
    """Concurrent requests join and leave the batch; each text equals the
    same request alone."""
    requests = []
    for i, prompt in enumerate(PROMPTS * 2):
        chat = i % 3 == 0
        requests.append((prompt, 10 + 7 * i % 50, chat, i % 2 == 0))
    alone = {}
    for prompt, tokens, chat, _ in requests:
        alone[(prompt, tokens, chat)] = run_alone(hetc, model, prompt, tokens, chat)
    results = [None] * len(requests)

    def client(index):
        prompt, tokens, chat, stream = requests[index]
        body = {"model": "stories260K", "max_tokens": tokens, "temperature": 0,
                "stream": stream}
        if chat:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        endpoint = "/v1/chat/completions" if chat else "/v1/completions"
        if stream:
            _, _, events = server.stream(endpoint, body)
            results[index] = streamed_text(events, chat)
        else:
            _, _, whole = server.post(endpoint, body)
            choice = whole["choices"][0]
            results[index] = choice["message"]["content"] if chat else choice["text"]

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    same = sum(results[i] == alone[(p, t, c)] for i, (p, t, c, _) in enumerate(requests))
    metrics = server.metrics()
    steps = metrics["hetc_batch_size_per_step_count"]
    single = metrics['hetc_batch_size_per_step_bucket{le="1"}']
    print(f"{len(requests)} concurrent requests, {same} texts as alone; "
          f"steps with more than one sequence: {steps - single > 0}; "
          f"blocks used after: {metrics[POOL_USED]:.0f}; "
          f"running after: {metrics['hetc_running_requests']:.0f}")
    # A long system prompt shared by two requests is read once.
    system = "You are a storyteller. " * 12
    for user in ("Tell me about a cat.", "Tell me about a dog."):
        body = {"model": "stories260K", "max_tokens": 4, "temperature": 0,
                "messages": [{"role": "system", "content": system},
                             {"role": "user", "content": user}]}
        server.post("/v1/chat/completions", body)
    print(f"prefix cache reused tokens: "
          f"{server.metrics()['hetc_prompt_tokens_reused_total'] >= 64}")


def wait_for(server, running, queued):
    for _ in range(3000):
        metrics = server.metrics()
        if (metrics["hetc_running_requests"] == running and
                metrics["hetc_queue_length"] == queued):
            return
        time.sleep(0.01)
    sys.exit(f"the server never had {running} running and {queued} queued: {metrics}")


def scenario_preempt(server, hetc, model):
    """Four requests whose blocks together overflow a pool of 256 positions
    (each fits alone): the latest goes back to the queue while the oldest
    finish, and every text equals the request alone. A request that could
    never fit the pool is refused."""
    prompts = PROMPTS[:4]
    alone = [run_alone(hetc, model, p, 120, False, ignore_eos=True) for p in prompts]
    results = [None] * len(prompts)

    def client(index):
        body = {"model": "stories260K", "prompt": prompts[index], "max_tokens": 120,
                "temperature": 0, "ignore_eos": True, "stream": index % 2 == 0}
        if body["stream"]:
            _, _, events = server.stream("/v1/completions", body)
            results[index] = streamed_text(events, False)
        else:
            results[index] = server.post("/v1/completions", body)[2]["choices"][0]["text"]

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    metrics = server.metrics()
    print(f"texts as alone: {sum(r == a for r, a in zip(results, alone))} of {len(prompts)}, "
          f"preempted: {metrics['hetc_preemptions_total'] > 0}, "
          f"blocks used after: {metrics[POOL_USED]:.0f}")
    error_line(server, "past the pool", "POST", "/v1/completions",
               {"model": "stories260K", "prompt": "Once", "max_tokens": 300})


def error_line(server, label, method, path, body=None, raw=None, headers=None):
    status, response_headers, payload = server.request(method, path, body, headers, raw)
    try:
        error = json.loads(payload)["error"]
        shape = f"{error['type']} {error['code']} param={error['param']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        shape = "NOT AN OPENAI ERROR: " + payload[:200]
    retry = response_headers.get("Retry-After")
    print(f"{label}: {status} {shape}" + (f" (Retry-After {retry})" if retry else ""))


def scenario_errors(server, hetc, model):
    """Malformed requests get 4xx OpenAI errors; clients that leave mid-way
    free their sequences; the server keeps serving."""
    completions = "/v1/completions"
    chat = "/v1/chat/completions"
    base = {"model": "stories260K", "prompt": "Once"}
    error_line(server, "malformed JSON", "POST", completions, raw='{"model": ')
    error_line(server, "not an object", "POST", completions, raw="[1, 2]")
    error_line(server, "missing model", "POST", completions, {"prompt": "Once"})
    error_line(server, "missing prompt", "POST", completions, {"model": "stories260K"})
    error_line(server, "missing messages", "POST", chat, {"model": "stories260K"})
    error_line(server, "wrong type", "POST", completions, dict(base, max_tokens="8"))
    error_line(server, "wrong role", "POST", chat,
               {"model": "stories260K", "messages": [{"role": "robot", "content": "hi"}]})
    error_line(server, "unknown model", "POST", completions, dict(base, model="gpt-4"))
    error_line(server, "too long", "POST", completions,
               dict(base, prompt="Once upon a time " * 2100))
    error_line(server, "max_tokens past context", "POST", completions,
               dict(base, max_tokens=9000))
    error_line(server, "negative", "POST", completions, dict(base, max_tokens=-1))
    error_line(server, "temperature", "POST", completions, dict(base, temperature=3))
    error_line(server, "unsupported", "POST", completions, dict(base, presence_penalty=1))
    error_line(server, "id past vocab", "POST", completions, dict(base, prompt=[1, 9999]))
    error_line(server, "too large", "POST", completions, raw="x" * (2 << 20))
    error_line(server, "no such path", "GET", "/v1/nothing")
    # Bytes that are not HTTP at all.
    connection = socket.create_connection((server.host, server.port))
    connection.sendall(b"\x16\x03\x01 not http\r\n\r\n")
    reply = b""
    while True:
        chunk = connection.recv(4096)
        if not chunk:
            break
        reply += chunk
    connection.close()
    head, _, body = reply.partition(b"\r\n\r\n")
    print(f"not HTTP: {head.split(b' ')[1].decode()} {json.loads(body)['error']['message']}")
    # Clients that leave: mid-stream, while waiting for a whole answer, and
    # before reading anything.
    for stream in (True, False, True):
        body = dict(base, max_tokens=8000, temperature=0, stream=stream, ignore_eos=True)
        raw = json.dumps(body).encode()
        connection = socket.create_connection((server.host, server.port))
        connection.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                           b"Content-Type: application/json\r\nContent-Length: "
                           + str(len(raw)).encode() + b"\r\n\r\n" + raw)
        if stream:
            connection.recv(256)
        connection.close()
    for _ in range(3000):
        if server.metrics()[CANCELLED] >= 3:
            break
        time.sleep(0.01)
    wait_for(server, 0, 0)
    metrics = server.metrics()
    print(f"after disconnects: cancelled "
          f"{metrics[CANCELLED]:.0f}, running "
          f"{metrics['hetc_running_requests']:.0f}, blocks used "
          f"{metrics[POOL_USED]:.0f}, "
          f"generated far fewer than 24000: {metrics['hetc_generated_tokens_total'] < 24000}")
    status, _, whole = server.post(completions, dict(base, max_tokens=5, temperature=0))
    print(f"still serving: {status} {whole['choices'][0]['finish_reason']}")
    codes = sorted(k for k in metrics if k.startswith("hetc_http_responses_total"))
    print("5xx responses of /v1/: " + str([k for k in codes if '/v1/' in k and 'code="5' in k]))


def scenario_auth(server, hetc, model):
    body = {"model": "stories260K", "prompt": "Once", "max_tokens": 2}
    error_line(server, "no key", "POST", "/v1/completions", body)
    error_line(server, "wrong key", "POST", "/v1/completions", body,
               headers={"Authorization": "Bearer nope"})
    status, _, _ = server.request("POST", "/v1/completions", body,
                                  {"Authorization": "Bearer sesame"})
    print(f"right key: {status}")
    status, _, _ = server.request("GET", "/health")
    print(f"health needs no key: {status}")


def scenario_queue(server, hetc, model):
    """With one place in the batch and one in the queue: a long request
    runs, a second waits, and a third is refused with 429 and Retry-After;
    once the first two leave, requests are served again."""
    body = {"model": "stories260K", "prompt": "Once", "max_tokens": 8000,
            "ignore_eos": True, "temperature": 0, "stream": True}
    raw = json.dumps(body).encode()
    held = []
    for running, queued in ((1, 0), (1, 1)):
        connection = socket.create_connection((server.host, server.port))
        connection.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                           b"Content-Type: application/json\r\nContent-Length: "
                           + str(len(raw)).encode() + b"\r\n\r\n" + raw)
        held.append(connection)
        wait_for(server, running, queued)
    status, headers, payload = server.request("POST", "/v1/completions",
                                              dict(body, stream=False, max_tokens=4))
    print(f"third request: {status} Retry-After {headers.get('Retry-After')} "
          f"{json.loads(payload)['error']['code']}")
    for connection in held:
        connection.close()
    wait_for(server, 0, 0)
    status, _, _ = server.request("POST", "/v1/completions",
                                  dict(body, stream=False, max_tokens=4))
    print(f"after the first two left: {status}")


def main():
    hetc, model, scenario = sys.argv[1:4]
    flags = sys.argv[5:] if len(sys.argv) > 4 and sys.argv[4] == "--" else []
    server = Server(hetc, model, flags)
    try:
        globals()["scenario_" + scenario](server, hetc, model)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
