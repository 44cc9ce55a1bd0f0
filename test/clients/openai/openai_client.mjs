// The official OpenAI client library against `hetc serve`: chat and
// completions, streamed and not, greedy, and each text compared with what
// `hetc run` gives for the same request. Starts the server on a free port
// of 127.0.0.1 and stops it at the end.
//
// usage: node openai_client.mjs HETC MODEL
import { execFileSync, spawn } from "node:child_process";
import OpenAI from "openai";

const [hetc, modelPath] = process.argv.slice(2);

function startServer() {
  const server = spawn(hetc, ["serve", modelPath, "--port", "0", "--api-key", "test-key"],
                       { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  return new Promise((resolve, reject) => {
    server.stderr.on("data", (chunk) => {
      log += chunk;
      const found = log.match(/listening on (http:\/\/[^ ]+)/);
      if (found && !server.baseURL) {
        server.baseURL = found[1];
        resolve(server);
      }
    });
    server.on("exit", (code) => reject(new Error(`hetc serve exited (${code}):\n${log}`)));
  });
}

async function waitReady(baseURL) {
  for (let tries = 0; tries < 3000; ++tries) {
    try {
      const response = await fetch(`${baseURL}/health`);
      if (response.status === 200) return;
    } catch {}
    await new Promise((done) => setTimeout(done, 200));
  }
  throw new Error("hetc serve never became ready");
}

function alone(prompt, tokens, chat) {
  const args = ["run", modelPath, "-p", prompt, "-n", String(tokens), "--temp", "0", "--json"];
  if (chat) args.push("--chat");
  return JSON.parse(execFileSync(hetc, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })).text;
}

const server = await startServer();
let failed = false;
try {
  await waitReady(server.baseURL);
  const client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: "test-key" });
  const models = await client.models.list();
  console.log(`models: ${models.data.map((m) => m.id).join(", ")}`);
  const model = models.data[0].id;

  for (const [prompt, tokens] of [["Once upon a time", 40], ["The little dog", 24]]) {
    const expectedText = alone(prompt, tokens, false);
    const completion = await client.completions.create({
      model, prompt, max_tokens: tokens, temperature: 0 });
    let streamed = "";
    let finish = null;
    const stream = await client.completions.create({
      model, prompt, max_tokens: tokens, temperature: 0, stream: true });
    for await (const chunk of stream) {
      streamed += chunk.choices[0].text;
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    console.log(`completion ${JSON.stringify(prompt)}: ` +
                `same as hetc run: ${completion.choices[0].text === expectedText}, ` +
                `streamed same: ${streamed === expectedText}, ` +
                `finish ${completion.choices[0].finish_reason}/${finish}, ` +
                `usage ${completion.usage.completion_tokens}`);

    const expectedReply = alone(prompt, tokens, true);
    const chat = await client.chat.completions.create({
      model, messages: [{ role: "user", content: prompt }], max_tokens: tokens, temperature: 0 });
    let reply = "";
    let usage = null;
    const chatStream = await client.chat.completions.create({
      model, messages: [{ role: "user", content: prompt }], max_tokens: tokens, temperature: 0,
      stream: true, stream_options: { include_usage: true } });
    for await (const chunk of chatStream) {
      if (chunk.choices.length) reply += chunk.choices[0].delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    console.log(`chat ${JSON.stringify(prompt)}: ` +
                `same as hetc run: ${chat.choices[0].message.content === expectedReply}, ` +
                `streamed same: ${reply === expectedReply}, ` +
                `role ${chat.choices[0].message.role}, ` +
                `streamed usage ${usage?.completion_tokens}`);
  }

  // Errors reach the client as its own error classes.
  try {
    await client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] });
    console.log("unknown model: accepted");
  } catch (error) {
    console.log(`unknown model: ${error.constructor.name} ${error.status} ${error.code}`);
  }
  const wrongKey = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: "wrong", maxRetries: 0 });
  try {
    await wrongKey.models.list();
    console.log("wrong key: accepted");
  } catch (error) {
    console.log(`wrong key: ${error.constructor.name} ${error.status}`);
  }
} catch (error) {
  console.log(`FAILED: ${error.stack}`);
  failed = true;
} finally {
  const exited = new Promise((done) => server.on("exit", (code) => done(code)));
  server.kill("SIGTERM");
  console.log(`server exit code: ${await exited}`);
}
process.exit(failed ? 1 : 0);
