"""Drives `hetc chat` through its standard input, as a person at a terminal
would.

usage: chat_client.py HETC MODEL conversation|interrupt

conversation: "Hi", /reset, "Hello", /exit: the output is exactly the two
greedy replies `hetc run --chat` gives alone (after /reset the conversation
starts again) and the /reset notice.
interrupt: a long reply stopped by Ctrl-C (SIGINT) once it has begun; the
chat goes on and answers the next message; /exit leaves with 0.
"""
import json
import os
import signal
import subprocess
import sys
import time

hetc, model, scenario = sys.argv[1:4]


def alone(prompt, tokens):
    return json.loads(subprocess.run(
        [hetc, "run", model, "--chat", "-p", prompt, "-n", str(tokens), "--temp", "0",
         "--json"], capture_output=True, text=True, check=True).stdout)["text"]


if scenario == "conversation":
    chat = subprocess.run([hetc, "chat", model, "--temp", "0", "-n", "30"],
                          input="Hi\n/reset\nHello\n/exit\n", capture_output=True,
                          text=True)
    expected = (alone("Hi", 30) + "\n(the conversation is forgotten)\n" +
                alone("Hello", 30) + "\n")
    print(f"replies equal hetc run --chat's: {chat.stdout == expected}")
    print(f"exit code: {chat.returncode}")
    print("stderr: " + chat.stderr.strip().replace("\n", " | "))
else:
    chat = subprocess.Popen([hetc, "chat", model, "--temp", "0", "-n", "8000",
                             "--ignore-eos", "--ctx-size", "8192"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    chat.stdin.write(b"Tell me a long story.\n")
    chat.stdin.flush()
    output = chat.stdout.read(1)
    chat.send_signal(signal.SIGINT)
    while not output.endswith(b"\n(stopped)\n"):
        chunk = os.read(chat.stdout.fileno(), 4096)
        if not chunk:
            break
        output += chunk
    print(f"Ctrl-C stopped the reply: {output.endswith(b'(stopped)' + bytes([10]))}, "
          f"still running: {chat.poll() is None}")
    chat.stdin.write(b"Hello\n")
    chat.stdin.flush()
    reply = os.read(chat.stdout.fileno(), 4096)
    print(f"answered after Ctrl-C: {len(reply) > 0}")
    chat.stdin.write(b"/exit\n")
    chat.stdin.flush()
    chat.stdout.read()
    print(f"exit code: {chat.wait(timeout=120)}")
