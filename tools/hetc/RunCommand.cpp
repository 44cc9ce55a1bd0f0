// `hetc run`: generate text from a model. A GGUF is compiled on first use and
// the pack cached by the model's content hash.
#include "Commands.h"
#include "DeviceJson.h"
#include "Flags.h"
#include "ModelSession.h"
#include "PackCache.h"

#include "hetrt/hetrt.hpp"
#include "server/TextStream.h"
#include "runtime/format/Gguf.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/format/InputFile.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/format/OutputFile.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string_view>

namespace hetc::cli {

namespace {

struct RunFlags {
  std::string model;
  std::string prompt;
  int64_t numTokens = 64;
  SamplingFlags sampling;
  bool json = false;
  bool ignoreEos = false;
  std::string logitsOut;
  std::string promptFile;
  SessionFlags session;
  std::vector<std::string> stop;
  bool chat = false;
  std::string chatTemplate;
  std::string systemPrompt;
};

/// The most bytes `tokens` tokens stand for, and the encoding of a text:
/// the model's tokenizer, before the pack exists (its GGUF) or after (the
/// runtime's API).
struct PromptEncoder {
  std::function<uint64_t(int64_t tokens)> maxTextBytes;
  std::function<bool(const std::string &text, std::vector<int32_t> &ids,
                     std::string &error)>
      encode;
};

/// Encodes `text` for a context of `context` tokens: 0 with the tokens in
/// `prompt`, or the exit code with `error` set when it cannot fit.
int encodePrompt(const PromptEncoder &encoder, const std::string &text,
                 int64_t context, std::vector<int32_t> &prompt,
                 std::string &error) {
  // Encoding costs microseconds a byte: a text that cannot fit the context
  // is refused before it is encoded.
  if (text.size() > encoder.maxTextBytes(context)) {
    error = "the prompt is " + std::to_string(text.size()) +
            " bytes, more than a context of " + std::to_string(context) +
            " tokens can hold; give a shorter prompt or a larger --context";
    return 1;
  }
  if (!encoder.encode(text, prompt, error))
    return 1;
  if (prompt.empty()) {
    error = "the prompt is empty and the model adds no BOS token; give a "
            "prompt with -p";
    return 2;
  }
  if (static_cast<int64_t>(prompt.size()) > context) {
    error = "the prompt is " + std::to_string(prompt.size()) +
            " tokens but the context holds " + std::to_string(context) +
            "; give a shorter prompt or a larger --context";
    return 1;
  }
  return 0;
}

/// For a GGUF model, whether the prompt fits the context it will be compiled
/// for, found from its metadata before minutes of compiling: 0, or the exit
/// code with `error` set.
int checkPromptBeforeCompiling(const std::string &model, int64_t contextLength,
                               const std::string &text, std::string &error) {
  std::unique_ptr<hetrt::format::GgufFile> file =
      hetrt::format::GgufFile::open(model, error);
  if (!file)
    return 1;
  std::optional<hetrt::format::ModelConfig> config =
      hetrt::format::ModelConfig::fromGguf(*file, error);
  if (!config)
    return 1;
  std::unique_ptr<hetrt::tokenizer::Tokenizer> tokenizer =
      hetrt::tokenizer::Tokenizer::forModel(*file, config->vocabSize, error);
  if (!tokenizer)
    return 1;
  PromptEncoder encoder;
  encoder.maxTextBytes = [&](int64_t tokens) {
    return tokenizer->maxTextBytesFor(tokens);
  };
  encoder.encode = [&](const std::string &prompt, std::vector<int32_t> &ids,
                       std::string &) {
    ids = tokenizer->encode(prompt, /*addSpecial=*/true);
    return true;
  };
  std::vector<int32_t> prompt;
  return encodePrompt(encoder, text,
                      contextLength > 0 ? contextLength : config->contextLength,
                      prompt, error);
}

/// Reads the prompt of -f: a file, or standard input for "-".
bool readPromptFile(const std::string &path, std::string &prompt,
                    std::string &error) {
  std::optional<std::string> text = hetrt::format::readPromptText(path, error);
  if (!text) {
    error = "-f: " + error;
    return false;
  }
  prompt = std::move(*text);
  return true;
}

/// Writes rows of float32 logits as a NumPy .npy file.
bool writeNpy(const std::string &path, const std::vector<float> &values,
              int64_t rows, int64_t columns, std::string &error) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(columns) +
                       "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  hetrt::format::OutputFile out;
  if (!out.open(path, error))
    return false;
  out.write(std::string_view("\x93NUMPY\x01\x00", 8));
  uint16_t length = static_cast<uint16_t>(header.size());
  out.write(std::string_view(reinterpret_cast<const char *>(&length), 2));
  out.write(header);
  out.write(std::string_view(reinterpret_cast<const char *>(values.data()),
                             values.size() * sizeof(float)));
  return out.commit(error);
}

} // namespace

Action registerRunCommand(CLI::App &app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App *command = app.add_subcommand(
      "run", "Generate text from a model (a GGUF file is compiled and cached "
             "on first use)");
  addModelArgument(command, flags->model, "A .gguf model or a .hetpack");
  command->add_option("-p,--prompt", flags->prompt, "The prompt text");
  command->add_option("-f,--file", flags->promptFile,
                      "Read the prompt from a file ('-': standard input)")
      ->excludes("--prompt");
  command->add_option("-n,--tokens,--n-predict", flags->numTokens,
                      "How many tokens to generate (at most what the context "
                      "holds after the prompt)")
      ->check(wholeRange(0, INT32_MAX))
      ->capture_default_str();
  addSamplingOptions(*command, flags->sampling);
  addSessionOptions(*command, flags->session);
  addStopOption(*command, flags->stop);
  command->add_flag("--chat", flags->chat,
                    "Read the prompt as a user's message and answer it in the "
                    "model's chat template (one turn; `hetc chat` holds a "
                    "conversation)");
  addChatTemplateOption(*command, flags->chatTemplate);
  command->add_option("--system-prompt", flags->systemPrompt,
                      "With --chat: the system message before the user's");
  command->add_flag("--json", flags->json,
                    "Print one JSON object with the token ids, text and speeds");
  command->add_flag("--ignore-eos", flags->ignoreEos,
                    "Keep generating after an end-of-generation token");
  command->add_option("--logits-out", flags->logitsOut,
                      "Save the logits of every step (.npy, float32)")
      ->check(outputFileName());
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    std::string error;
    if (command->count("--file") && flags->promptFile.empty()) {
      std::cerr << "hetc run: -f is given an empty path; give a file name\n";
      return 2;
    }
    if (!flags->logitsOut.empty() &&
        (!hetrt::format::checkOutputPath(flags->logitsOut,
                                         {flags->model, flags->promptFile},
                                         "--logits-out", error) ||
         !hetrt::format::checkReplaceable(flags->logitsOut, "\x93NUMPY",
                                          "a NumPy .npy file", "--logits-out",
                                          error))) {
      std::cerr << "hetc run: " << error << "\n";
      return 1;
    }
    std::string promptText = flags->prompt;
    if (!flags->promptFile.empty() &&
        !readPromptFile(flags->promptFile, promptText, error)) {
      // An input that cannot be read, as docs/cli.md's exit codes say.
      std::cerr << "hetc run: " << error << "\n";
      return 1;
    }
    if (!flags->chat && (command->count("--chat-template") ||
                         command->count("--system-prompt"))) {
      std::cerr << "hetc run: --chat-template and --system-prompt apply to "
                   "a chat; give --chat too\n";
      return 2;
    }
    // A cached pack skips the check: the prompt is checked against the
    // loaded model below either way. A chat's prompt is known only once its
    // template is.
    int promptCode = 0;
    auto beforeCompiling = [&](std::string &why) {
      if (flags->chat)
        return true;
      promptCode = checkPromptBeforeCompiling(
          flags->model, flags->session.contextLength, promptText, why);
      return promptCode == 0;
    };
    OpenedModel opened;
    if (int code = openModelSession(flags->model, flags->session, "hetc run",
                                    beforeCompiling, opened, error)) {
      std::cerr << "hetc run: " << error << "\n";
      return promptCode ? promptCode : code;
    }
    hetrt::api::Model *model = opened.model.get();
    hetrt::api::Session *session = opened.session.get();
    bool onCpu = opened.onCpu, planned = opened.planned;
    const std::string &packPath = opened.packPath;
    const hetrt_model_description_t &described = model->description();
    hetrt::api::Status status;
    // Checked again now that the pack (perhaps a cache entry) and the
    // weights it reads are known: --logits-out must be neither.
    if (!flags->logitsOut.empty() &&
        !hetrt::format::checkOutputPath(
            flags->logitsOut,
            {flags->model, packPath, described.weights_path, flags->promptFile},
            "--logits-out", error)) {
      std::cerr << "hetc run: " << error << "\n";
      return 1;
    }
    int64_t context = model->contextLength();
    PromptEncoder encoder;
    encoder.maxTextBytes = [&](int64_t tokens) {
      // Without a bound, the encoding itself says what is wrong.
      uint64_t bytes = 0;
      return model->maxTextBytes(static_cast<uint64_t>(tokens), bytes, status)
                 ? bytes
                 : std::numeric_limits<uint64_t>::max();
    };
    encoder.encode = [&](const std::string &text, std::vector<int32_t> &ids,
                         std::string &why) {
      if (flags->chat ? model->tokenizeSpecial(text, /*addSpecial=*/true, ids,
                                               status)
                      : model->tokenize(text, /*addSpecial=*/true, ids, status))
        return true;
      why = status.message;
      return false;
    };
    std::string family;
    if (flags->chat) {
      if (!chatTemplateFor(*model, flags->chatTemplate, "hetc run", family,
                           error)) {
        std::cerr << "hetc run: " << error << "\n";
        return 2;
      }
      std::vector<std::pair<std::string, std::string>> messages;
      if (!flags->systemPrompt.empty())
        messages.emplace_back("system", flags->systemPrompt);
      messages.emplace_back("user", promptText);
      if (!model->renderChat(family, messages, /*addAssistant=*/true,
                             promptText, status)) {
        std::cerr << "hetc run: " << status.message << "\n";
        return 1;
      }
    }
    std::vector<int32_t> prompt;
    if (int code = encodePrompt(encoder, promptText, context, prompt, error)) {
      std::cerr << "hetc run: " << error << "\n";
      return code;
    }
    // Every generated token but the last enters the cache; the end of the
    // context is where generation stops, never an error.
    int64_t room = context - static_cast<int64_t>(prompt.size()) + 1;
    int64_t numTokens = flags->numTokens;
    if (numTokens > room) {
      std::cerr << "hetc run: -n " << numTokens << " does not fit: the "
                << "context holds " << context << " tokens and the prompt takes "
                << prompt.size() << "; generating at most " << room
                << " (give a larger --context for more)\n";
      numTokens = room;
    }
    uint64_t seed = flags->sampling.seed >= 0
                        ? static_cast<uint64_t>(flags->sampling.seed)
                        : std::random_device{}();
    hetrt_sampling_params_t params = samplingParams(flags->sampling, seed);
    std::unique_ptr<hetrt::api::Sampler> sampler =
        hetrt::api::Sampler::create(params, status);
    if (!sampler) {
      std::cerr << "hetc run: " << status.message << "\n";
      return 1;
    }
    const hetrt_session_info_t sessionInfo = session->info();
    const std::string &runsOn = opened.runsOn;
    int64_t vocabSize = session->vocabSize();

    std::vector<float> logitRows;
    auto recordLogits = [&] {
      if (!flags->logitsOut.empty())
        logitRows.insert(logitRows.end(), session->logits(),
                         session->logits() + vocabSize);
    };
    using Clock = std::chrono::steady_clock;
    auto prefillStart = Clock::now();
    if (!session->prefill(prompt, status)) {
      std::cerr << "hetc run: " << status.message << "\n";
      return 1;
    }
    double prefillSeconds =
        std::chrono::duration<double>(Clock::now() - prefillStart).count();
    recordLogits();

    // A chat prints the reply alone; a completion continues its prompt.
    if (!flags->json && !flags->chat) {
      std::fputs(flags->prompt.c_str(), stdout);
      std::fflush(stdout);
    }
    std::vector<int32_t> history = prompt;
    std::vector<int32_t> generated;
    const char *stopReason = "length";
    hetc::server::TextStream text(flags->stop);
    auto show = [&](const std::string &ready) {
      if (flags->json || ready.empty())
        return;
      std::fwrite(ready.data(), 1, ready.size(), stdout);
      std::fflush(stdout);
    };
    auto decodeStart = Clock::now();
    int64_t decodeSteps = 0;
    for (int64_t i = 0; i < numTokens; ++i) {
      int32_t token = 0;
      bool isEnd = false;
      std::string piece;
      if (!sampler->sample(session->logits(), static_cast<int32_t>(vocabSize),
                           history, token, status) ||
          !model->isEndOfGeneration(token, isEnd, status) ||
          !model->tokenPiece(token, piece, status)) {
        std::cerr << "\nhetc run: " << status.message << "\n";
        return 1;
      }
      generated.push_back(token);
      history.push_back(token);
      if (!flags->ignoreEos && isEnd) {
        stopReason = "eos";
        break;
      }
      // Each token's piece, as it comes (a continuation decodes to its
      // pieces joined); what a stop string may still claim, or a character
      // still incomplete, waits for the next.
      show(text.push(piece));
      if (text.stopped()) {
        stopReason = "stop";
        break;
      }
      if (i + 1 == numTokens) {
        if (numTokens < flags->numTokens)
          stopReason = "context";
        break;
      }
      if (!session->decode(token, status)) {
        std::cerr << "\nhetc run: " << status.message << "\n";
        return 1;
      }
      ++decodeSteps;
      recordLogits();
    }
    show(text.finish());
    double decodeSeconds =
        std::chrono::duration<double>(Clock::now() - decodeStart).count();
    double prefillRate = prefillSeconds > 0 ? prompt.size() / prefillSeconds : 0;
    double decodeRate = decodeSeconds > 0 ? decodeSteps / decodeSeconds : 0;

    if (!flags->logitsOut.empty() &&
        !writeNpy(flags->logitsOut, logitRows,
                  static_cast<int64_t>(logitRows.size()) / vocabSize,
                  vocabSize, error)) {
      std::cerr << "hetc run: --logits-out " << error << "\n";
      return 1;
    }
    if (flags->json) {
      hetrt_kv_cache_info_t kvCache{};
      if (!model->kvCacheInfo(kvCache, status)) {
        std::cerr << "hetc run: " << status.message << "\n";
        return 1;
      }
      nlohmann::json result = {
          {"prompt_tokens", prompt},
          {"tokens", generated},
          {"text", text.shown()},
          {"prefill_tokens_per_s", prefillRate},
          {"decode_tokens_per_s", decodeRate},
          {"seed", seed},
          {"variant", onCpu ? std::string(described.cpu_code) : std::string()},
          {"device", onCpu ? std::string("cpu0") : runsOn},
          {"threads", sessionInfo.num_threads},
          {"stop_reason", stopReason},
          {"kv_cache",
           {{"element_type", kvCache.element_type},
            {"bytes", kvCache.bytes_per_session}}},
      };
      if (flags->chat)
        result["chat_template"] = family;
      // The paged cache's blocks: how many the run took of the pool, and
      // what the prefix cache and sharing did.
      if (std::optional<hetrt_kv_stats_t> kv = session->kvStats())
        result["kv_cache"].update({{"block_size", kv->block_size},
                                   {"blocks", kv->blocks},
                                   {"blocks_used", kv->blocks - kv->free_blocks},
                                   {"reused_tokens", kv->reused_tokens},
                                   {"copied_blocks", kv->copied_blocks},
                                   {"evicted_blocks", kv->evicted_blocks},
                                   {"blocks_to_host", kv->blocks_to_host},
                                   {"blocks_from_host", kv->blocks_from_host},
                                   {"blocks_to_disk", kv->blocks_to_disk},
                                   {"blocks_from_disk", kv->blocks_from_disk},
                                   {"host_budget_blocks",
                                    kv->host_budget_blocks},
                                   {"disk_budget_blocks",
                                    kv->disk_budget_blocks},
                                   {"tier_format",
                                    kv->tiers_int8 ? "int8" : "exact"}});
      // Where the session's bytes are, and what moved between them.
      nlohmann::json spaces = nlohmann::json::array();
      for (const hetrt_memory_space_t &space : session->memorySpaces())
        spaces.push_back(hetc::cli::memorySpaceJson(space));
      result["memory_spaces"] = spaces;
      if (!onCpu) {
        // What each device ran: the code, the plan's units, its dispatches,
        // and the activations copied in and out of its memory.
        nlohmann::json devices = nlohmann::json::array();
        for (const hetrt::api::DeviceStats &stats : session->deviceStats()) {
          nlohmann::json entry = {{"name", stats.name},
                                  {"code", stats.code},
                                  {"dispatches", stats.dispatches},
                                  {"bytes_in", stats.bytesIn},
                                  {"bytes_out", stats.bytesOut}};
          if (planned)
            entry["units"] = stats.units;
          entry["memory"] = hetc::cli::memoryJson(stats.memory);
          devices.push_back(entry);
        }
        result["devices"] = devices;
        if (planned)
          result["system"] = sessionInfo.system;
        // The plan's decode rate at the middle of the decode steps that ran,
        // beside the measured one.
        double plannedSeconds = 0;
        hetrt::api::Status noPrediction;
        int64_t middle = static_cast<int64_t>(prompt.size()) +
                         static_cast<int64_t>(generated.size()) / 2;
        if (planned &&
            model->plannedDecodeSeconds(middle, plannedSeconds,
                                        noPrediction) &&
            plannedSeconds > 0)
          result["planned_decode_tokens_per_s"] = 1 / plannedSeconds;
      }
      // Generated bytes need not be valid UTF-8; invalid ones become U+FFFD.
      std::cout << result.dump(-1, ' ', false,
                               nlohmann::json::error_handler_t::replace)
                << "\n";
    } else {
      std::fprintf(stdout, "\n");
      // The text is complete before the report on stderr begins.
      std::fflush(stdout);
      if (std::string_view(stopReason) == "context")
        hetc::cli::printMessage(
                     "hetc run: stopped at the end of the context (%lld "
                     "tokens)\n",
                     static_cast<long long>(context));
      hetc::cli::printMessage(
                   "hetc run: prefill %zu tokens at %.1f tokens/s, decode %lld "
                   "tokens at %.1f tokens/s (%s)\n",
                   prompt.size(), prefillRate,
                   static_cast<long long>(decodeSteps), decodeRate,
                   runsOn.c_str());
    }
    return 0;
  };
}

} // namespace hetc::cli
