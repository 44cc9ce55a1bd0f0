// `hetc calibrate`: measures this machine as the cost model sees it — cores
// and caches (hwloc), memory size and read bandwidth, the dispatch cost of a
// kernel, and, per weight format, the rates hetc's own generated code reaches
// in decode and prefill — and writes a system JSON for `hetc plan`.
#include "CalibrateVulkan.h"
#include "Commands.h"
#include "Flags.h"
#include "Topology.h"

#include "hetc/Cost/CostModel.h"
#include "hetc/Cost/ModelShape.h"
#include "hetc/Hardware/Catalog.h"
#include "hetc/Pipeline/Compile.h"
#include "hetc/Synth/SyntheticModel.h"
#include "runtime/core/Bandwidth.h"
#include "runtime/core/Limits.h"
#include "runtime/core/Model.h"
#include "runtime/core/Sampler.h"
#include "runtime/core/Session.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/format/OutputFile.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <thread>
#include <unistd.h>

namespace hetc::cli {

namespace {

struct CalibrateFlags {
  std::string output = "host.json";
  int threads = 0;
  double idleWatts = 0;
  double activeWatts = 0;
  double pricePerHour = 0;
  std::vector<std::string> formats = {"f32",  "f16",  "bf16",
                                      "q8_0", "q4_0", "q4_k_m"};
  bool quiet = false;
  bool cpuOnly = false;
};

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Prefill and decode time of a compiled synthetic model, and, when asked
/// for, the time to sample each decode step's token from its logits.
struct Timing {
  double prefillSeconds = 0;
  double decodeStepSeconds = 0;
  double sampleSeconds = 0;
  /// The read bandwidth (GB/s) of the largest buffer of the read curve just
  /// before and just after the timed runs, averaged: this machine's
  /// bandwidth moves by tens of percent from minute to minute, and a decode
  /// rate is kept relative to it.
  double readGBPerSDuring = 0;
};

/// A measured model and one session over it.
struct Loaded {
  std::unique_ptr<hetrt::core::Model> model;
  std::unique_ptr<hetrt::core::Session> session;
  bool open(const std::string &gguf, const std::string &pack, int threads,
            bool chooseThreads, std::string &error) {
    model = hetrt::core::Model::load(pack, gguf, error);
    if (model)
      session = hetrt::core::Session::create(*model, threads, error);
    if (session) {
      session->setDecodeThreadChoice(chooseThreads);
      // Each repeat computes its prompt again rather than finding it in the
      // prefix cache.
      session->setPrefixCaching(false);
    }
    return session != nullptr;
  }
};

/// With `sample`, each step's token is chosen from the previous step's
/// logits by the sampler at hetc run's defaults, as hetc run does, and timed
/// apart from the step.
bool timeModel(const std::string &gguf, const std::string &pack, int threads,
               int64_t promptTokens, int64_t decodeSteps, bool chooseThreads,
               bool sample, Timing &timing, std::string &error) {
  Loaded loaded;
  if (!loaded.open(gguf, pack, threads, chooseThreads, error))
    return false;
  hetrt::core::Session &session = *loaded.session;
  std::vector<int32_t> prompt = syntheticPrompt(promptTokens);
  // One warm-up run faults the weights in; then the median of three, not the
  // best: `hetc run` measures one run under whatever else the machine does,
  // and the best of several is an optimistic prediction of it.
  std::vector<double> prefill, decode, sampling;
  hetrt::core::SamplingParams defaults;
  defaults.seed = 1;
  hetrt::core::Sampler sampler(defaults);
  std::vector<int32_t> history;
  for (int repeat = 0; repeat < 4; ++repeat) {
    session.reset();
    auto start = std::chrono::steady_clock::now();
    if (!session.prefill(prompt, error))
      return false;
    double prefillSeconds = seconds(start);
    double sampleSeconds = 0;
    start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < decodeSteps; ++i) {
      int32_t token = 5;
      if (sample) {
        auto picked = std::chrono::steady_clock::now();
        token = sampler.sample(session.logits(), session.vocabSize(), history);
        sampleSeconds += seconds(picked);
      }
      if (!session.decode(token, error))
        return false;
    }
    double loopSeconds = seconds(start);
    if (repeat == 0)
      continue;
    prefill.push_back(prefillSeconds);
    decode.push_back((loopSeconds - sampleSeconds) / decodeSteps);
    sampling.push_back(sampleSeconds / decodeSteps);
  }
  auto median = [](std::vector<double> &values) {
    std::nth_element(values.begin(), values.begin() + values.size() / 2,
                     values.end());
    return values[values.size() / 2];
  };
  timing.prefillSeconds = median(prefill);
  timing.decodeStepSeconds = median(decode);
  timing.sampleSeconds = median(sampling);
  return true;
}

/// Decode attention's cost per cached position: decode steps after a short
/// and a long prompt are timed in interleaved pairs, as hetc run decodes
/// (choosing its threads), so a change in the machine's load hits both of a
/// pair; the median of the pairs' differences is divided by the positions
/// the long prompt adds. A difference that does not come out positive is measured
/// again; after `kAttempts` it is an error, never a rate left out.
bool timeAttention(const std::string &gguf, const std::string &pack,
                   int threads, int64_t shortPrompt, int64_t longPrompt,
                   int64_t steps, double &perPosition, std::string &error) {
  Loaded loaded;
  if (!loaded.open(gguf, pack, threads, /*chooseThreads=*/true, error))
    return false;
  hetrt::core::Session *session = loaded.session.get();
  auto stepSeconds = [&](int64_t promptTokens, double &result) {
    std::vector<int32_t> prompt = syntheticPrompt(promptTokens);
    session->reset();
    if (!session->prefill(prompt, error))
      return false;
    auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < steps; ++i)
      if (!session->decode(5, error))
        return false;
    result = seconds(start) / static_cast<double>(steps);
    return true;
  };
  constexpr int kAttempts = 3, kPairs = 5;
  double early = 0, late = 0;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    // A warm-up pair faults the cache and the buffers in.
    if (!stepSeconds(shortPrompt, early) || !stepSeconds(longPrompt, late))
      return false;
    std::vector<double> differences, earlies, lates;
    for (int pair = 0; pair < kPairs; ++pair) {
      if (!stepSeconds(shortPrompt, early) || !stepSeconds(longPrompt, late))
        return false;
      differences.push_back(late - early);
      earlies.push_back(early);
      lates.push_back(late);
    }
    auto median = [](std::vector<double> values) {
      std::nth_element(values.begin(), values.begin() + values.size() / 2,
                       values.end());
      return values[values.size() / 2];
    };
    double difference = median(differences);
    early = median(earlies);
    late = median(lates);
    if (difference > 0) {
      perPosition = difference / static_cast<double>(longPrompt - shortPrompt);
      return true;
    }
  }
  char message[320];
  std::snprintf(message, sizeof message,
                "decode attention could not be measured: steps after %lld "
                "positions took %.1f us and after %lld took %.1f us (medians "
                "of %d pairs, %d tries), so the machine was too busy to tell "
                "them apart; run hetc calibrate again when it is idle",
                static_cast<long long>(longPrompt), late * 1e6,
                static_cast<long long>(shortPrompt), early * 1e6, kPairs,
                kAttempts);
  error = message;
  return false;
}

/// The widths (hidden sizes) the formats' prefill is measured at: a
/// llama-110M-like and a llama-1B-like one. Narrow matmuls lose more to their
/// fixed costs: one width predicted llama-110M's prefill 4-25 % fast.
constexpr int64_t kNarrowWidth = 768, kWideWidth = 2048;

/// About how many bytes `format` (a `hetc synth --type`) stores per weight.
double bytesPerElementOf(const std::string &format) {
  return format == "f32"      ? 4
         : format == "q8_0"   ? 34.0 / 32
         : format == "q4_0"   ? 18.0 / 32
         : format == "q4_k_m" ? 0.6
                              : 2;
}

/// The synthetic model a weight format is measured on, of about `bytes`,
/// `width` wide (kNarrowWidth or kWideWidth).
hetc::synth::SyntheticModelSpec formatModel(const std::string &format,
                                            double bytes, int64_t width) {
  hetc::synth::SyntheticModelSpec spec;
  spec.dim = width;
  spec.heads = width / 128;
  spec.kvHeads = spec.heads;
  spec.ffnDim = width == kWideWidth ? 5632 : 2048;
  spec.vocabSize = 8192;
  hetc::synth::parseWeightType(format, spec.weightType);
  double layerBytes =
      bytesPerElementOf(format) * static_cast<double>(4 * spec.dim * spec.dim +
                                            3 * spec.dim * spec.ffnDim);
  spec.layers = std::max<int64_t>(2, static_cast<int64_t>(bytes / layerBytes) + 1);
  return spec;
}

/// The decode rate a format keeps when its weights stay in the caches: a
/// one-layer model of about `bytes` (an eighth of the last-level cache),
/// its FFN as wide as the model, narrower models for the wider formats.
hetc::synth::SyntheticModelSpec inCacheModel(const std::string &format,
                                             double bytes) {
  hetc::synth::SyntheticModelSpec spec = formatModel(format, 0, kNarrowWidth);
  double bytesPerElement = bytesPerElementOf(format);
  while (spec.dim > 256 &&
         7.0 * static_cast<double>(spec.dim * spec.dim) * bytesPerElement > bytes)
    spec.dim -= 256;
  spec.heads = std::max<int64_t>(1, spec.dim / 128);
  spec.kvHeads = spec.heads;
  spec.ffnDim = spec.dim;
  spec.vocabSize = 512;
  spec.layers = 1;
  return spec;
}

/// A weight format's decode as the cost model counts it: the weight bytes a
/// step reads, and their rate in GB/s once dispatches and attention are
/// taken out.
struct StreamRate {
  double stepBytes = 0;
  double gbPerS = 0;
};

/// The read bandwidth (GB/s) of buffers from 8 MiB to `largestMiB` (the
/// largest model a format is timed on), each read again and again as a
/// decode reads its weights step after step. Smaller buffers take more
/// passes so that each size reads about as many bytes. Larger models are
/// counted at the largest size's rate: past it a buffer read slower on a
/// 2-core EPYC, while llama-1B's larger matmuls streamed faster.
std::map<int64_t, double> measureReadCurve(hetrt::core::ThreadPool &pool,
                                           int64_t largestMiB) {
  std::map<int64_t, double> curve;
  for (int64_t mib = 8;; mib = std::min(2 * mib, largestMiB)) {
    int passes = static_cast<int>(std::clamp<int64_t>(2048 / mib, 3, 64));
    curve[mib] = hetrt::core::measureReadBandwidth(
                     pool, static_cast<size_t>(mib) << 20, passes) /
                 1e9;
    if (mib == largestMiB)
      return curve;
  }
}

/// What calibrating takes besides the formats (bandwidth, the tiny and the
/// attention models), and an estimate for one format: writing its model,
/// compiling it, and the timed decode and prefill runs (four of each), from
/// figures of a 2-core machine scaled by the measured bandwidth.
constexpr double kFixedSeconds = 8;
/// The prompt the formats' prefill is timed on, and the decode steps after
/// it: the reference rows' prompt (bench/compare-llamacpp.sh), since a
/// matmul's fixed costs (quantizing its activations, waking the threads)
/// weigh less per token the longer the prompt (64 tokens predicted the
/// 128-token prefill of llama-1B 15-23 % slow).
constexpr int64_t kFormatPrompt = 128, kFormatSteps = 16;
double formatSeconds(const std::string &format, double bytes, double bandwidth) {
  // Writing a K-quant model searches each block's scales: about 4 MB/s per
  // core where the other formats write 200.
  double cores = std::max(1u, std::thread::hardware_concurrency());
  double writeBytesPerSecond = format == "q4_k_m" ? 4e6 * cores : 200e6;
  // Compiling takes about a fixed time per layer on a 2-core machine:
  // llama-110M's 12 layers take 7.6 s in F32, 12.9 in Q8_0, 28.6 in Q4_K_M.
  double compileSecondsPerLayer = format == "q4_k_m"              ? 2.4
                                  : format == "q8_0" || format == "q4_0" ? 1.1
                                                                         : 0.65;
  double compileSeconds =
      compileSecondsPerLayer *
      static_cast<double>(formatModel(format, bytes, kWideWidth).layers +
                          formatModel(format, bytes / 2, kNarrowWidth).layers +
                          /*the in-cache model*/ 1);
  constexpr double kPrefillFlopsPerSecond = 40e9;
  double decode = 4 * 16 * bytes / std::max(bandwidth, 1e9);
  // Prefill is compute-bound: kFormatPrompt tokens x 2 FLOPs per weight, at
  // most 4 bytes per weight (f32) and about 1 for the quantized formats.
  double prefill =
      4 * kFormatPrompt * 2 * (bytes / 2) / kPrefillFlopsPerSecond;
  // The narrow model: half the bytes.
  return 1.5 * (bytes / writeBytesPerSecond + decode + prefill) +
         compileSeconds;
}

/// Seconds the sampler at its defaults takes per token for `vocabSize`
/// logits, over rows that differ from call to call as a model's do.
double timeSampler(int64_t vocabSize) {
  constexpr int kRows = 16, kCalls = 400;
  std::mt19937 generator(3);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::vector<std::vector<float>> rows(kRows, std::vector<float>(vocabSize));
  for (std::vector<float> &row : rows)
    for (float &value : row)
      value = logit(generator);
  hetrt::core::Sampler sampler(hetrt::core::SamplingParams{});
  std::vector<int32_t> history;
  std::vector<double> perCall;
  for (int repeat = 0; repeat < 4; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < kCalls; ++call)
      sampler.sample(rows[call % kRows].data(), vocabSize, history);
    if (repeat > 0)
      perCall.push_back(seconds(start) / kCalls);
  }
  std::sort(perCall.begin(), perCall.end());
  return perCall[perCall.size() / 2];
}

/// The models attention is timed on: 4 heads, a small FFN and vocabulary,
/// so that their weights stay cached and their steps are overhead and
/// attention.
hetc::synth::SyntheticModelSpec attentionModel(int64_t dim, int64_t layers) {
  hetc::synth::SyntheticModelSpec spec;
  spec.dim = dim;
  spec.layers = layers;
  spec.heads = 4;
  spec.kvHeads = 4;
  spec.ffnDim = 128;
  spec.vocabSize = 320;
  return spec;
}

/// Writes `spec` as DIRECTORY/TAG.gguf and compiles it for this host (and,
/// with `spirv`, its SPIR-V programs) into TAG.hetpack beside it, for a
/// cache of `contextLength` positions; `model` gets both paths and the
/// shape the cost model sees.
bool compileSyntheticModel(const hetc::synth::SyntheticModelSpec &spec,
                           const std::string &directory, const std::string &tag,
                           int64_t contextLength, bool spirv,
                           ProgramModel &model, std::string &error) {
  model.gguf = directory + "/" + tag + ".gguf";
  model.pack = directory + "/" + tag + ".hetpack";
  if (!hetc::synth::writeSyntheticModel(spec, model.gguf, error))
    return false;
  hetc::pipeline::CompileOptions options;
  options.modelPath = model.gguf;
  options.outputPath = model.pack;
  options.contextLength = contextLength;
  options.cpuVariants = {"host"};
  options.spirv = spirv;
  if (!hetc::pipeline::compileModel(options, error))
    return false;
  std::optional<cost::ModelShape> shape = cost::shapeFromGguf(model.gguf, error);
  if (!shape)
    return false;
  model.shape = *shape;
  return true;
}

/// Writes and compiles, with their SPIR-V programs, the three f32 models a
/// Vulkan device's programs are timed on (calibrateVulkanDevice): the tiny
/// attention model, whose steps are almost all dispatches, one of about 5
/// MiB that stays in a device's (or, for a CPU's Vulkan, the host's)
/// last-level cache, and one whose steps stream about 60 MiB of weights,
/// past the caches and quick to compile.
bool compileProgramModels(const std::string &directory,
                          std::vector<ProgramModel> &models,
                          std::string &error) {
  hetc::synth::SyntheticModelSpec tiny = attentionModel(64, 4);
  hetc::synth::SyntheticModelSpec cached = tiny;
  cached.dim = 128;
  cached.ffnDim = 352;
  cached.vocabSize = 2048;
  hetc::synth::SyntheticModelSpec large = tiny;
  large.dim = 512;
  large.heads = 8;
  large.kvHeads = 8;
  large.ffnDim = 1408;
  large.vocabSize = 4096;
  for (auto [tag, spec] : {std::pair{"program-tiny", tiny},
                           std::pair{"program-cached", cached},
                           std::pair{"program-large", large}}) {
    spec.weightType = hetc::synth::WeightType::F32;
    ProgramModel model;
    if (!compileSyntheticModel(spec, directory, tag, 256, /*spirv=*/true,
                               model, error))
      return false;
    models.push_back(std::move(model));
  }
  return true;
}

} // namespace

Action registerCalibrateCommand(CLI::App &app) {
  auto flags = std::make_shared<CalibrateFlags>();
  CLI::App *command = app.add_subcommand(
      "calibrate",
      "Measure this machine (cores, caches, memory bandwidth, and the speed of "
      "hetc's generated kernels per weight format) and write a system JSON for "
      "hetc plan");
  command->add_option("-o,--output", flags->output, "The system JSON to write")
      ->check(outputFileName())
      ->capture_default_str();
  command->add_option("-t,--threads", flags->threads,
                      "Threads to measure with (0: all cores)")
      ->check(threadCount());
  command->add_option("--formats", flags->formats,
                      "Weight formats to measure")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m"}))
      ->capture_default_str();
  command->add_option("--idle-watts", flags->idleWatts,
                      "Idle power of the CPU package (W); not measurable here")
      ->check(finiteRange(0, 1e6));
  command->add_option("--active-watts", flags->activeWatts,
                      "Power under load (W); 0: 10 W per core")
      ->check(finiteRange(0, 1e6));
  command->add_option("--price", flags->pricePerHour,
                      "Price of the machine in USD per hour")
      ->check(finiteRange(0, 1e6));
  command->add_flag("--cpu-only", flags->cpuOnly,
                    "Describe the CPU alone, not the Vulkan devices beside it");
  command->add_flag("-q,--quiet", flags->quiet, "No progress output");
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    auto progress = [&](const std::string &line) {
      if (!flags->quiet)
        std::cerr << "hetc calibrate: " << line << "\n";
    };
    // A format named twice is measured once, in the order first given.
    std::vector<std::string> formats;
    for (const std::string &format : flags->formats)
      if (std::find(formats.begin(), formats.end(), format) == formats.end())
        formats.push_back(format);
    flags->formats = formats;
    // Minutes of measurement must not end in a path that cannot be written.
    std::string outputError;
    if (!hetrt::format::checkOutputPath(flags->output, {}, "-o", outputError)) {
      std::cerr << "hetc calibrate: " << outputError << "\n";
      // An empty path is a command-line mistake, as in compile and run.
      return flags->output.empty() ? 2 : 1;
    }
    // An existing file is replaced only when it is a JSON document: -o onto
    // a model or a pack by mistake must not destroy it.
    if (std::ifstream existing{flags->output}) {
      char first = 0;
      existing >> first;
      if (existing && first != '{') {
        std::cerr << "hetc calibrate: -o " << flags->output
                  << ": exists and is not a system JSON; give another path "
                     "or remove it first\n";
        return 1;
      }
    }
    if (flags->idleWatts > 0 && flags->activeWatts > 0 &&
        flags->idleWatts > flags->activeWatts) {
      std::cerr << "hetc calibrate: --idle-watts " << flags->idleWatts
                << " is more than --active-watts " << flags->activeWatts
                << "; give an idle power below the power under load\n";
      return 2;
    }
    auto started = std::chrono::steady_clock::now();
    Topology topology = readTopology();
    int threads = flags->threads > 0
                      ? flags->threads
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    progress("measuring the read bandwidth with " + std::to_string(threads) +
             " threads");
    // Weights larger than the last-level cache stream from DRAM; past a
    // few hundred MiB more bytes only take longer to write and time.
    double formatBytes = std::clamp(2.0 * static_cast<double>(topology.l3Bytes),
                                    256.0 * (1 << 20), 768.0 * (1 << 20));
    double bandwidth = 0;
    std::map<int64_t, double> readCurve;
    {
      std::string poolError;
      std::unique_ptr<hetrt::core::ThreadPool> pool =
          hetrt::core::ThreadPool::create(threads, poolError);
      if (!pool) {
        std::cerr << "hetc calibrate: " << poolError << "\n";
        return 1;
      }
      bandwidth = hetrt::core::measureReadBandwidth(*pool, size_t(512) << 20, 3);
      readCurve = measureReadCurve(
          *pool, static_cast<int64_t>(std::llround(formatBytes / (1 << 20))));
    }
    if (!flags->quiet) {
      std::string formats;
      double formatsSeconds = 0;
      for (const std::string &format : flags->formats) {
        formats += (formats.empty() ? "" : ", ") + format;
        formatsSeconds += formatSeconds(format, formatBytes, bandwidth);
      }
      hetc::cli::printMessage(
                   "hetc calibrate: measuring the dispatch cost, the sampler, "
                   "decode attention with heads of 16 and 128, and hetc's "
                   "kernels for %s on models of %.0f MiB: about %.0f s here\n",
                   formats.c_str(), formatBytes / (1 << 20),
                   kFixedSeconds + formatsSeconds);
    }
    char directoryTemplate[] = "/tmp/hetc-calibrate-XXXXXX";
    if (!mkdtemp(directoryTemplate)) {
      std::cerr << "hetc calibrate: cannot create a temporary directory\n";
      return 1;
    }
    std::string directory = directoryTemplate;
    auto cleanup = [&]() {
      std::error_code ignored;
      std::filesystem::remove_all(directory, ignored);
    };
    std::string error;
    // Every reading of the largest buffer's bandwidth: their median is the
    // bandwidth the decode rates are scaled to.
    int64_t largestMiB = readCurve.rbegin()->first;
    std::vector<double> bandwidthReadings = {readCurve.rbegin()->second};
    auto readBandwidthNow = [&]() {
      std::string poolError;
      std::unique_ptr<hetrt::core::ThreadPool> pool =
          hetrt::core::ThreadPool::create(threads, poolError);
      double rate = pool ? hetrt::core::measureReadBandwidth(
                               *pool, static_cast<size_t>(largestMiB) << 20, 3) /
                               1e9
                         : 0;
      if (rate <= 0)
        return readCurve.rbegin()->second;
      bandwidthReadings.push_back(rate);
      return rate;
    };

    // Builds, compiles and times one synthetic model; its shape as the cost
    // model sees it comes back in `shape`.
    auto measure = [&](const std::string &tag, hetc::synth::SyntheticModelSpec spec,
                       int64_t promptTokens, int64_t decodeSteps, Timing &timing,
                       cost::ModelShape &shape, int64_t contextLength = 256) -> bool {
      ProgramModel model;
      if (!compileSyntheticModel(spec, directory, tag, contextLength,
                                 /*spirv=*/false, model, error))
        return false;
      const std::string &gguf = model.gguf, &pack = model.pack;
      shape = model.shape;
      // The dispatch cost is measured as hetc run decodes, choosing between
      // one thread and all by measuring; the weight formats on all threads.
      double before = readBandwidthNow();
      if (!timeModel(gguf, pack, threads, promptTokens, decodeSteps,
                     /*chooseThreads=*/tag == "tiny", /*sample=*/tag == "tiny",
                     timing, error))
        return false;
      timing.readGBPerSDuring = (before + readBandwidthNow()) / 2;
      return true;
    };

    hardware::Calibration calibration;
    calibration.threads = threads;
    calibration.readGBPerSByMiB = readCurve;
    // Decode steps after a short and a long prompt: the difference is
    // attention over the positions the long one adds, which gives its rate
    // for the model's head size. `early` is the short prompt's timing.
    // The long prompt adds enough positions that their attention outweighs
    // the noise in steps that also stream the weights.
    constexpr int64_t kShortPrompt = 8, kLongPrompt = 896, kSteps = 64,
                      kAttentionContext = 1024;
    auto measureAttention = [&](const std::string &tag,
                                const hetc::synth::SyntheticModelSpec &spec,
                                Timing &early, cost::ModelShape &shape,
                                double &perPosition) -> bool {
      if (!measure(tag, spec, kShortPrompt, kSteps, early, shape, kAttentionContext))
        return false;
      // Step i after a prompt of P attends to P + i + 1 positions: the
      // difference of the two prompts is the positions added.
      if (!timeAttention(directory + "/" + tag + ".gguf",
                         directory + "/" + tag + ".hetpack", threads,
                         kShortPrompt, kLongPrompt, kSteps, perPosition, error)) {
        error = "heads of " + std::to_string(shape.headDim) + ": " + error;
        return false;
      }
      double flopsPerPosition = 0;
      for (const cost::Unit &unit :
           cost::unitsOf(shape, hetc::pipeline::defaultCpuKvElementBytes()))
        flopsPerPosition += unit.attentionFlopsPerContext;
      calibration.attentionGflops[shape.headDim] =
          flopsPerPosition / perPosition / 1e9;
      return true;
    };
    auto meanPositions = [&](int64_t prompt) {
      return static_cast<double>(prompt) + (kSteps + 1) / 2.0;
    };
    // Dispatch cost: a model so small that its steps are all overhead.
    progress("measuring the dispatch cost on a tiny model");
    {
      hetc::synth::SyntheticModelSpec spec = attentionModel(64, 4);
      Timing timing;
      cost::ModelShape shape;
      double perPosition = 0;
      if (!measureAttention("tiny", spec, timing, shape, perPosition)) {
        std::cerr << "hetc calibrate: " << error << "\n";
        cleanup();
        return 1;
      }
      int kernels = 0;
      for (const cost::Unit &unit :
           cost::unitsOf(shape, hetc::pipeline::defaultCpuKvElementBytes()))
        kernels += unit.kernels;
      double dispatchSeconds =
          std::max(timing.decodeStepSeconds * 0.25,
                   timing.decodeStepSeconds - perPosition * meanPositions(kShortPrompt));
      calibration.dispatchUs = dispatchSeconds / kernels * 1e6;
      // Sampling: measured in the decode loop for the tiny vocabulary, where
      // it follows each step as in hetc run, and on its own for a large one;
      // a line through both.
      progress("measuring the sampler");
      constexpr int64_t kLargeVocab = 32768;
      double large = timeSampler(kLargeVocab);
      double perLogit = std::max(0.0, (large - timing.sampleSeconds) /
                                          static_cast<double>(kLargeVocab - spec.vocabSize));
      calibration.sampleNsPerLogit = std::max(perLogit * 1e9, 1e-3);
      calibration.sampleUs = std::max(
          0.0, (timing.sampleSeconds - perLogit * static_cast<double>(spec.vocabSize)) * 1e6);
    }
    // Attention with heads of 128 elements, which vectorize where the tiny
    // model's 16 loop over positions; weights small enough to stay cached.
    progress("measuring attention with large heads");
    {
      Timing timing;
      cost::ModelShape shape;
      double perPosition = 0;
      if (!measureAttention("wide-heads", attentionModel(512, 2), timing, shape,
                            perPosition)) {
        std::cerr << "hetc calibrate: " << error << "\n";
        cleanup();
        return 1;
      }
    }

    double bestPrefill = 0;
    // The estimate up front is a guess from the bandwidth; once a format has
    // been measured, the guesses for the rest are scaled by how the measured
    // ones' time compared with theirs.
    auto formatsStart = std::chrono::steady_clock::now();
    double guessedDone = 0;
    for (size_t done = 0; done < flags->formats.size(); ++done) {
      const std::string &format = flags->formats[done];
      if (done > 0) {
        double elapsed = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - formatsStart)
                             .count();
        double guessedLeft = 0;
        for (size_t later = done; later < flags->formats.size(); ++later)
          guessedLeft += formatSeconds(flags->formats[later], formatBytes, bandwidth);
        progress("measuring " + format + " kernels (about " +
                 std::to_string(static_cast<int>(elapsed / guessedDone * guessedLeft)) +
                 " s left)");
      } else {
        progress("measuring " + format + " kernels");
      }
      guessedDone += formatSeconds(format, formatBytes, bandwidth);
      hetc::synth::SyntheticModelSpec spec =
          formatModel(format, formatBytes, kWideWidth);
      Timing timing, narrowTiming, inCacheTiming;
      cost::ModelShape shape, narrowShape, inCacheShape;
      if (!measure(format, spec, kFormatPrompt, kFormatSteps, timing, shape) ||
          !measure(format + "-narrow",
                   formatModel(format, formatBytes / 2, kNarrowWidth),
                   kFormatPrompt, kFormatSteps, narrowTiming, narrowShape) ||
          !measure(format + "-in-cache",
                   inCacheModel(format, static_cast<double>(topology.l3Bytes) / 8),
                   kFormatPrompt, kFormatSteps, inCacheTiming, inCacheShape)) {
        std::cerr << "hetc calibrate: " << error << "\n";
        cleanup();
        return 1;
      }
      // The prompt's FLOPs as cost::prefill counts them: the logits of its
      // last token only, and causal attention over half the square.
      auto promptFlopsOf = [](const cost::ModelShape &measured) {
        double flops = 0;
        for (const cost::Unit &unit : cost::unitsOf(
                 measured, hetc::pipeline::defaultCpuKvElementBytes()))
          flops += unit.flopsPerToken *
                       (unit.kind == cost::UnitKind::Output ? 1 : kFormatPrompt) +
                   unit.attentionFlopsPerContext * kFormatPrompt *
                       (kFormatPrompt + 1) / 2.0;
        return flops;
      };
      // What the weights cost beyond the dispatches and the attention over
      // the prompt and the steps after it, as a streaming rate.
      auto decodeRateOf = [&](const cost::ModelShape &measured,
                              const Timing &measuredTiming) {
        double stepBytes = 0, attentionFlops = 0;
        int kernels = 0;
        for (const cost::Unit &unit : cost::unitsOf(
                 measured, hetc::pipeline::defaultCpuKvElementBytes())) {
          stepBytes += unit.weightBytesPerStep;
          kernels += unit.kernels;
          attentionFlops += unit.attentionFlopsPerContext;
        }
        double attentionRate = calibration.attentionGflopsAt(measured.headDim);
        double attention =
            attentionRate > 0
                ? attentionFlops * (kFormatPrompt + (kFormatSteps + 1) / 2.0) /
                      (attentionRate * 1e9)
                : 0;
        double step = measuredTiming.decodeStepSeconds;
        double streaming =
            std::max(step * 0.25, step - attention -
                                      kernels * calibration.dispatchUs * 1e-6);
        return StreamRate{stepBytes, stepBytes / streaming / 1e9};
      };
      // The rates as if read past the caches: what each model's size let
      // the caches keep is divided out (cost::decodeStep puts it back for
      // the model it predicts). They are kept as fractions of the read
      // bandwidth while they ran, scaled below to the median bandwidth.
      auto pastCaches = [&](StreamRate rate, const Timing &measuredTiming) {
        return rate.gbPerS / calibration.streamScaleAt(rate.stepBytes) /
               measuredTiming.readGBPerSDuring;
      };
      double decodeRate = pastCaches(decodeRateOf(shape, timing), timing);
      double narrowDecodeRate =
          pastCaches(decodeRateOf(narrowShape, narrowTiming), narrowTiming);
      double inCacheRate = decodeRateOf(inCacheShape, inCacheTiming).gbPerS;
      double promptFlops = promptFlopsOf(shape);
      double prefillRate = promptFlops / timing.prefillSeconds / 1e12;
      double narrowPrefillRate =
          promptFlopsOf(narrowShape) / narrowTiming.prefillSeconds / 1e12;
      bestPrefill = std::max({bestPrefill, prefillRate, narrowPrefillRate});
      std::vector<std::string> names = {format};
      if (format == "q4_k_m")
        names = {"q4_k", "q6_k"};
      for (const std::string &name : names) {
        calibration.decodeGBPerS[name] = decodeRate;
        calibration.decodeInCacheGBPerS[name] = inCacheRate;
        calibration.prefillTflops[name] = prefillRate;
        calibration.prefillTflopsByWidth[name] = {{kNarrowWidth, narrowPrefillRate},
                                                  {kWideWidth, prefillRate}};
        calibration.decodeGBPerSByWidth[name] = {{kNarrowWidth, narrowDecodeRate},
                                                 {kWideWidth, decodeRate}};
      }
    }
    std::sort(bandwidthReadings.begin(), bandwidthReadings.end());
    double typicalBandwidth = bandwidthReadings[bandwidthReadings.size() / 2];
    for (auto &[name, rate] : calibration.decodeGBPerS)
      rate *= typicalBandwidth;
    for (auto &[name, rates] : calibration.decodeGBPerSByWidth)
      for (auto &[width, rate] : rates)
        rate *= typicalBandwidth;

    hardware::Device device;
    device.name = "host";
    device.kind = hardware::DeviceKind::Cpu;
    device.arch = llvm::sys::getHostCPUName().str();
    char description[256];
    std::snprintf(description, sizeof description,
                  "This machine, measured by hetc calibrate: %d cores, L2 %llu KiB, "
                  "L3 %llu MiB; f32 peak is the best prefill rate measured",
                  topology.cores,
                  static_cast<unsigned long long>(topology.l2Bytes >> 10),
                  static_cast<unsigned long long>(topology.l3Bytes >> 20));
    device.description = description;
    // hetc's CPU code computes every format in f32.
    device.peakTflops = {bestPrefill, 0, 0, 0, 0};
    device.memory = {hardware::MemoryTier{"dram", "dram", topology.memoryBytes,
                                          bandwidth / 1e9, 100}};
    device.launchOverheadUs = calibration.dispatchUs;
    device.activeWatts = flags->activeWatts > 0 ? flags->activeWatts
                                                : 10.0 * topology.cores;
    device.idleWatts = std::min(flags->idleWatts, device.activeWatts);
    device.priceUsdPerHour = flags->pricePerHour;
    device.calibration = calibration;

    nlohmann::json system = {
        {"schema", "hetc.system/1"},
        {"name", "host"},
        {"description", "This machine as hetc calibrate measured it"},
        {"devices", {{{"id", "cpu0"},
                      {"device", nlohmann::json::parse(hardware::deviceToJson(device, -1))}}}},
        {"links", nlohmann::json::array()}};
    // Every other device of the runtime's device layer, by the name the
    // runtime gives it, so a plan's devices are the ones hetc run finds.
    std::vector<VulkanCalibration> accelerators;
    if (!flags->cpuOnly) {
      std::vector<hetrt::api::DeviceInfo> others;
      hetrt::api::Status status;
      if (!hetrt::api::listDevices(others, status)) {
        std::cerr << "hetc calibrate: " << status.message << "\n";
        cleanup();
        return 1;
      }
      std::vector<ProgramModel> programModels;
      for (const hetrt::api::DeviceInfo &other : others) {
        if (other.kind != "vulkan")
          continue;
        if (programModels.empty()) {
          progress("compiling the models Vulkan devices are timed on");
          if (!compileProgramModels(directory, programModels, error)) {
            std::cerr << "hetc calibrate: " << error << "\n";
            cleanup();
            return 1;
          }
        }
        progress("measuring " + other.name + " (" + other.description + ")");
        std::optional<VulkanCalibration> measured =
            calibrateVulkanDevice(other, "cpu0.dram", programModels, error);
        if (!measured) {
          std::cerr << "hetc calibrate: " << error << "\n";
          cleanup();
          return 1;
        }
        system["devices"].push_back(measured->device);
        system["links"].push_back(measured->link);
        accelerators.push_back(std::move(*measured));
      }
    }
    cleanup();
    // Written beside the target and renamed over it, so a failure leaves an
    // earlier calibration as it was.
    if (!hetrt::format::writeFileAtomically(flags->output, system.dump(2) + "\n",
                                            outputError)) {
      std::cerr << "hetc calibrate: " << outputError << "\n";
      return 1;
    }
    if (!flags->quiet) {
      std::printf("read bandwidth %.1f GB/s, dispatch %.2f us, %d threads\n",
                  bandwidth / 1e9, calibration.dispatchUs, threads);
      std::printf("sampling %.2f us + %.3f ns per vocabulary entry\n",
                  calibration.sampleUs, calibration.sampleNsPerLogit);
      for (const auto &[headDim, rate] : calibration.attentionGflops)
        std::printf("decode attention %.2f GFLOP/s with heads of %lld\n", rate,
                    static_cast<long long>(headDim));
      std::printf("read bandwidth of %lld MiB: median %.1f GB/s of %zu readings, "
                  "%.1f-%.1f\n",
                  static_cast<long long>(largestMiB), typicalBandwidth,
                  bandwidthReadings.size(), bandwidthReadings.front(),
                  bandwidthReadings.back());
      std::printf("read bandwidth by buffer size:");
      for (const auto &[mib, rate] : calibration.readGBPerSByMiB)
        std::printf(" %lld MiB %.1f GB/s", static_cast<long long>(mib), rate);
      std::printf("\n%-8s %18s %18s %18s %22s %22s\n", "format",
                  "decode GB/s at 768", "at 2048", "in cache",
                  "prefill TFLOPS at 768", "at 2048");
      for (const auto &[name, rate] : calibration.decodeGBPerS)
        std::printf("%-8s %18.2f %18.2f %18.2f %22.3f %22.3f\n", name.c_str(),
                    calibration.decodeGBPerSAt(name, kNarrowWidth), rate,
                    calibration.decodeInCacheGBPerS[name],
                    calibration.prefillTflopsAt(name, kNarrowWidth),
                    calibration.prefillTflopsAt(name, kWideWidth));
      for (const VulkanCalibration &measured : accelerators)
        std::printf("%s: memory %.1f GB/s, host link %.2f GB/s, dispatch "
                    "%.1f us, f32 matmul %.5f TFLOPS; hetc's programs: "
                    "dispatch %.1f us, f32 decode %.2f GB/s (%.2f in the "
                    "caches), f32 prefill %.5f TFLOPS\n",
                    measured.device["id"].get<std::string>().c_str(),
                    measured.memoryGBPerS, measured.linkGBPerS,
                    measured.dispatchUs,
                    measured.f32Tflops,
                    measured.programDispatchUs, measured.decodeGBPerS,
                    measured.cachedDecodeGBPerS, measured.prefillTflops);
      std::printf("wrote %s in %.0f s\n", flags->output.c_str(),
                  seconds(started));
    }
    return 0;
  };
}

} // namespace hetc::cli
