// `hetc bench`: prefill and decode speed at each thread count, beside the
// machine's read bandwidth and the decode roofline measured in the same run.
#include "Commands.h"
#include "DeviceJson.h"
#include "Flags.h"
#include "PackCache.h"
#include "Topology.h"

#include "runtime/core/Bandwidth.h"
#include "runtime/core/CpuFeatures.h"
#include "runtime/core/Limits.h"
#include "runtime/core/Model.h"
#include "hetrt/hetrt.hpp"
#include "runtime/core/Sampler.h"
#include "runtime/core/Session.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fstream>
#include <iterator>
#include <map>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>
#include <unistd.h>

namespace hetc::cli {

namespace {

/// Whether this process may use AMX, and why not where it may not (the
/// reason is empty where it may).
nlohmann::json amxReport() {
  const hetrt::core::AmxSupport &amx = hetrt::core::hostAmxSupport();
  return {{"usable", amx.usable}, {"reason", amx.reason}};
}

struct BenchFlags {
  std::string model;
  int64_t promptTokens = 128;
  int64_t decodeTokens = 32;
  std::vector<int> threads;
  int64_t bandwidthMiB = 1024;
  int repeats = 2;
  bool json = false;
  bool profile = false;
  std::string device;
  std::string system;
  PlanShapeFlags plan;
  std::vector<int> batches;
};

/// Weight bytes one decode step reads: every tensor once, but only one row of
/// the token embedding (unless it is also the output projection).
uint64_t weightBytesPerToken(const hetrt::format::GgufFile &file) {
  uint64_t total = 0;
  bool tied = file.findTensor("output.weight") == nullptr;
  for (const hetrt::format::GgufTensorInfo &tensor : file.tensors()) {
    if (tensor.name == "token_embd.weight" && !tied && tensor.dims.size() == 2)
      total += tensor.sizeBytes / static_cast<uint64_t>(tensor.dims[1]);
    else
      total += tensor.sizeBytes;
  }
  return total;
}

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Names of a loaded code object's functions by address, from its ELF
/// symbol table (kernels are local symbols, which dladdr cannot name).
class CodeSymbols {
public:
  std::string nameOf(const void *address) {
    Dl_info info;
    if (!dladdr(address, &info) || !info.dli_fname)
      return hex(address);
    auto offset = static_cast<uint64_t>(static_cast<const char *>(address) -
                                        static_cast<const char *>(info.dli_fbase));
    std::map<uint64_t, std::string> &symbols = byFile_[info.dli_fname];
    if (symbols.empty())
      symbols = readFunctions(info.dli_fname);
    auto it = symbols.upper_bound(offset);
    if (it == symbols.begin())
      return hex(address);
    return std::prev(it)->second;
  }

private:
  static std::string hex(const void *address) {
    char text[32];
    std::snprintf(text, sizeof text, "%p", address);
    return text;
  }
  /// Function symbols of the ELF file at `path` by value; empty when the
  /// file cannot be read or has no symbol table.
  static std::map<uint64_t, std::string> readFunctions(const std::string &path) {
    std::map<uint64_t, std::string> functions;
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    auto fits = [&](uint64_t offset, uint64_t size) {
      return offset <= bytes.size() && size <= bytes.size() - offset;
    };
    if (!fits(0, sizeof(Elf64_Ehdr)))
      return functions;
    Elf64_Ehdr header;
    std::memcpy(&header, bytes.data(), sizeof header);
    if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
        header.e_shentsize != sizeof(Elf64_Shdr) ||
        !fits(header.e_shoff, uint64_t(header.e_shnum) * sizeof(Elf64_Shdr)))
      return functions;
    std::vector<Elf64_Shdr> sections(header.e_shnum);
    std::memcpy(sections.data(), bytes.data() + header.e_shoff,
                sections.size() * sizeof(Elf64_Shdr));
    for (const Elf64_Shdr &table : sections) {
      if (table.sh_type != SHT_SYMTAB || table.sh_link >= sections.size())
        continue;
      const Elf64_Shdr &names = sections[table.sh_link];
      if (!fits(table.sh_offset, table.sh_size) ||
          !fits(names.sh_offset, names.sh_size))
        continue;
      for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= table.sh_size;
           at += sizeof(Elf64_Sym)) {
        Elf64_Sym symbol;
        std::memcpy(&symbol, bytes.data() + table.sh_offset + at, sizeof symbol);
        if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_name >= names.sh_size)
          continue;
        const char *name = bytes.data() + names.sh_offset + symbol.st_name;
        functions[symbol.st_value] =
            std::string(name, strnlen(name, names.sh_size - symbol.st_name));
      }
    }
    return functions;
  }

  std::map<std::string, std::map<uint64_t, std::string>> byFile_;
};

/// Prints the kernels of `profile` by time per step of `steps` steps that
/// took `total` seconds; what is not in a dispatch ran on the calling thread
/// (small loops, the entry function itself).
void printProfile(const char *what, const hetrt::core::DispatchProfile &profile,
                  int64_t steps, double total) {
  std::vector<std::pair<double, std::string>> rows;
  double dispatched = 0;
  CodeSymbols symbols;
  for (const auto &[task, entry] : profile.byKernel) {
    dispatched += entry.seconds;
    char line[160];
    std::snprintf(line, sizeof line, "%-20s %10.1f %12.3f",
                  symbols.nameOf(reinterpret_cast<const void *>(task)).c_str(),
                  static_cast<double>(entry.dispatches) / steps,
                  entry.seconds / steps * 1e3);
    rows.push_back({entry.seconds, line});
  }
  std::sort(rows.rbegin(), rows.rend());
  std::printf("\n%s profile over %lld steps: %.3f ms per step, %.3f ms in "
              "%zu dispatched kernels, %.3f ms on the calling thread\n",
              what, static_cast<long long>(steps), total / steps * 1e3,
              dispatched / steps * 1e3, profile.byKernel.size(),
              (total - dispatched) / steps * 1e3);
  std::printf("%-20s %10s %12s %7s\n", "kernel", "per step", "ms per step",
              "share");
  for (const auto &[kernelSeconds, line] : rows)
    std::printf("%s %6.1f%%\n", line.c_str(), 100 * kernelSeconds / total);
}

/// Times every dispatch of one prefill of `prompt` (a step is the whole
/// prompt), then of `steps` greedy decode steps after it, and prints both.
bool printProfiles(hetrt::core::Session &session,
                   const std::vector<int32_t> &prompt, int64_t steps,
                   std::string &error) {
  hetrt::core::DispatchProfile prefillProfile;
  session.reset();
  session.profileDispatches(&prefillProfile);
  auto start = std::chrono::steady_clock::now();
  if (!session.prefill(prompt, error))
    return false;
  double prefillSeconds = seconds(start);
  session.profileDispatches(nullptr);
  printProfile("prefill", prefillProfile, 1, prefillSeconds);

  hetrt::core::DispatchProfile profile;
  session.profileDispatches(&profile);
  int32_t token = hetrt::core::argmax(session.logits(), session.vocabSize());
  start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) {
    if (!session.decode(token, error))
      return false;
    token = hetrt::core::argmax(session.logits(), session.vocabSize());
  }
  double total = seconds(start);
  session.profileDispatches(nullptr);
  printProfile("decode", profile, steps, total);
  return true;
}

/// Whether the measured prompt and decode steps fit a context of
/// `contextLength`; says why not.
bool fitsContext(const BenchFlags &flags, int64_t contextLength) {
  if (flags.promptTokens + flags.decodeTokens <= contextLength)
    return true;
  std::cerr << "hetc bench: --prompt-tokens + --decode-tokens ("
            << flags.promptTokens + flags.decodeTokens
            << ") exceed the context length " << contextLength << "\n";
  return false;
}

/// `count` ids past the special tokens, spread over the vocabulary.
std::vector<int32_t> benchPrompt(int64_t count, int64_t vocabSize) {
  std::vector<int32_t> prompt(static_cast<size_t>(count));
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>(3 + (i * 7919) % (vocabSize - 3));
  return prompt;
}

/// Batched decode: `sequences` copies of `prompt` prefilled, then the best
/// of `repeats` runs of `steps` decode steps of all of them in one call each
/// (after an untimed step), as tokens/s over the batch.
bool timeBatch(hetrt::api::Session &session, const std::vector<int32_t> &prompt,
               int sequences, int64_t steps, int repeats, double &rate,
               std::string &error) {
  hetrt::api::Status status;
  std::vector<int32_t> members(static_cast<size_t>(sequences));
  std::vector<int32_t> ids(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    if (!session.createSequence(members[i], status) ||
        !session.prefill(members[i], prompt, status)) {
      error = status.message;
      return false;
    }
    ids[i] = hetrt::core::argmax(session.logits(), session.vocabSize());
  }
  rate = 0;
  for (int r = -1; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < (r < 0 ? 1 : steps); ++step) {
      if (!session.decodeBatch(members, ids, status)) {
        error = status.message;
        return false;
      }
      for (size_t i = 0; i < ids.size(); ++i)
        ids[i] = hetrt::core::argmax(
            session.logits() + i * static_cast<size_t>(session.vocabSize()),
            session.vocabSize());
    }
    if (r >= 0)
      rate = std::max(rate, static_cast<double>(sequences * steps) /
                                seconds(start));
  }
  return true;
}

/// The best of `repeats` prefills of `prompt` and decodes of `decodeTokens`
/// greedy tokens after it (after one untimed round), as tokens/s.
bool timeSession(hetrt::api::Session &session,
                 const std::vector<int32_t> &prompt, int64_t decodeTokens,
                 int repeats, double &prefillRate, double &decodeRate,
                 std::string &error) {
  prefillRate = decodeRate = 0;
  hetrt::api::Status status;
  for (int r = -1; r < repeats; ++r) {
    session.reset();
    auto start = std::chrono::steady_clock::now();
    if (!session.prefill(prompt, status)) {
      error = status.message;
      return false;
    }
    if (r >= 0)
      prefillRate = std::max(prefillRate, prompt.size() / seconds(start));
    // Decode continues the prompt, greedily.
    int32_t token = hetrt::core::argmax(session.logits(), session.vocabSize());
    start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < decodeTokens; ++i) {
      if (!session.decode(token, status)) {
        error = status.message;
        return false;
      }
      token = hetrt::core::argmax(session.logits(), session.vocabSize());
    }
    if (r >= 0)
      decodeRate = std::max(decodeRate, decodeTokens / seconds(start));
  }
  return true;
}

/// `hetc bench --device` or `--system`: the model's programs on one device
/// or over the plan's devices, with what each device ran per decode step,
/// through the runtime's public API.
int benchProgram(const BenchFlags &flags, const std::string &packPath) {
  hetrt::api::Status status;
  std::unique_ptr<hetrt::api::Model> model = hetrt::api::Model::open(
      packPath, isPack(flags.model) ? "" : flags.model, status);
  if (!model) {
    std::cerr << "hetc bench: " << status.message << "\n";
    return 1;
  }
  if (!fitsContext(flags, model->contextLength()))
    return 2;
  std::vector<int32_t> prompt =
      benchPrompt(flags.promptTokens, model->vocabSize());
  std::unique_ptr<hetrt::api::Session> session;
  int32_t deviceIndex = -1;
  if (!flags.system.empty()) {
    session = hetrt::api::Session::createPlanned(*model, status);
  } else {
    std::vector<hetrt::api::DeviceInfo> devices;
    if (!hetrt::api::listDevices(devices, status)) {
      std::cerr << "hetc bench: " << status.message << "\n";
      return 1;
    }
    auto found = std::find_if(devices.begin(), devices.end(),
                              [&](const hetrt::api::DeviceInfo &d) {
                                return d.name == flags.device;
                              });
    if (found == devices.end()) {
      std::cerr << "hetc bench: --device " << flags.device
                << ": this machine has no such device (`hetrt-run "
                   "--list-devices` lists them)\n";
      return 2;
    }
    deviceIndex = found->index;
    session = hetrt::api::Session::createOnDevice(*model, deviceIndex, 0,
                                                  status);
  }
  std::string error;
  double prefillRate = 0, decodeRate = 0;
  if (!session) {
    std::cerr << "hetc bench: " << status.message << "\n";
    return 1;
  }
  if (!timeSession(*session, prompt, flags.decodeTokens, flags.repeats,
                   prefillRate, decodeRate, error)) {
    std::cerr << "hetc bench: " << error << "\n";
    return 1;
  }
  // Batched decode on the device or the plan's devices: several sequences
  // in one run of the batch's program per step, beside one sequence's rate.
  nlohmann::json batches = nlohmann::json::array();
  for (int sequences : flags.batches) {
    std::unique_ptr<hetrt::api::Session> batchSession =
        flags.system.empty()
            ? hetrt::api::Session::createOnDevice(*model, deviceIndex, 0,
                                                  status)
            : hetrt::api::Session::createPlanned(*model, status);
    double rate = 0;
    if (!batchSession ||
        !timeBatch(*batchSession, prompt, sequences, flags.decodeTokens,
                   flags.repeats, rate, error)) {
      std::cerr << "hetc bench: --batch " << sequences << ": "
                << (batchSession ? error : status.message) << "\n";
      return 1;
    }
    batches.push_back({{"sequences", sequences},
                       {"decode_tokens_per_s", rate},
                       {"vs_one_sequence", rate / decodeRate}});
  }
  // Per decode step: each round ran a prefill and the decode steps; the
  // device counters ran since the session began.
  int64_t rounds = flags.repeats + 1;
  std::string devicesName = session->info().devices;
  nlohmann::json devicesJson = nlohmann::json::array();
  for (const hetrt::api::DeviceStats &stats : session->deviceStats())
    devicesJson.push_back({{"name", stats.name},
                           {"code", stats.code},
                           {"dispatches", stats.dispatches},
                           {"bytes_in", stats.bytesIn},
                           {"bytes_out", stats.bytesOut},
                           {"memory", memoryJson(stats.memory)}});
  // The plan's decode step at the measured steps' middle context, beside
  // the measured one.
  double plannedSeconds = 0;
  hetrt::api::Status noPlan;
  bool predicted =
      !flags.system.empty() &&
      model->plannedDecodeSeconds(flags.promptTokens + flags.decodeTokens / 2,
                                  plannedSeconds, noPlan) &&
      plannedSeconds > 0;
  if (flags.json) {
    nlohmann::json report = {{"model", flags.model},
                             {"device", devicesName},
                             {"prompt_tokens", flags.promptTokens},
                             {"decode_tokens", flags.decodeTokens},
                             {"rounds", rounds},
                             {"prefill_tokens_per_s", prefillRate},
                             {"decode_tokens_per_s", decodeRate},
                             {"devices", devicesJson}};
    if (predicted) {
      report["planned_decode_tokens_per_s"] = 1 / plannedSeconds;
      report["decode_vs_plan"] = decodeRate * plannedSeconds;
    }
    if (!batches.empty())
      report["batches"] = batches;
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  std::printf("%-16s %14s %14s\n", "device", "prefill tok/s", "decode tok/s");
  std::printf("%-16s %14.1f %14.1f\n", devicesName.c_str(), prefillRate,
              decodeRate);
  if (predicted)
    std::printf("the plan predicts %.1f decode tokens/s: measured/planned "
                "%.2f\n",
                1 / plannedSeconds, decodeRate * plannedSeconds);
  if (!batches.empty())
    std::printf("\n%-10s %16s %16s %10s\n", "sequences", "decode tok/s",
                "per sequence", "vs one");
  for (const nlohmann::json &batch : batches)
    std::printf("%-10d %16.1f %16.1f %10.2f\n", batch["sequences"].get<int>(),
                batch["decode_tokens_per_s"].get<double>(),
                batch["decode_tokens_per_s"].get<double>() /
                    batch["sequences"].get<int>(),
                batch["vs_one_sequence"].get<double>());
  for (const hetrt::api::DeviceStats &stats : session->deviceStats())
    std::printf("%s (%s): %llu dispatches, %.1f KiB in and %.1f KiB out over "
                "%lld rounds\n",
                stats.name.c_str(), stats.code.c_str(),
                static_cast<unsigned long long>(stats.dispatches),
                stats.bytesIn / 1024.0, stats.bytesOut / 1024.0,
                static_cast<long long>(rounds));
  for (const hetrt::api::DeviceStats &stats : session->deviceStats())
    if (stats.memory.streamed_bytes > 0)
      std::printf("%s: %.1f KiB of weights streamed per step, %.0f%% of the "
                  "copies' time hidden behind compute\n",
                  stats.name.c_str(),
                  stats.memory.streamed_bytes / 1024.0 / stats.memory.steps,
                  100.0 * hiddenShare(stats.memory));
  return 0;
}

} // namespace

Action registerBenchCommand(CLI::App &app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App *command = app.add_subcommand(
      "bench", "Measure prefill and decode tokens/s with the read bandwidth and "
               "decode roofline of this machine");
  command->add_option("model", flags->model, "A .gguf model or a .hetpack")
      ->required()
      ->check(inputFile("a GGUF model or a .hetpack"));
  command->add_option("--prompt-tokens", flags->promptTokens,
                      "Tokens in the prefill measurement")
      ->check(wholeRange(1, INT32_MAX));
  command->add_option("--decode-tokens", flags->decodeTokens,
                      "Tokens in the decode measurement")
      ->check(wholeRange(1, INT32_MAX));
  command->add_option("-t,--threads", flags->threads,
                      "Thread counts to measure (default: 1 and all cores)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(threadCount());
  command->add_option("--bandwidth-mib", flags->bandwidthMiB,
                      "Buffer size of the bandwidth measurement (MiB)")
      ->check(wholeRange(1, int64_t(1) << 30));
  command->add_option("--repeats", flags->repeats,
                      "Runs per measurement; the best is reported")
      ->check(wholeRange(1, 1000));
  command->add_option("--device", flags->device,
                      "Measure the model's SPIR-V programs on this device "
                      "(vulkan0) instead of the CPU code");
  command->add_option("--system", flags->system,
                      "Measure the plan on this system (a system JSON) over "
                      "the devices it places work on")
      ->excludes("--device");
  addPlanShapeOptions(*command, flags->plan);
  command
      ->add_option("--batch", flags->batches,
                   "Also measure decode steps of this many sequences in one "
                   "call each, at the last thread count (repeat for several)")
      ->check(wholeRange(1, 4096));
  command->add_flag("--json", flags->json, "Print the results as JSON");
  command->add_flag("--profile", flags->profile,
                    "After the measurements, time each kernel over a prefill "
                    "and the decode steps at the last thread count and print "
                    "where the time goes");
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    std::string error;
    if (std::optional<std::string> problem =
            planShapeWithoutPlan(flags->plan, !flags->system.empty())) {
      std::cerr << "hetc bench: " << *problem << "\n";
      return 2;
    }
    bool onProgram = !flags->system.empty() ||
                     (!flags->device.empty() && flags->device != "cpu0");
    PackNeeds needs;
    needs.spirv = onProgram && flags->system.empty();
    needs.system = flags->system;
    needs.deviceMemory = flags->plan.deviceMemory;
    needs.computeDevices = flags->plan.computeDevices;
    needs.objective = flags->plan.objective;
    std::string packPath = packFor(flags->model, 0, "hetc bench", error, needs);
    if (packPath.empty()) {
      std::cerr << "hetc bench: " << error << "\n";
      return 1;
    }
    // The device and plan measurements open the model through the public
    // API alone.
    if (onProgram)
      return benchProgram(*flags, packPath);
    // The measurements run through the public API, as an embedder's would.
    std::string weightsPath = isPack(flags->model) ? "" : flags->model;
    hetrt::api::Status status;
    std::unique_ptr<hetrt::api::Model> model =
        hetrt::api::Model::open(packPath, weightsPath, status);
    if (!model) {
      std::cerr << "hetc bench: " << status.message << "\n";
      return 1;
    }
    const hetrt_model_description_t &described = model->description();
    if (!fitsContext(*flags, model->contextLength()))
      return 2;
    // The bytes a decode step reads, from the tensors of the model file.
    std::unique_ptr<hetrt::format::GgufFile> weights =
        hetrt::format::GgufFile::open(described.weights_path, error);
    if (!weights) {
      std::cerr << "hetc bench: " << error << "\n";
      return 1;
    }
    // The buffer is written whole before it is read: it must fit beside the
    // model, with room to spare for the rest of the process.
    uint64_t available = hetrt::core::availableMemoryBytes();
    if (flags->bandwidthMiB > static_cast<int64_t>(available / 2 >> 20)) {
      std::cerr << "hetc bench: --bandwidth-mib " << flags->bandwidthMiB
                << " is more than half of the "
                << hetrt::core::formatBytes(available)
                << " of memory available; give at most "
                << (available / 2 >> 20) << "\n";
      return 2;
    }
    int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<int> threadCounts = flags->threads;
    if (threadCounts.empty()) {
      threadCounts = {1};
      if (cores > 1)
        threadCounts.push_back(cores);
    }
    // 0 means one thread per core; rows show the count that ran.
    for (int &threads : threadCounts)
      if (threads == 0)
        threads = cores;
    uint64_t bytesPerToken = weightBytesPerToken(*weights);
    std::vector<int32_t> prompt =
        benchPrompt(flags->promptTokens, model->vocabSize());

    nlohmann::json results = nlohmann::json::array();
    if (!flags->json)
      std::printf("%-8s %14s %14s %12s %16s %10s\n", "threads", "prefill tok/s",
                  "decode tok/s", "read GB/s", "roofline tok/s", "decode/roof");
    for (int threads : threadCounts) {
      std::unique_ptr<hetrt::core::ThreadPool> pool =
          hetrt::core::ThreadPool::create(threads, error);
      if (!pool) {
        std::cerr << "hetc bench: " << error << "\n";
        return 1;
      }
      double bandwidth = hetrt::core::measureReadBandwidth(
          *pool, static_cast<size_t>(flags->bandwidthMiB) << 20, 3);
      pool.reset();
      std::unique_ptr<hetrt::api::Session> session =
          hetrt::api::Session::create(*model, threads, status);
      // Each row measures its thread count as given, and each prefill
      // computes its prompt rather than finding it in the prefix cache.
      if (!session || !session->setFixedThreads(true, status) ||
          !session->setPrefixCaching(false, status)) {
        std::cerr << "hetc bench: " << status.message << "\n";
        return 1;
      }
      // One untimed round first, so no row pays for first touches of the
      // weights, the code and the KV cache.
      double prefillRate = 0, decodeRate = 0;
      if (!timeSession(*session, prompt, flags->decodeTokens, flags->repeats,
                       prefillRate, decodeRate, error)) {
        std::cerr << "hetc bench: " << error << "\n";
        return 1;
      }
      double roofline = bandwidth / static_cast<double>(bytesPerToken);
      results.push_back({{"threads", threads},
                         {"prefill_tokens_per_s", prefillRate},
                         {"decode_tokens_per_s", decodeRate},
                         {"read_bandwidth_gb_per_s", bandwidth / 1e9},
                         {"decode_roofline_tokens_per_s", roofline},
                         {"decode_roofline_ratio", decodeRate / roofline}});
      if (!flags->json)
        std::printf("%-8d %14.1f %14.1f %12.2f %16.1f %10.3f\n", threads,
                    prefillRate, decodeRate, bandwidth / 1e9, roofline,
                    decodeRate / roofline);
    }
    // Batched decode: the tokens/s of several sequences decoded together,
    // beside one sequence's (the last row's).
    nlohmann::json batches = nlohmann::json::array();
    double singleRate = results.empty()
                            ? 0
                            : results.back()["decode_tokens_per_s"].get<double>();
    if (!flags->batches.empty() && !flags->json)
      std::printf("\n%-10s %16s %16s %10s\n", "sequences", "decode tok/s",
                  "per sequence", "vs one");
    for (int sequences : flags->batches) {
      std::unique_ptr<hetrt::api::Session> session =
          hetrt::api::Session::create(*model, threadCounts.back(), status);
      if (!session || !session->setFixedThreads(true, status)) {
        std::cerr << "hetc bench: " << status.message << "\n";
        return 1;
      }
      double rate = 0;
      if (!timeBatch(*session, prompt, sequences, flags->decodeTokens,
                     flags->repeats, rate, error)) {
        std::cerr << "hetc bench: --batch " << sequences << ": " << error
                  << "\n";
        return 1;
      }
      batches.push_back({{"sequences", sequences},
                         {"threads", threadCounts.back()},
                         {"decode_tokens_per_s", rate},
                         {"vs_one_sequence", rate / singleRate}});
      if (!flags->json)
        std::printf("%-10d %16.1f %16.1f %10.2f\n", sequences, rate,
                    rate / sequences, rate / singleRate);
    }
    if (flags->profile && !flags->json) {
      // Timing each kernel is the runtime's C++ core's business (a developer's
      // view, not the API's): the same steps as the last row's, after a
      // fresh prefill.
      std::unique_ptr<hetrt::core::Model> core =
          hetrt::core::Model::load(packPath, weightsPath, error);
      std::unique_ptr<hetrt::core::Session> session =
          core ? hetrt::core::Session::create(*core, threadCounts.back(), error)
               : nullptr;
      if (session) {
        session->setDecodeThreadChoice(false);
        session->setPrefixCaching(false);
      }
      if (!session || !session->prefill(prompt, error) ||
          !printProfiles(*session, prompt, flags->decodeTokens, error)) {
        std::cerr << "hetc bench: " << error << "\n";
        return 1;
      }
    }
    // The roofline is DRAM's: a model whose weights stay in the caches
    // decodes faster than it, which the report says rather than hides.
    double lastLevelCache = static_cast<double>(readTopology().l3Bytes);
    bool weightsFitCache =
        lastLevelCache > 0 && static_cast<double>(bytesPerToken) < lastLevelCache;
    if (flags->json) {
      nlohmann::json report = {{"model", flags->model},
                               {"weights_fit_last_level_cache", weightsFitCache},
                               {"variant", described.cpu_code},
                               {"amx", amxReport()},
                               {"weight_bytes_per_token", bytesPerToken},
                               {"prompt_tokens", flags->promptTokens},
                               {"decode_tokens", flags->decodeTokens},
                               {"results", results}};
      if (!batches.empty())
        report["batches"] = batches;
      std::cout << report.dump(2) << "\n";
    } else {
      std::printf("weights read per decode token: %.1f MB; code variant %s\n",
                  bytesPerToken / 1e6, described.cpu_code);
      const hetrt::core::AmxSupport &amx = hetrt::core::hostAmxSupport();
      std::printf("AMX: %s\n", amx.usable ? "usable" : amx.reason.c_str());
      if (weightsFitCache)
        std::printf("the weights fit in the %s last-level cache, so decode "
                    "is not bound by DRAM and may pass its roofline\n",
                    hetrt::core::formatBytes(
                        static_cast<uint64_t>(lastLevelCache)).c_str());
    }
    return 0;
  };
}

} // namespace hetc::cli
