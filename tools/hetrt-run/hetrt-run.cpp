// hetrt-run: the runtime-only runner. It runs a compiled .hetpack through the
// public C API alone (include/hetrt/hetrt.h, libhetrt), and links neither
// LLVM nor MLIR: what a deployment installs, and what is copied to a machine
// that has accelerators but no compiler. `hetc run` is the same loop with the
// compiler beside it (a GGUF is compiled on first use).
#include "hetrt/hetrt.h"
#include "runtime/format/InputFile.h"

#include "DeviceJson.h"
#include "Flags.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kExitUsage = 2;

struct RunnerFlags {
  std::string pack;
  std::string weights;
  std::string prompt;
  std::string promptFile;
  int64_t numTokens = 64;
  float temperature = 0.8f;
  int32_t topK = 40;
  float topP = 0.95f;
  float repeatPenalty = 1.0f;
  int64_t seed = -1;
  int32_t threads = 0;
  bool json = false;
  bool ignoreEos = false;
  bool listDevices = false;
  std::string device = "cpu0";
  bool planned = false;
  std::vector<std::string> kvBudgets;
  std::string kvTierFormat;
};


/// The failing call and the library's message, on stderr; false.
bool report(hetrt_status_t status, const char *call) {
  if (status == HETRT_OK)
    return true;
  hetc::cli::printMessage("hetrt-run: %s: %s\n", call,
               hetrt_last_error_message());
  return false;
}

/// The exit code of a failed call: 1 for bad input or a failed run, as hetc.
int failed() { return 1; }

/// The index of the device named `name`, or -1 with the names listed.
int32_t deviceIndex(const std::string &name) {
  int32_t count = 0;
  if (!report(hetrt_device_count(&count), "hetrt_device_count"))
    return -1;
  std::string names;
  for (int32_t d = 0; d < count; ++d) {
    hetrt_device_info_t device;
    if (!report(hetrt_device_info(d, &device), "hetrt_device_info"))
      return -1;
    if (name == device.name)
      return d;
    names += (names.empty() ? "" : ", ") + std::string(device.name);
  }
  hetc::cli::printMessage("hetrt-run: --device %s: this machine has no such "
                          "device (it has %s)\n",
                          name.c_str(), names.c_str());
  return -1;
}

/// Owns a C API object through its release function.
template <typename T, void (*Release)(T *)> struct Handle {
  T *get = nullptr;
  ~Handle() { Release(get); }
};

bool readPrompt(const RunnerFlags &flags, std::string &prompt) {
  if (flags.promptFile.empty()) {
    prompt = flags.prompt;
    return true;
  }
  std::string error;
  std::optional<std::string> text =
      hetrt::format::readPromptText(flags.promptFile, error);
  if (!text) {
    hetc::cli::printMessage("hetrt-run: -f: %s\n", error.c_str());
    return false;
  }
  prompt = std::move(*text);
  return true;
}

std::vector<int32_t> tokenize(hetrt_model_t *model, const std::string &text,
                              bool &ok) {
  size_t count = 0;
  std::vector<int32_t> ids(text.size() + 8);
  hetrt_status_t status = hetrt_model_tokenize(
      model, text.data(), text.size(), 1, ids.data(), ids.size(), &count);
  if (status == HETRT_INVALID_ARGUMENT && count > ids.size()) {
    ids.resize(count);
    status = hetrt_model_tokenize(model, text.data(), text.size(), 1,
                                  ids.data(), ids.size(), &count);
  }
  ok = report(status, "hetrt_model_tokenize");
  ids.resize(ok ? count : 0);
  return ids;
}

std::string detokenize(hetrt_model_t *model, const std::vector<int32_t> &ids,
                       bool &ok) {
  size_t length = 0;
  std::string text(ids.size() * 16 + 16, '\0');
  hetrt_status_t status = hetrt_model_detokenize(
      model, ids.data(), ids.size(), text.data(), text.size(), &length);
  if (status == HETRT_INVALID_ARGUMENT && length > text.size()) {
    text.resize(length);
    status = hetrt_model_detokenize(model, ids.data(), ids.size(), text.data(),
                                    text.size(), &length);
  }
  ok = report(status, "hetrt_model_detokenize");
  text.resize(ok ? length : 0);
  return text;
}

int run(const RunnerFlags &flags) {
  // A device that does not exist is a usage error, found before any work.
  int32_t device = flags.planned ? 0 : deviceIndex(flags.device);
  if (device < 0)
    return kExitUsage;
  std::string prompt;
  if (!readPrompt(flags, prompt))
    return failed();
  Handle<hetrt_model_t, hetrt_model_release> model;
  if (!report(hetrt_model_open(flags.pack.c_str(),
                               flags.weights.empty() ? nullptr
                                                     : flags.weights.c_str(),
                               &model.get),
              "hetrt_model_open"))
    return failed();
  int32_t vocab = 0, context = 0;
  if (!report(hetrt_model_info(model.get, &vocab, &context),
              "hetrt_model_info"))
    return failed();
  // Encoding costs microseconds a byte: a text that cannot fit the context
  // is refused before it is encoded.
  uint64_t maxBytes = 0;
  if (!report(hetrt_model_max_text_bytes(model.get,
                                         static_cast<uint64_t>(context),
                                         &maxBytes),
              "hetrt_model_max_text_bytes"))
    return failed();
  if (prompt.size() > maxBytes) {
    hetc::cli::printMessage(
                 "hetrt-run: the prompt is %zu bytes, more than a context of "
                 "%d tokens can hold; give a shorter prompt or compile with a "
                 "larger --context\n",
                 prompt.size(), context);
    return failed();
  }
  bool ok = true;
  std::vector<int32_t> promptIds = tokenize(model.get, prompt, ok);
  if (!ok)
    return failed();
  if (static_cast<int64_t>(promptIds.size()) > context) {
    hetc::cli::printMessage(
                 "hetrt-run: the prompt is %zu tokens but the pack holds a "
                 "context of %d; give a shorter prompt or compile with a "
                 "larger --context\n",
                 promptIds.size(), context);
    return failed();
  }
  // Every generated token but the last enters the cache (as in hetc run).
  int64_t room = context - static_cast<int64_t>(promptIds.size()) + 1;
  int64_t steps = std::min(flags.numTokens, room);
  if (steps < flags.numTokens)
    hetc::cli::printMessage(
                 "hetrt-run: -n %lld is more than the %lld tokens the context "
                 "holds after the prompt; generating at most %lld\n",
                 static_cast<long long>(flags.numTokens),
                 static_cast<long long>(room), static_cast<long long>(steps));

  Handle<hetrt_session_t, hetrt_session_release> session;
  if (flags.planned
          ? !report(hetrt_session_create_planned(model.get, &session.get),
                    "hetrt_session_create_planned")
          : !report(hetrt_session_create_on_device(model.get, device,
                                                   flags.threads, &session.get),
                    "hetrt_session_create_on_device"))
    return failed();
  for (const std::string &budget : flags.kvBudgets) {
    auto [space, bytes] = hetc::cli::kvBudgetOf(budget);
    if (!report(hetrt_session_set_kv_budget(session.get, space.c_str(), bytes,
                                            nullptr),
                "hetrt_session_set_kv_budget"))
      return failed();
  }
  if (!flags.kvTierFormat.empty() &&
      !report(hetrt_session_set_kv_tier_format(session.get,
                                               flags.kvTierFormat.c_str()),
              "hetrt_session_set_kv_tier_format"))
    return failed();
  uint64_t seed = flags.seed >= 0 ? static_cast<uint64_t>(flags.seed)
                                  : std::random_device{}();
  hetrt_sampling_params_t params = {flags.temperature, flags.topK, flags.topP,
                                    flags.repeatPenalty, seed};
  Handle<hetrt_sampler_t, hetrt_sampler_release> sampler;
  if (!report(hetrt_sampler_create(&params, &sampler.get),
              "hetrt_sampler_create"))
    return failed();

  using Clock = std::chrono::steady_clock;
  auto prefillStart = Clock::now();
  const float *logits = nullptr;
  if (!promptIds.empty() &&
      !report(hetrt_session_prefill(session.get, promptIds.data(),
                                    promptIds.size(), &logits),
              "hetrt_session_prefill"))
    return failed();
  double prefillSeconds =
      std::chrono::duration<double>(Clock::now() - prefillStart).count();

  std::vector<int32_t> history = promptIds, generated;
  std::string stopReason = steps < flags.numTokens ? "context" : "length";
  std::string printed = detokenize(model.get, promptIds, ok);
  if (!ok)
    return failed();
  if (!flags.json) {
    std::fwrite(printed.data(), 1, printed.size(), stdout);
    std::fflush(stdout);
  }
  auto decodeStart = Clock::now();
  int64_t decodeSteps = 0;
  for (int64_t i = 0; i < steps && logits; ++i) {
    int32_t id = 0;
    if (!report(hetrt_sampler_sample(sampler.get, logits, vocab,
                                     history.data(), history.size(), &id),
                "hetrt_sampler_sample"))
      return failed();
    int isEnd = 0;
    if (!report(hetrt_model_is_end_of_generation(model.get, id, &isEnd),
                "hetrt_model_is_end_of_generation"))
      return failed();
    if (isEnd && !flags.ignoreEos) {
      stopReason = "eos";
      break;
    }
    generated.push_back(id);
    history.push_back(id);
    if (!flags.json) {
      // Print what the new token adds to the whole text, so multi-byte
      // characters split over tokens come out whole.
      std::string text = detokenize(model.get, history, ok);
      if (!ok)
        return failed();
      if (text.size() > printed.size() &&
          text.compare(0, printed.size(), printed) == 0) {
        std::fwrite(text.data() + printed.size(), 1,
                    text.size() - printed.size(), stdout);
        std::fflush(stdout);
        printed = std::move(text);
      }
    }
    if (i + 1 == steps)
      break; // the last token needs no logits after it
    if (!report(hetrt_session_decode(session.get, id, &logits),
                "hetrt_session_decode"))
      return failed();
    ++decodeSteps;
  }
  double decodeSeconds =
      std::chrono::duration<double>(Clock::now() - decodeStart).count();
  double prefillRate =
      prefillSeconds > 0 ? promptIds.size() / prefillSeconds : 0;
  double decodeRate = decodeSeconds > 0 ? decodeSteps / decodeSeconds : 0;
  if (flags.json) {
    std::string text = detokenize(model.get, generated, ok);
    if (!ok)
      return failed();
    nlohmann::json result = {
        {"prompt_tokens", promptIds},
        {"tokens", generated},
        {"text", text},
        {"stop_reason", stopReason},
        {"seed", seed},
        {"prefill_tokens_per_s", prefillRate},
        {"decode_tokens_per_s", decodeRate},
    };
    // What each device ran, and the activations moved between them.
    nlohmann::json devices = nlohmann::json::array();
    for (size_t i = 0; i < hetrt_session_device_count(session.get); ++i) {
      hetrt_device_stats_t stats;
      if (!report(hetrt_session_device_stats(session.get, i, &stats),
                  "hetrt_session_device_stats"))
        return failed();
      hetrt_device_memory_t memory;
      if (!report(hetrt_session_device_memory(session.get, i, &memory),
                  "hetrt_session_device_memory"))
        return failed();
      devices.push_back({{"name", stats.device_name},
                         {"code", stats.code},
                         {"units", stats.units},
                         {"dispatches", stats.dispatches},
                         {"bytes_in", stats.bytes_in},
                         {"bytes_out", stats.bytes_out},
                         {"memory", hetc::cli::memoryJson(memory)}});
    }
    result["devices"] = devices;
    nlohmann::json spaces = nlohmann::json::array();
    size_t spaceCount = 0;
    if (!report(hetrt_session_memory_space_count(session.get, &spaceCount),
                "hetrt_session_memory_space_count"))
      return failed();
    for (size_t i = 0; i < spaceCount; ++i) {
      hetrt_memory_space_t space;
      if (!report(hetrt_session_memory_space(session.get, i, &space),
                  "hetrt_session_memory_space"))
        return failed();
      spaces.push_back(hetc::cli::memorySpaceJson(space));
    }
    result["memory_spaces"] = spaces;
    // A CPU session's paged cache: the blocks the run took, and what the
    // prefix cache and sharing did.
    hetrt_kv_stats_t kv;
    if (hetrt_session_kv_stats(session.get, &kv) == HETRT_OK)
      result["kv_cache"] = {{"block_size", kv.block_size},
                            {"blocks", kv.blocks},
                            {"blocks_used", kv.blocks - kv.free_blocks},
                            {"reused_tokens", kv.reused_tokens},
                            {"copied_blocks", kv.copied_blocks},
                            {"evicted_blocks", kv.evicted_blocks},
                            {"blocks_to_host", kv.blocks_to_host},
                            {"blocks_from_host", kv.blocks_from_host},
                            {"blocks_to_disk", kv.blocks_to_disk},
                            {"blocks_from_disk", kv.blocks_from_disk},
                            {"host_budget_blocks", kv.host_budget_blocks},
                            {"disk_budget_blocks", kv.disk_budget_blocks},
                            {"tier_format", kv.tiers_int8 ? "int8" : "exact"}};
    std::cout << result.dump(2, ' ', false,
                             nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    std::printf("\n");
    hetc::cli::printMessage(
                 "hetrt-run: prefill %zu tokens at %.1f tokens/s, decode %lld "
                 "tokens at %.1f tokens/s; stopped: %s\n",
                 promptIds.size(), prefillRate,
                 static_cast<long long>(decodeSteps), decodeRate,
                 stopReason.c_str());
  }
  return 0;
}

/// The devices the runtime finds and their memory spaces, one per line.
int listDevices() {
  int32_t count = 0;
  if (!report(hetrt_device_count(&count), "hetrt_device_count"))
    return failed();
  for (int32_t d = 0; d < count; ++d) {
    hetrt_device_info_t device;
    if (!report(hetrt_device_info(d, &device), "hetrt_device_info"))
      return failed();
    std::printf("%s  %s  %s\n", device.name, device.kind, device.description);
    for (int32_t m = 0; m < device.memory_count; ++m) {
      hetrt_memory_info_t memory;
      if (!report(hetrt_device_memory_info(d, m, &memory),
                  "hetrt_device_memory_info"))
        return failed();
      std::printf("  memory %d: %s, %.2f GiB%s\n", static_cast<int>(m),
                  memory.name,
                  static_cast<double>(memory.capacity_bytes) / (1ull << 30),
                  memory.host_visible ? ", host-visible" : "");
    }
    hetrt_spirv_info_t spirv;
    if (!report(hetrt_device_spirv_info(d, &spirv), "hetrt_device_spirv_info"))
      return failed();
    if (spirv.version == 0)
      continue;
    std::string capabilities;
    for (int32_t c = 0; c < spirv.capability_count; ++c) {
      const char *name = nullptr;
      if (!report(hetrt_device_spirv_capability(d, c, &name),
                  "hetrt_device_spirv_capability"))
        return failed();
      capabilities += std::string(c ? " " : "") + name;
    }
    std::printf("  SPIR-V %d.%d, subgroups of %u: %s\n",
                static_cast<int>(spirv.version / 100),
                static_cast<int>(spirv.version % 100), spirv.subgroup_size,
                capabilities.c_str());
  }
  // Back ends whose driver or devices are missing, and why.
  int32_t unavailable = 0;
  if (!report(hetrt_device_unavailable_count(&unavailable),
              "hetrt_device_unavailable_count"))
    return failed();
  for (int32_t u = 0; u < unavailable; ++u) {
    const char *reason = nullptr;
    if (!report(hetrt_device_unavailable_reason(u, &reason),
                "hetrt_device_unavailable_reason"))
      return failed();
    std::printf("unavailable: %s\n", reason);
  }
  return 0;
}

} // namespace

static int runRunner(int argc, char **argv) {
  CLI::App app{"hetrt-run: run a compiled hetc pack (.hetpack) with the "
               "runtime alone; no compiler is needed. Compile packs with "
               "`hetc compile MODEL -o FILE.hetpack`.",
               "hetrt-run"};
  app.option_defaults()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->always_capture_default();
  app.footer("\nExit codes: 0 success; 1 the pack, the weights or the run "
             "failed (the message names it); 2 the command line is wrong.");
  RunnerFlags flags;
  app.add_option("pack", flags.pack, "The .hetpack to run")
      ->check(hetc::cli::inputFile("a .hetpack"));
  app.add_flag("--list-devices", flags.listDevices,
               "Print the devices the runtime finds and their memories");
  app.add_option("-w,--weights", flags.weights,
                 "The GGUF weights (default: the path recorded in the pack)")
      ->check(hetc::cli::inputFile("the GGUF weights the pack was compiled for"));
  app.add_option("-p,--prompt", flags.prompt, "The prompt text");
  app.add_option("-f,--file", flags.promptFile,
                 "Read the prompt from a file ('-': standard input)")
      ->excludes("--prompt");
  using namespace hetc::cli;
  app.add_option("-n,--n-predict", flags.numTokens, "Tokens to generate")
      ->check(wholeRange(0, INT32_MAX));
  app.add_option("--temp", flags.temperature, "Temperature; 0 is greedy")
      ->check(finiteRange(0, 100));
  app.add_option("--top-k", flags.topK, "Keep the k most likely tokens (0: all)")
      ->check(wholeRange(0, INT32_MAX));
  app.add_option("--top-p", flags.topP, "Nucleus sampling threshold")
      ->check(finiteRange(0, 1));
  app.add_option("--repeat-penalty", flags.repeatPenalty,
                 "Penalty for repeated tokens (1: off)")
      ->check(finiteRange(0.001, 100));
  app.add_option("--seed", flags.seed,
                 "Random seed (default, or -1 as in llama.cpp: a fresh one)")
      ->check(wholeRange(-1, INT64_MAX));
  app.add_option("--device", flags.device,
                 "The device to run on: cpu0 (the default) or a Vulkan device "
                 "such as vulkan0 (the pack needs `hetc compile --spirv`); "
                 "--list-devices lists them")
      ->capture_default_str();
  app.add_flag("--planned", flags.planned,
               "Run the plan the pack was compiled for (hetc compile "
               "--system) over the devices it names")
      ->excludes("--device");
  hetc::cli::addKvBudgetOption(app, flags.kvBudgets);
  hetc::cli::addKvTierFormatOption(app, flags.kvTierFormat);
  app.add_option("-t,--threads", flags.threads,
                 "Kernel threads (0: one per core)")
      ->check(threadCount());
  app.add_flag("--json", flags.json,
               "Print one JSON object: token ids, text, stop reason, speeds");
  app.add_flag("--ignore-eos", flags.ignoreEos,
               "Keep generating after an end-of-generation token");
  // "-ngl 99" would parse as "-n gl": say what is wrong instead.
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
    std::string message = misreadShortOption(argv[i]);
    if (!message.empty()) {
      hetc::cli::printMessage(
                   "hetrt-run: %s\nRun with --help for more information.\n",
                   message.c_str());
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    return hetc::cli::reportParseError(app, error) == 0 ? 0 : kExitUsage;
  }
  if (flags.listDevices)
    return listDevices();
  if (flags.pack.empty()) {
    hetc::cli::printMessage("hetrt-run: a pack is required (hetrt-run PACK -p "
                         "TEXT); see --help\n");
    return kExitUsage;
  }
  return run(flags);
}

int main(int argc, char **argv) {
  hetrt_install_mapped_file_fault_handler("hetrt-run");
  hetc::cli::escapeStandardError();
  return hetc::cli::finishStandardOutput(runRunner(argc, argv), "hetrt-run");
}
