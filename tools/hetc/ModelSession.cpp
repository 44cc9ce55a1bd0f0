#include "ModelSession.h"

#include "PackCache.h"

namespace hetc::cli {

namespace {

/// The index of the device named by --device, or -1 with `error` listing
/// the devices.
int32_t findDevice(const std::string &name, std::string &error) {
  std::vector<hetrt::api::DeviceInfo> devices;
  hetrt::api::Status status;
  if (!hetrt::api::listDevices(devices, status)) {
    error = status.message;
    return -1;
  }
  std::string names;
  for (const hetrt::api::DeviceInfo &device : devices) {
    if (device.name == name)
      return device.index;
    names += (names.empty() ? "" : ", ") + device.name;
  }
  error = "--device " + name + ": this machine has no such device (it has " +
          names + ")";
  std::vector<std::string> unavailable;
  if (hetrt::api::listUnavailable(unavailable, status))
    for (const std::string &line : unavailable)
      error += "; " + line;
  return -1;
}

} // namespace

void addSessionOptions(CLI::App &command, SessionFlags &flags) {
  command.add_option("--device", flags.device,
                     "Run on this device: cpu0 (the default), or a Vulkan "
                     "device such as vulkan0 (`hetrt-run --list-devices` "
                     "lists them)");
  command.add_option("--system", flags.system,
                     "Run the cost model's plan of the model on this system "
                     "(a system JSON, as `hetc calibrate` writes for this "
                     "machine), over the devices it places work on");
  addPlanShapeOptions(command, flags.plan);
  addKvBudgetOption(command, flags.kvBudgets);
  addKvTierFormatOption(command, flags.kvTierFormat);
  command.add_option("-t,--threads", flags.threads,
                     "Threads for the kernels (default: one per core)")
      ->check(threadCount());
  command.add_option("-c,--context,--ctx-size", flags.contextLength,
                     "KV-cache capacity in tokens when compiling a GGUF "
                     "(default: the model's trained context; a .hetpack keeps "
                     "the context it was compiled for)")
      ->check(wholeRange(0, INT32_MAX));
}

int openModelSession(const std::string &model, const SessionFlags &flags,
                     const std::string &tool,
                     std::function<bool(std::string &)> beforeCompiling,
                     OpenedModel &opened, std::string &error) {
  bool planned = !flags.system.empty();
  if (planned && !flags.device.empty()) {
    error = "--device and --system exclude each other: the plan chooses the "
            "devices";
    return 2;
  }
  if (std::optional<std::string> problem =
          planShapeWithoutPlan(flags.plan, planned)) {
    error = *problem;
    return 2;
  }
  // The device is found before any compiling: a wrong name fails at once.
  int32_t deviceIndex = 0;
  bool onCpu = !planned && (flags.device.empty() || flags.device == "cpu0");
  if (!onCpu && !planned && (deviceIndex = findDevice(flags.device, error)) < 0)
    return 2;
  PackNeeds needs;
  needs.spirv = !onCpu && !planned;
  needs.system = flags.system;
  needs.deviceMemory = flags.plan.deviceMemory;
  needs.computeDevices = flags.plan.computeDevices;
  needs.objective = flags.plan.objective;
  if (onCpu)
    needs.kvPoolBlocks = flags.kvPoolBlocks;
  needs.beforeCompiling = std::move(beforeCompiling);
  opened.packPath = packFor(model, flags.contextLength, tool, error, needs);
  if (opened.packPath.empty())
    return 1;
  // From here on, the runtime's public API, as an embedder uses it.
  std::string weights = isPack(model) ? "" : model;
  hetrt::api::Status status;
  opened.model = hetrt::api::Model::open(opened.packPath, weights, status);
  if (!opened.model) {
    error = status.message;
    return 1;
  }
  int64_t context = opened.model->contextLength();
  if (weights.empty() && flags.contextLength > 0 &&
      flags.contextLength != context) {
    error = "--context " + std::to_string(flags.contextLength) + ": " + model +
            " was compiled for a context of " + std::to_string(context) +
            " tokens; compile it again with `hetc compile --context " +
            std::to_string(flags.contextLength) + "`, or leave --context out";
    return 2;
  }
  const hetrt::api::Model &loaded = *opened.model;
  opened.session =
      onCpu     ? hetrt::api::Session::create(loaded, flags.threads, status)
      : planned ? hetrt::api::Session::createPlanned(loaded, status)
                : hetrt::api::Session::createOnDevice(loaded, deviceIndex,
                                                      flags.threads, status);
  if (!opened.session) {
    error = status.message;
    return 1;
  }
  for (const std::string &budget : flags.kvBudgets) {
    auto [space, bytes] = kvBudgetOf(budget);
    if (!opened.session->setKvBudget(space, bytes, status)) {
      error = status.message;
      return 1;
    }
  }
  if (!flags.kvTierFormat.empty() &&
      !opened.session->setKvTierFormat(flags.kvTierFormat, status)) {
    error = status.message;
    return 1;
  }
  opened.onCpu = onCpu;
  opened.planned = planned;
  opened.runsOn = onCpu ? std::string(loaded.description().cpu_code) + " code"
                        : std::string(opened.session->info().devices);
  return 0;
}

void addSamplingOptions(CLI::App &command, SamplingFlags &flags) {
  command.add_option("--temp", flags.temperature,
                     "Sampling temperature; 0 is greedy (ties to the lowest id)")
      ->check(finiteRange(0, 100));
  command.add_option("--top-k", flags.topK,
                     "Keep the k most likely tokens (0: all)")
      ->check(wholeRange(0, INT32_MAX));
  command.add_option("--top-p", flags.topP, "Nucleus sampling threshold")
      ->check(finiteRange(0, 1));
  command.add_option("--repeat-penalty", flags.repeatPenalty,
                     "Penalty for recently generated tokens (1: off; must be "
                     "positive)")
      ->check(finiteRange(0.001, 100));
  command.add_option("--seed", flags.seed,
                     "Random seed (default, or -1 as in llama.cpp: a fresh "
                     "one, which hetc run --json reports)")
      ->check(wholeRange(-1, INT64_MAX));
}

hetrt_sampling_params_t samplingParams(const SamplingFlags &flags,
                                       uint64_t seed) {
  return {flags.temperature, flags.topK, flags.topP, flags.repeatPenalty, seed};
}

void addStopOption(CLI::App &command, std::vector<std::string> &stops) {
  command
      .add_option("--stop", stops,
                  "Stop before this text (repeatable); it is matched across "
                  "tokens and never printed")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator(
          [](std::string &text) {
            return text.empty() ? std::string("a stop string must not be "
                                              "empty")
                                : std::string();
          },
          "TEXT"));
}

void addChatTemplateOption(CLI::App &command, std::string &name) {
  std::vector<std::string> names;
  const char *family = nullptr;
  for (int32_t i = 0; hetrt_chat_template_name(i, &family) == HETRT_OK; ++i)
    names.push_back(family);
  std::string list;
  for (const std::string &one : names)
    list += (list.empty() ? "" : ", ") + one;
  command
      .add_option("--chat-template", name,
                  "Render chats in this template family instead of the "
                  "model's own: " +
                      list)
      ->check(CLI::Validator(
          [names, list](std::string &value) {
            for (const std::string &one : names)
              if (value == one)
                return std::string();
            return "unknown chat template '" + value + "'; choose one of " +
                   list;
          },
          "NAME"));
}

bool chatTemplateFor(const hetrt::api::Model &model, const std::string &chosen,
                     const std::string &tool, std::string &family,
                     std::string &error) {
  if (!chosen.empty()) {
    family = chosen;
    return true;
  }
  hetrt::api::Status status;
  if (!model.chatTemplate(family, status)) {
    error = status.message;
    return false;
  }
  if (family.empty()) {
    family = "chatml";
    printMessage("%s: the model ships no chat template; chats are rendered "
                 "as chatml (--chat-template chooses another)\n",
                 tool.c_str());
  }
  return true;
}

} // namespace hetc::cli
