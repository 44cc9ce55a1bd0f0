// `hetc serve`'s HTTP side: the OpenAI endpoints (completions and chat
// completions, streamed as server-sent events or not), /v1/models, /health
// and /metrics, over cpp-httplib. It listens before the model is loaded, so
// /health can say when it is ready.
#ifndef HETC_SERVER_HTTPSERVER_H
#define HETC_SERVER_HTTPSERVER_H

#include "server/Engine.h"

#include "hetrt/hetrt.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace hetc::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  /// 0: a free port, which bind() returns.
  int port = 8080;
  /// Requests to /v1/ need "Authorization: Bearer <apiKey>" when set.
  std::string apiKey;
  /// Larger request bodies are refused (413).
  size_t maxBodyBytes = 1 << 20;
  /// Connections served at once (each streaming client holds one).
  int32_t connections = 160;
};

/// What the server serves once the model is loaded; all outlive the server.
struct ServedModel {
  const hetrt::api::Model *model = nullptr;
  Engine *engine = nullptr;
  /// The name clients put in "model".
  std::string id;
  /// The chat template family prompts are rendered in.
  std::string chatTemplate;
};

class HttpServer {
public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  /// Binds the address: the port, or -1 with `error` set.
  int bind(std::string &error);
  /// Serves on a thread of its own until stop().
  void start();
  /// Serves `served` from now on (until then /v1/ answers 503).
  void ready(const ServedModel &served);
  /// Stops accepting and waits for the serving thread.
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace hetc::server

#endif // HETC_SERVER_HTTPSERVER_H
