// `hetc chat`: a conversation in the terminal, in the model's chat template,
// on the engine `hetc serve` runs (server/Engine).
#include "Commands.h"
#include "Flags.h"
#include "ModelSession.h"

#include "server/Engine.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <pthread.h>
#include <random>
#include <unistd.h>

namespace hetc::cli {

namespace {

struct ChatFlags {
  std::string model;
  SessionFlags session;
  std::string chatTemplate;
  std::string systemPrompt;
  std::vector<std::string> stop;
  int64_t maxTokens = 512;
  SamplingFlags sampling;
  bool ignoreEos = false;
};

std::atomic<bool> interrupted{false};

void onInterrupt(int) { interrupted = true; }

/// Ctrl-C sets `interrupted` and interrupts a read in progress (no
/// SA_RESTART), so both a reply and the prompt notice it.
void catchInterrupt() {
  struct sigaction action = {};
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
}

} // namespace

Action registerChatCommand(CLI::App &app) {
  auto flags = std::make_shared<ChatFlags>();
  CLI::App *command = app.add_subcommand(
      "chat", "Chat with a model in the terminal, in its chat template "
              "(/reset forgets the conversation, /exit or Ctrl-D leaves, "
              "Ctrl-C stops a reply)");
  addModelArgument(command, flags->model, "A .gguf model or a .hetpack");
  addSessionOptions(*command, flags->session);
  addChatTemplateOption(*command, flags->chatTemplate);
  command->add_option("--system-prompt", flags->systemPrompt,
                      "The system message that starts the conversation");
  addStopOption(*command, flags->stop);
  command->add_option("-n,--tokens,--n-predict", flags->maxTokens,
                      "The most tokens of one reply")
      ->check(wholeRange(1, INT32_MAX))
      ->capture_default_str();
  addSamplingOptions(*command, flags->sampling);
  command->add_flag("--ignore-eos", flags->ignoreEos,
                    "Keep a reply going after an end-of-generation token");
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    std::string error;
    OpenedModel opened;
    if (int code = openModelSession(flags->model, flags->session, "hetc chat",
                                    nullptr, opened, error)) {
      std::cerr << "hetc chat: " << error << "\n";
      return code;
    }
    std::string family;
    if (!chatTemplateFor(*opened.model, flags->chatTemplate, "hetc chat", family,
                         error)) {
      std::cerr << "hetc chat: " << error << "\n";
      return 2;
    }
    const hetrt::api::Model &model = *opened.model;
    server::EngineOptions options;
    options.parallel = 1;
    // The engine's thread never takes Ctrl-C: this thread must, to stop a
    // reply or leave at the prompt.
    sigset_t interrupt;
    sigemptyset(&interrupt);
    sigaddset(&interrupt, SIGINT);
    pthread_sigmask(SIG_BLOCK, &interrupt, nullptr);
    server::Engine engine(model, *opened.session, options);
    pthread_sigmask(SIG_UNBLOCK, &interrupt, nullptr);
    bool terminal = isatty(STDIN_FILENO);
    printMessage("hetc chat: %s on %s, chat template %s; /reset forgets, "
                 "/exit leaves, Ctrl-C stops a reply\n",
                 flags->model.c_str(), opened.runsOn.c_str(), family.c_str());
    catchInterrupt();
    std::mt19937_64 seeds(flags->sampling.seed >= 0
                              ? static_cast<uint64_t>(flags->sampling.seed)
                              : std::random_device{}());
    std::vector<std::pair<std::string, std::string>> conversation;
    if (!flags->systemPrompt.empty())
      conversation.emplace_back("system", flags->systemPrompt);
    const size_t start = conversation.size();
    hetrt::api::Status status;
    while (true) {
      if (terminal) {
        std::fputs("> ", stdout);
        std::fflush(stdout);
      }
      std::string line;
      interrupted = false;
      if (!std::getline(std::cin, line)) {
        // End of input, or Ctrl-C at the prompt: leave.
        if (terminal)
          std::fputs("\n", stdout);
        break;
      }
      if (line == "/exit" || line == "/quit")
        break;
      if (line == "/reset") {
        conversation.resize(start);
        std::fputs("(the conversation is forgotten)\n", stdout);
        continue;
      }
      if (line.empty())
        continue;
      conversation.emplace_back("user", line);
      std::string text;
      std::vector<int32_t> prompt;
      if (!model.renderChat(family, conversation, /*addAssistant=*/true, text,
                            status) ||
          !model.tokenizeSpecial(text, /*addSpecial=*/true, prompt, status)) {
        std::cerr << "hetc chat: " << status.message << "\n";
        conversation.pop_back();
        continue;
      }
      int64_t room =
          model.contextLength() - static_cast<int64_t>(prompt.size()) + 1;
      if (room < 1) {
        std::cerr << "hetc chat: the conversation is " << prompt.size()
                  << " tokens and fills the context of "
                  << model.contextLength()
                  << "; /reset starts a new one\n";
        conversation.pop_back();
        continue;
      }
      server::GenerationRequest request;
      request.prompt = std::move(prompt);
      request.maxTokens = std::min(flags->maxTokens, room);
      hetrt_sampling_params_t params = samplingParams(flags->sampling, seeds());
      request.sampling = {params.temperature, params.top_k, params.top_p,
                          params.repetition_penalty, params.seed};
      request.stop = flags->stop;
      request.ignoreEos = flags->ignoreEos;
      std::string why;
      std::shared_ptr<server::Generation> generation =
          engine.submit(std::move(request), why);
      if (!generation) {
        std::cerr << "hetc chat: " << why << "\n";
        return 1;
      }
      std::string reply;
      server::GenerationUpdate update;
      while (!update.finished) {
        if (interrupted) {
          generation->cancel();
          interrupted = false;
        }
        if (!generation->wait(update, std::chrono::milliseconds(50)))
          continue;
        reply += update.text;
        std::fwrite(update.text.data(), 1, update.text.size(), stdout);
        std::fflush(stdout);
      }
      std::fputs("\n", stdout);
      if (!update.error.empty()) {
        std::cerr << "hetc chat: " << update.error << "\n";
        return 1;
      }
      if (update.finishReason == "cancelled")
        std::fputs("(stopped)\n", stdout);
      // What was shown is what the model said, also when stopped.
      conversation.emplace_back("assistant", reply);
    }
    return 0;
  };
}

} // namespace hetc::cli
