// `hetc serve`: the model behind an OpenAI-compatible HTTP API, with
// continuous batching (server/).
#include "Commands.h"
#include "Flags.h"
#include "ModelSession.h"
#include "PackCache.h"

#include "abi/CodeRecord.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/ModelConfig.h"

#include "server/Engine.h"
#include "server/HttpServer.h"

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <pthread.h>

namespace hetc::cli {

namespace {

struct ServeFlags {
  std::string model;
  SessionFlags session;
  server::ServerOptions http;
  server::EngineOptions engine;
  std::string alias;
  std::string chatTemplate;
};

/// The name clients give: the file's name without its extension.
std::string modelId(const std::string &path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  for (const char *extension : {".gguf", ".hetpack"}) {
    std::string suffix = extension;
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

} // namespace

Action registerServeCommand(CLI::App &app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App *command = app.add_subcommand(
      "serve", "Serve a model over an OpenAI-compatible HTTP API "
               "(/v1/completions, /v1/chat/completions), batching requests "
               "continuously");
  addModelArgument(command, flags->model, "A .gguf model or a .hetpack");
  addSessionOptions(*command, flags->session);
  command->add_option("--host", flags->http.host,
                      "The address to listen on")
      ->capture_default_str();
  command->add_option("--port", flags->http.port,
                      "The port to listen on (0: any free port, printed at "
                      "start)")
      ->check(wholeRange(0, 65535))
      ->capture_default_str();
  command->add_option("--parallel,--np", flags->engine.parallel,
                      "Requests decoded together at most (the batch)")
      ->check(wholeRange(1, 64))
      ->capture_default_str();
  command->add_option("--max-queued", flags->engine.maxQueued,
                      "Requests that may wait for the batch; more are "
                      "answered 429")
      ->check(wholeRange(0, 4096))
      ->capture_default_str();
  command->add_option("--prefill-chunk", flags->engine.prefillChunk,
                      "Prompt tokens prefilled per step at most, so long "
                      "prompts never stall the running requests for long")
      ->check(wholeRange(1, INT32_MAX))
      ->capture_default_str();
  command->add_option("--api-key", flags->http.apiKey,
                      "Require 'Authorization: Bearer KEY' on /v1/ "
                      "(default: $HETC_API_KEY; none when unset)");
  command->add_option("--max-body", flags->http.maxBodyBytes,
                      "Request bodies larger than this many bytes are "
                      "answered 413")
      ->check(wholeRange(1024, INT32_MAX))
      ->capture_default_str();
  command->add_option("--alias", flags->alias,
                      "The model's name in requests and /v1/models (default: "
                      "the file's name without its extension)");
  addChatTemplateOption(*command, flags->chatTemplate);
  command->add_option("--kv-pool-blocks", flags->session.kvPoolBlocks,
                      "Blocks of 64 positions in the KV pool of a GGUF "
                      "compiled for the CPU, which the requests share "
                      "(default: --parallel sequences of the whole context)")
      ->check(wholeRange(1, INT32_MAX / 64));
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    if (flags->http.apiKey.empty())
      if (const char *key = std::getenv("HETC_API_KEY"))
        flags->http.apiKey = key;
    // Signals go to this thread alone: the server's threads start with them
    // blocked. While the model loads (perhaps minutes of compiling), Ctrl-C
    // ends the process at once; once it serves, this thread waits for them
    // below and stops the server cleanly.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    // A stream's client may leave mid-write: that is an error to the
    // write, not a signal that ends the server.
    std::signal(SIGPIPE, SIG_IGN);

    // Each running request and each waiting one holds a connection.
    flags->http.connections =
        flags->engine.parallel + flags->engine.maxQueued + 16;
    server::HttpServer http(flags->http);
    std::string error;
    int port = http.bind(error);
    if (port < 0) {
      std::cerr << "hetc serve: " << error << "\n";
      return 1;
    }
    printMessage("hetc serve: listening on http://%s:%d (loading the model; "
                 "GET /health says when it is ready)\n",
                 flags->http.host.c_str(), port);
    http.start();
    pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);

    // The pool holds every running request's whole context, so the batch
    // never waits for blocks; a pack keeps the pool it was compiled with.
    if (flags->session.kvPoolBlocks == 0 && !isPack(flags->model)) {
      int64_t context = flags->session.contextLength;
      if (context == 0) {
        std::unique_ptr<hetrt::format::GgufFile> file =
            hetrt::format::GgufFile::open(flags->model, error);
        std::optional<hetrt::format::ModelConfig> config =
            file ? hetrt::format::ModelConfig::fromGguf(*file, error)
                 : std::nullopt;
        if (!config) {
          std::cerr << "hetc serve: " << error << "\n";
          return 1;
        }
        context = config->contextLength;
      }
      int64_t perSequence = (context + hetrt::format::kDefaultKvBlockSize - 1) /
                            hetrt::format::kDefaultKvBlockSize;
      flags->session.kvPoolBlocks = perSequence * flags->engine.parallel;
    }
    OpenedModel opened;
    if (int code = openModelSession(flags->model, flags->session, "hetc serve",
                                    nullptr, opened, error)) {
      std::cerr << "hetc serve: " << error << "\n";
      return code;
    }
    std::string family;
    if (!chatTemplateFor(*opened.model, flags->chatTemplate, "hetc serve", family,
                         error)) {
      std::cerr << "hetc serve: " << error << "\n";
      return 2;
    }
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    server::Engine engine(*opened.model, *opened.session, flags->engine);
    server::ServedModel served;
    served.model = opened.model.get();
    served.engine = &engine;
    served.id = flags->alias.empty() ? modelId(flags->model) : flags->alias;
    served.chatTemplate = family;
    http.ready(served);
    printMessage("hetc serve: ready: model '%s' on %s, %d requests at once, "
                 "a context of %d tokens, chat template %s\n",
                 served.id.c_str(), opened.runsOn.c_str(),
                 flags->engine.parallel, opened.model->contextLength(),
                 family.c_str());
    int signal = 0;
    sigwait(&signals, &signal);
    printMessage("hetc serve: stopping (%s)\n",
                 signal == SIGTERM ? "SIGTERM" : "SIGINT");
    engine.stop();
    http.stop();
    return 0;
  };
}

} // namespace hetc::cli
