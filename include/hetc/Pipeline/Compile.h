// `hetc compile` as a library call: a GGUF model in, a .hetpack (or the IR of an
// intermediate phase) out.
#ifndef HETC_PIPELINE_COMPILE_H
#define HETC_PIPELINE_COMPILE_H

#include "hetc/Pipeline/Pipeline.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hetc::pipeline {

struct CompileOptions {
  std::string modelPath;
  /// Where to write the pack, or the IR when `stopAfter` is before Pack ("-"
  /// for standard output).
  std::string outputPath;
  Phase stopAfter = Phase::Pack;
  /// KV-cache capacity in tokens; 0 takes the model's context length.
  int64_t contextLength = 0;
  /// Blocks of the CPU code's KV pool, shared by a session's sequences; 0
  /// takes one sequence of the whole context.
  int64_t kvPoolBlocks = 0;
  /// KV-cache element type, "f32" or "f16"; empty takes
  /// defaultKvElementType(*this).
  std::string kvElementType;
  /// CPU code variants to build, by name; "all" for every one, "host" for the
  /// best this machine runs.
  std::vector<std::string> cpuVariants = {"all"};
  /// Also pack the model as SPIR-V programs for Vulkan devices.
  bool spirv = false;
  /// A system (JSON file or catalog name) to plan the model on: the pack
  /// then also holds the plan's program over the system's devices, with the
  /// code of its CPU segments (empty: the pack runs on one device at a time).
  std::string system;
  /// Caps on what the plan may use of a device's memory ("vulkan0=64MiB").
  std::vector<std::string> deviceMemory;
  /// The devices the plan may run units on (empty: all of the system's).
  std::vector<std::string> computeDevices;
  /// What the plan minimizes: "latency", "throughput", "cost" or "energy".
  std::string objective = "latency";
  /// Called with a line describing each step, for progress display.
  std::function<void(const std::string &)> progress;
};

/// The KV-cache element a pack gets when none is asked for: f16, as
/// llama.cpp keeps it (half the bytes each decode step reads and each
/// memory holds), in the CPU code and the programs alike.
std::string defaultKvElementType(const CompileOptions &options);

/// Bytes of an element of the KV cache a pack compiled with the defaults
/// keeps on the CPU.
int64_t defaultCpuKvElementBytes();

/// Why `options.kvElementType` cannot be packed as asked (a type other than
/// f32, f16 and bf16), naming the flag; nothing when it can.
std::optional<std::string> checkKvElementType(const CompileOptions &options);

/// The textual pass pipeline `hetc compile` runs from import to LLVM for
/// this host's CPU, to replay with `hetc-opt --pass-pipeline='...'`; nothing
/// with `error` when no target serves the device.
std::optional<std::string> printPipeline(std::string &error);

/// Compiles as `options` says. Returns false and sets `error` (naming the
/// file, the phase and the cause) on failure.
bool compileModel(const CompileOptions &options, std::string &error);

} // namespace hetc::pipeline

#endif // HETC_PIPELINE_COMPILE_H
