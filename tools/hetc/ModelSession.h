// Where a model runs, as `hetc run`, `hetc chat` and `hetc serve` take it:
// the flags (--device, --system and the plan's shape, the KV cache's budgets
// and tier format, threads, context), and the model opened (compiled and
// cached first when it is a GGUF) with a session on what they chose.
#ifndef HETC_TOOLS_HETC_MODELSESSION_H
#define HETC_TOOLS_HETC_MODELSESSION_H

#include "Flags.h"

#include "hetrt/hetrt.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hetc::cli {

struct SessionFlags {
  std::string device;
  std::string system;
  PlanShapeFlags plan;
  std::vector<std::string> kvBudgets;
  std::string kvTierFormat;
  int threads = 0;
  int64_t contextLength = 0;
  /// Blocks of the KV pool when a GGUF is compiled for the CPU (0: one
  /// sequence of the whole context).
  int64_t kvPoolBlocks = 0;
};

/// Adds the flags above to `command`.
void addSessionOptions(CLI::App &command, SessionFlags &flags);

struct OpenedModel {
  std::string packPath;
  std::unique_ptr<hetrt::api::Model> model;
  std::unique_ptr<hetrt::api::Session> session;
  bool onCpu = true;
  bool planned = false;
  /// What runs it: the CPU code variant, or the session's devices.
  std::string runsOn;
};

/// Opens `model` (a GGUF compiled first, or a .hetpack) and a session as
/// `flags` say; `beforeCompiling` runs just before a GGUF is compiled (see
/// PackNeeds). 0, or the exit code with `error` set (2 for wrong usage).
int openModelSession(const std::string &model, const SessionFlags &flags,
                     const std::string &tool,
                     std::function<bool(std::string &)> beforeCompiling,
                     OpenedModel &opened, std::string &error);

/// How tokens are chosen (hetc run and hetc chat), with llama.cpp's
/// defaults.
struct SamplingFlags {
  float temperature = 0.8f;
  int32_t topK = 40;
  float topP = 0.95f;
  float repeatPenalty = 1.0f;
  /// -1: a fresh seed.
  int64_t seed = -1;
};
/// --temp, --top-k, --top-p, --repeat-penalty and --seed.
void addSamplingOptions(CLI::App &command, SamplingFlags &flags);
/// The runtime's parameters for `flags` with the seed chosen.
hetrt_sampling_params_t samplingParams(const SamplingFlags &flags,
                                       uint64_t seed);

/// --stop TEXT, repeatable: generation ends before the first match, which
/// is not shown.
void addStopOption(CLI::App &command, std::vector<std::string> &stops);

/// --chat-template NAME, checked against the families the runtime knows.
void addChatTemplateOption(CLI::App &command, std::string &name);

/// The chat template family to render chats of `model` in: `chosen`
/// (--chat-template), else the model's own; a model without one gets
/// chatml, as llama.cpp does, and `tool` says so on stderr. False with
/// `error` naming the choices when the model's template is of no known
/// family.
bool chatTemplateFor(const hetrt::api::Model &model, const std::string &chosen,
                     const std::string &tool, std::string &family,
                     std::string &error);

} // namespace hetc::cli

#endif // HETC_TOOLS_HETC_MODELSESSION_H
