#include "runtime/core/ProgramSession.h"

#include "runtime/backends/cpu/CpuCode.h"
#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/core/CpuFeatures.h"
#include "runtime/format/ProgramJson.h"

#include <algorithm>

namespace hetrt::core {

namespace {

/// The program JSON of pack section `name`; nothing with `error` naming the
/// pack and `recompile` when the section is missing or malformed.
std::optional<hetc::abi::Program> readProgram(const format::PackFile &pack,
                                              const std::string &name,
                                              const std::string &recompile,
                                              std::string &error) {
  const std::string_view *text = pack.section(name);
  if (!text) {
    error = pack.path() + ": the manifest names section \"" + name +
            "\", which the pack does not hold (compile the model again with `" +
            recompile + "`)";
    return std::nullopt;
  }
  return format::programFromJson(std::string(*text),
                                 pack.path() + ": " + name, error);
}

/// `out` as `device` running the library build in the pack's section
/// `section` (a manifest's library entry), in `format`; false with `error`
/// saying the pack lacks the section. `out.kernels` is left to the caller.
bool libraryCode(const format::PackFile &pack, const std::string &section,
                 const std::string &recompile, hal::Device &device,
                 hal::ExecutableFormat format, std::string description,
                 ProgramRunner::DeviceCode &out, std::string &error) {
  const std::string_view *binary = pack.section(section);
  if (!binary) {
    error = pack.path() + ": the manifest names section \"" + section +
            "\", which the pack does not hold (compile the model again with `" +
            recompile + "`)";
    return false;
  }
  out.device = &device;
  out.format = format;
  out.binary = std::string(*binary);
  out.description = std::move(description);
  return true;
}

/// The kernel library's code for `device`, from the pack's "spirv" part: the
/// best variant the device supports.
bool spirvCode(const format::PackFile &pack, const format::SpirvCode &code,
               hal::Device &device, const std::string &recompile,
               ProgramRunner::DeviceCode &out, std::string &error,
               Failure &failure) {
  failure = Failure::Unsupported;
  if (!device.runs(hal::ExecutableFormat::SpirV)) {
    error = device.info().name + " does not run SPIR-V; give --device a "
            "Vulkan device (hetrt-run --list-devices lists them)";
    return false;
  }
  std::string why;
  const format::SpirvLibrary *library =
      chooseSpirvLibrary(code, device.info().spirv, why);
  if (!library) {
    error = device.info().name + " (" + device.info().description +
            ") runs no variant of the pack's SPIR-V kernel library: " + why;
    return false;
  }
  failure = Failure::InvalidInput;
  if (!libraryCode(pack, library->section, recompile, device,
                   hal::ExecutableFormat::SpirV, "spirv " + library->variant,
                   out, error))
    return false;
  for (const auto &[name, bindings] : code.kernels)
    out.kernels.push_back({name, bindings, 0});
  return true;
}

/// The kernel library's code for GPU `device`, from the pack's part for
/// `target` (nvptx, amdgpu): the build its chip runs.
bool gpuCode(const format::PackFile &pack, const format::Manifest &manifest,
             const std::string &target, hal::Device &device,
             const std::string &recompile, ProgramRunner::DeviceCode &out,
             std::string &error, Failure &failure) {
  failure = Failure::Unsupported;
  const std::optional<format::GpuCode> &code =
      target == "nvptx" ? manifest.nvptx : manifest.amdgpu;
  if (!code) {
    failure = Failure::InvalidInput;
    error = pack.path() + ": the plan runs " + target + " code on " +
            device.info().name + ", but the pack holds no " + target +
            " kernel library (compile the model again with `" + recompile +
            "`)";
    return false;
  }
  if (!device.runs(hal::ExecutableFormat::GpuModule)) {
    error = pack.path() + ": the plan runs " + target + " code on " +
            device.info().name + ", a " + device.info().kind +
            " device here; compile the model for this machine's system";
    return false;
  }
  std::string why;
  const format::GpuLibrary *library =
      chooseGpuLibrary(*code, target, device.info().arch, why);
  if (!library) {
    error = device.info().name + " (" + device.info().description + "): " + why;
    return false;
  }
  failure = Failure::InvalidInput;
  if (!libraryCode(pack, library->section, recompile, device,
                   hal::ExecutableFormat::GpuModule,
                   target + " " + library->variant + " " + library->format, out,
                   error))
    return false;
  for (const format::GpuKernel &kernel : code->kernels) {
    hal::KernelSignature signature;
    signature.entryPoint = kernel.name;
    signature.bindings = kernel.bindings;
    for (int d = 0; d < 3; ++d)
      signature.workgroupSize[d] = static_cast<uint32_t>(kernel.workgroup[d]);
    out.kernels.push_back(std::move(signature));
  }
  return true;
}

} // namespace

const format::SpirvLibrary *chooseSpirvLibrary(const format::SpirvCode &code,
                                               const hal::SpirvSupport &device,
                                               std::string &why) {
  why.clear();
  auto has = [](const std::vector<std::string> &names,
                const std::string &name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const format::SpirvLibrary &library : code.libraries) {
    std::string missing;
    int version = format::spirvVersionNumber(library.version);
    if (version < 0 || version > device.version)
      missing = "SPIR-V " + library.version;
    for (const std::string &capability : library.capabilities)
      if (!has(device.capabilities, capability))
        missing += (missing.empty() ? "" : ", ") + capability;
    for (const std::string &extension : library.extensions)
      if (!has(device.extensions, extension))
        missing += (missing.empty() ? "" : ", ") + extension;
    if (missing.empty())
      return &library;
    why += (why.empty() ? "" : "; ") + std::string("variant ") +
           library.variant + " needs " + missing;
  }
  if (code.libraries.empty())
    why = "the pack lists no variant";
  return nullptr;
}

namespace {

/// The kind of runtime device that runs a program target's code.
std::string runtimeKindOf(const std::string &target) {
  if (target == "x86" || target == "host-memory")
    return "cpu";
  if (target == "spirv")
    return "vulkan";
  if (target == "nvptx")
    return "cuda";
  if (target == "amdgpu")
    return "hip";
  return target;
}

/// "sm_86" → 86; -1 for anything else.
int computeCapability(const std::string &arch, const char *prefix) {
  std::string_view text(arch);
  std::string_view head(prefix);
  if (text.substr(0, head.size()) != head || text.size() == head.size() ||
      text.size() > head.size() + 4)
    return -1;
  int value = 0;
  for (char c : text.substr(head.size())) {
    if (c < '0' || c > '9')
      return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

} // namespace

const format::GpuLibrary *chooseGpuLibrary(const format::GpuCode &code,
                                           const std::string &target,
                                           const std::string &arch,
                                           std::string &why) {
  const format::GpuLibrary *chosen = nullptr;
  if (target == "nvptx") {
    int device = computeCapability(arch, "sm_");
    int bestCubin = -1, bestPtx = -1;
    const format::GpuLibrary *ptx = nullptr;
    for (const format::GpuLibrary &library : code.libraries) {
      if (library.format == "cubin") {
        int built = computeCapability(library.variant, "sm_");
        // SASS runs on its chip and later minor versions of the same major.
        if (built >= 0 && device >= 0 && built / 10 == device / 10 &&
            built <= device && built > bestCubin) {
          bestCubin = built;
          chosen = &library;
        }
      } else if (library.format == "ptx") {
        int built = computeCapability(library.variant, "compute_");
        if (built >= 0 && device >= built && built > bestPtx) {
          bestPtx = built;
          ptx = &library;
        }
      }
    }
    if (!chosen)
      chosen = ptx;
  } else if (target == "amdgpu") {
    for (const format::GpuLibrary &library : code.libraries)
      if (library.format == "hsaco" && library.variant == arch)
        chosen = &library;
  }
  if (chosen)
    return chosen;
  std::string builds;
  for (const format::GpuLibrary &library : code.libraries)
    builds += (builds.empty() ? "" : ", ") + library.variant + " " +
              library.format;
  why = "none of the " + target + " kernel library's builds (" + builds +
        ") runs on " + (arch.empty() ? std::string("a GPU of unknown arch")
                                     : arch);
  return nullptr;
}

std::unique_ptr<ProgramSession> ProgramSession::create(const Model &model,
                                                       hal::Device &device,
                                                       std::string &error,
                                                       Failure &failure) {
  const format::Manifest &manifest = model.manifest();
  const format::PackFile &pack = model.pack();
  failure = Failure::InvalidInput;
  if (!manifest.spirv) {
    failure = Failure::Unsupported;
    error = pack.path() + ": the pack holds no SPIR-V programs for " +
            device.info().name +
            "; compile it with `hetc compile --spirv` (hetc run MODEL.gguf "
            "--device " + device.info().name + " does so itself)";
    return nullptr;
  }
  const format::SpirvCode &code = *manifest.spirv;
  const std::string recompile = "hetc compile --spirv";
  ProgramRunner::DeviceCode library;
  std::optional<hetc::abi::Program> prefill =
      readProgram(pack, code.prefillSection, recompile, error);
  if (!prefill)
    return nullptr;
  std::optional<hetc::abi::Program> decode =
      readProgram(pack, code.decodeSection, recompile, error);
  if (!decode)
    return nullptr;
  std::optional<hetc::abi::Program> batch;
  if (!code.decodeBatchSection.empty()) {
    batch = readProgram(pack, code.decodeBatchSection, recompile, error);
    if (!batch)
      return nullptr;
  }
  if (!spirvCode(pack, code, device, recompile, library, error, failure))
    return nullptr;
  return start(model, {std::move(library)}, std::move(*prefill),
               std::move(*decode), code.maxPrefillTokens, recompile, error,
               failure, std::move(batch), code.maxBatch);
}

std::vector<MemorySpaceStats> ProgramSession::memorySpaces() const {
  std::vector<MemorySpaceStats> spaces = runner_->memorySpaces();
  addKvSpaces(kv_->usage(), runner_->kvBlockShares(), spaces);
  return spaces;
}

std::unique_ptr<ProgramSession> ProgramSession::createPlanned(
    const Model &model, const std::vector<std::shared_ptr<hal::Device>> &devices,
    std::string &error, Failure &failure) {
  const format::Manifest &manifest = model.manifest();
  const format::PackFile &pack = model.pack();
  const std::string recompile = "hetc compile --system SYSTEM";
  failure = Failure::InvalidInput;
  if (!manifest.plan) {
    failure = Failure::Unsupported;
    error = pack.path() + ": the pack holds no plan; compile it with `" +
            recompile + "` (hetc run MODEL.gguf --system SYSTEM does so itself)";
    return nullptr;
  }
  const format::PlannedCode &plan = *manifest.plan;
  std::optional<hetc::abi::Program> prefill =
      readProgram(pack, plan.prefillSection, recompile, error);
  if (!prefill)
    return nullptr;
  std::optional<hetc::abi::Program> decode =
      readProgram(pack, plan.decodeSection, recompile, error);
  if (!decode)
    return nullptr;
  std::optional<hetc::abi::Program> batch;
  if (!plan.decodeBatchSection.empty()) {
    batch = readProgram(pack, plan.decodeBatchSection, recompile, error);
    if (!batch)
      return nullptr;
  }
  std::vector<hetc::abi::Program *> programs = {&*prefill, &*decode};
  if (batch)
    programs.push_back(&*batch);
  // Each device of the plan on one of this machine's: the one of its name,
  // else the first of its kind no other plan device took (a plan for a
  // catalog system names its GPU gpu0; this machine calls it cuda0).
  std::vector<std::string> names;
  for (const hetc::abi::Program *program : programs)
    for (const hetc::abi::ProgramDevice &device : program->devices)
      if (std::find(names.begin(), names.end(), device.name) == names.end())
        names.push_back(device.name);
  std::vector<std::pair<std::string, hal::Device *>> placed;
  auto taken = [&](const hal::Device *device) {
    return std::any_of(placed.begin(), placed.end(),
                       [&](const auto &entry) { return entry.second == device; });
  };
  for (const std::string &name : names)
    for (const std::shared_ptr<hal::Device> &device : devices)
      if (device->info().name == name && !taken(device.get()))
        placed.emplace_back(name, device.get());
  for (const hetc::abi::Program *program : programs)
    for (const hetc::abi::ProgramDevice &wanted : program->devices) {
      if (std::any_of(placed.begin(), placed.end(), [&](const auto &entry) {
            return entry.first == wanted.name;
          }))
        continue;
      const std::string kind = runtimeKindOf(wanted.target);
      for (const std::shared_ptr<hal::Device> &device : devices)
        if (device->info().kind == kind && !taken(device.get())) {
          placed.emplace_back(wanted.name, device.get());
          break;
        }
      if (std::none_of(placed.begin(), placed.end(), [&](const auto &entry) {
            return entry.first == wanted.name;
          })) {
        std::string have;
        for (const std::shared_ptr<hal::Device> &d : devices)
          have += (have.empty() ? "" : ", ") + d->info().name;
        error = pack.path() + ": the plan for " + plan.system + " runs " +
                wanted.target + " code on " + wanted.name +
                ", and this machine has no such device nor another " + kind +
                " device for it (it has " + have +
                "); compile the model for this machine's system (`hetc "
                "calibrate` describes it)";
        failure = Failure::Unavailable;
        return nullptr;
      }
    }
  auto runtimeDevice = [&](const std::string &name) {
    for (const auto &[planned, device] : placed)
      if (planned == name)
        return device;
    return static_cast<hal::Device *>(nullptr);
  };
  std::vector<std::pair<std::string, std::string>> planNames;
  for (const auto &[planned, device] : placed)
    planNames.emplace_back(device->info().name, planned);
  // The runner knows devices by this machine's names.
  for (hetc::abi::Program *program : programs)
    for (hetc::abi::ProgramDevice &device : program->devices)
      device.name = runtimeDevice(device.name)->info().name;
  std::vector<ProgramRunner::DeviceCode> codes;
  for (const hetc::abi::ProgramDevice &wanted : prefill->devices) {
    hal::Device *device = nullptr;
    for (const auto &[planned, candidate] : placed)
      if (candidate->info().name == wanted.name)
        device = candidate;
    ProgramRunner::DeviceCode code;
    if (wanted.target == "host-memory") {
      // Holds streamed weights; runs nothing.
      code.device = device;
      code.format = hal::ExecutableFormat::X86SharedObject;
      code.description = "host memory";
      code.runsCode = false;
    } else if (wanted.target == "spirv") {
      if (!manifest.spirv) {
        error = pack.path() + ": the plan runs SPIR-V on " + wanted.name +
                ", but the pack holds no SPIR-V kernel library (compile the "
                "model again with `" + recompile + "`)";
        return nullptr;
      }
      if (!spirvCode(pack, *manifest.spirv, *device, recompile, code, error,
                     failure))
        return nullptr;
    } else if (wanted.target != "x86") {
      if (!gpuCode(pack, manifest, wanted.target, *device, recompile, code,
                   error, failure))
        return nullptr;
    } else {
      const format::CodeVariant *chosen = nullptr;
      for (const format::CodeVariant &variant : plan.cpuVariants)
        if (hostSupports(variant.requires_)) {
          chosen = &variant;
          break;
        }
      const std::string_view *binary =
          chosen ? pack.section(chosen->section) : nullptr;
      if (!binary) {
        error = pack.path() + ": no variant of the plan's CPU code runs on " +
                "this CPU, or its section is missing (compile the model on, "
                "or for, this machine)";
        failure = chosen ? Failure::InvalidInput : Failure::Unsupported;
        return nullptr;
      }
      code.device = device;
      code.format = hal::ExecutableFormat::X86SharedObject;
      code.description = "x86 " + chosen->name;
      code.binary = std::string(*binary);
      for (const auto &[name, bindings] : plan.cpuKernels)
        code.kernels.push_back({name, bindings, 0});
    }
    // The runtime holds no more in the device's memory than the plan gave
    // it.
    std::string plannedName;
    for (const auto &[runtime, planned] : planNames)
      if (runtime == wanted.name)
        plannedName = planned;
    for (const format::PlannedCode::PlannedMemory &use : plan.memory)
      if (use.device == plannedName && use.capacityBytes > 0) {
        code.memoryBudget = use.capacityBytes;
        code.budgetSource = "the plan for " + plan.system + " (" +
                            plannedName + "'s memory)";
      }
    codes.push_back(std::move(code));
  }
  std::unique_ptr<ProgramSession> session =
      start(model, std::move(codes), std::move(*prefill), std::move(*decode),
            plan.maxPrefillTokens, recompile, error, failure, std::move(batch),
            plan.maxBatch);
  if (!session)
    return nullptr;
  session->planNames_ = std::move(planNames);
  // The plan's host tier bounds what idle sequences keep in host memory
  // until the caller sets another budget.
  if (plan.kvHostBlocks > 0 &&
      !session->kv_->setBudget(
          "host",
          static_cast<uint64_t>(plan.kvHostBlocks) *
              static_cast<uint64_t>(session->runner_->kvBlockBytes()),
          error)) {
    error = pack.path() + ": the plan's host tier: " + error;
    return nullptr;
  }
  // And keeps them as the plan chose, until the caller chooses otherwise.
  if (plan.kvTierInt8 &&
      !session->kv_->setTierFormat(KvTierFormat::Int8, error)) {
    error = pack.path() + ": the plan's host tier: " + error;
    return nullptr;
  }
  return session;
}

std::unique_ptr<ProgramSession> ProgramSession::start(
    const Model &model, std::vector<ProgramRunner::DeviceCode> devices,
    hetc::abi::Program prefill, hetc::abi::Program decode,
    int64_t maxPrefillTokens, const std::string &recompile,
    std::string &error, Failure &failure,
    std::optional<hetc::abi::Program> batch, int64_t maxBatch) {
  const format::Manifest &manifest = model.manifest();
  const format::PackFile &pack = model.pack();
  std::unique_ptr<ProgramSession> session(new ProgramSession());
  session->context_ = manifest.contextLength;
  session->maxPrefillTokens_ = maxPrefillTokens;
  for (const ProgramRunner::DeviceCode &code : devices)
    session->deviceName_ += (session->deviceName_.empty() ? "" : "+") +
                            code.device->info().name;
  std::vector<ProgramRunner::Entry> programs = {
      {std::move(prefill), maxPrefillTokens}, {std::move(decode), 1}};
  if (batch) {
    programs.push_back({std::move(*batch), maxBatch});
    session->maxBatch_ = maxBatch;
  }
  hal::Error halError;
  session->runner_ = ProgramRunner::create(std::move(devices),
                                           std::move(programs),
                                           model.weights(), halError);
  if (!session->runner_) {
    error = pack.path() + " on " + session->deviceName_ + ": " +
            halError.message;
    failure = halError.kind;
    return nullptr;
  }
  // CPU segment code reads the weights at the offsets of the file it was
  // compiled for: its record must name this model file.
  for (size_t d = 0; d < session->runner_->stats().size(); ++d) {
    const auto *record =
        session->runner_->executable(d)
            ? cpu::segmentCodeRecord(*session->runner_->executable(d))
            : nullptr;
    if (record && !cpu::checkModelHash(*record,
                                       pack.path() + ": the plan's CPU code",
                                       manifest.weightsHash, error))
      return nullptr;
  }
  if (session->runner_->vocab() != manifest.vocabSize) {
    error = pack.path() + ": the programs compute " +
            std::to_string(session->runner_->vocab()) +
            " logits, but the model has " +
            std::to_string(manifest.vocabSize) +
            " tokens (compile the model again with `" + recompile + "`)";
    return nullptr;
  }
  // The pools' blocks bound the context.
  int64_t entries = session->runner_->blockTableEntries();
  int64_t blockSize = session->runner_->kvBlockSize();
  if (entries == 0 || entries * blockSize < session->context_) {
    error = pack.path() + ": the programs' KV caches hold " +
            std::to_string(entries * blockSize) + " positions, fewer than "
            "the model's context of " + std::to_string(session->context_) +
            " (compile the model again with `" + recompile + "`)";
    return nullptr;
  }
  session->table_.assign(static_cast<size_t>(entries), 0);
  session->headDim_ = static_cast<size_t>(manifest.headDim);
  session->kvElementBytes_ = static_cast<size_t>(manifest.kvElementBytes());
  session->kvBfloat_ = manifest.kvElementType == "bf16";
  session->vocab_ = manifest.vocabSize;
  session->logits_.assign(manifest.vocabSize, 0.0f);
  KvBlockStore &store = *session;
  session->kv_ = std::make_unique<KvCache>(
      store, static_cast<int32_t>(entries), blockSize, session->context_);
  return session;
}

bool ProgramSession::gatherBlock(int32_t block, std::byte *out,
                                 std::string &error) {
  hal::Error failure;
  if (runner_->readKvBlock(block, out, failure))
    return true;
  error = deviceName_ + ": " + failure.message;
  return false;
}

bool ProgramSession::scatterBlock(const std::byte *in, int32_t block,
                                  std::string &error) {
  // A block comes back before the step that reads it: each layer's part
  // lands while the layers before it compute.
  hal::Error failure;
  if (runner_->prefetchKvBlock(in, block, failure))
    return true;
  error = deviceName_ + ": " + failure.message;
  return false;
}

bool ProgramSession::copyBlock(int32_t from, int32_t to, std::string &error) {
  hal::Error failure;
  if (runner_->copyKvBlock(from, to, failure))
    return true;
  error = deviceName_ + ": " + failure.message;
  return false;
}

KvSequence *ProgramSession::checkRun(SequenceId sequence,
                                     const int32_t *tokens, int64_t count,
                                     std::string &error) {
  return kv_->findRun(sequence, tokens, count, vocab_, error);
}

bool ProgramSession::step(size_t program, SequenceId id, KvSequence &sequence,
                          const int32_t *tokens, int64_t count,
                          std::string &error) {
  int64_t start = sequence.length();
  if (!kv_->prepare(id, sequence, count, error))
    return false;
  std::copy(sequence.table.begin(), sequence.table.end(), table_.begin());
  std::fill(table_.begin() + static_cast<long>(sequence.table.size()),
            table_.end(), 0);
  hal::Error halError;
  if (!runner_->run(program, tokens, count, start, table_.data(),
                    logits_.data(), halError)) {
    error = deviceName_ + ": " + halError.message;
    return false;
  }
  sequence.tokens.insert(sequence.tokens.end(), tokens, tokens + count);
  kv_->publishBlocks(sequence);
  // A decode step follows: its first streamed weights cross while the
  // host samples the token.
  if (!runner_->prefetch(kDecodeEntry, halError)) {
    error = deviceName_ + ": " + halError.message;
    return false;
  }
  return true;
}

bool ProgramSession::prefill(SequenceId id, const std::vector<int32_t> &tokens,
                             std::string &error) {
  if (tokens.empty()) {
    error = "prefill needs at least one token";
    return false;
  }
  int64_t count = static_cast<int64_t>(tokens.size());
  KvSequence *sequence = checkRun(id, tokens.data(), count, error);
  if (!sequence)
    return false;
  size_t blocksBefore = sequence->table.size();
  int64_t reused = kv_->reusePrefix(*sequence, tokens.data(), count);
  for (int64_t done = reused; done < count;) {
    int64_t chunk = std::min(maxPrefillTokens_, count - done);
    if (!step(kPrefillEntry, id, *sequence, tokens.data() + done, chunk,
              error)) {
      // Nothing ran: the reused blocks are given back.
      if (done == reused)
        kv_->dropReused(*sequence, blocksBefore, reused);
      return false;
    }
    done += chunk;
  }
  kv_->countReused(reused);
  return true;
}

bool ProgramSession::decode(SequenceId id, int32_t token, std::string &error) {
  KvSequence *sequence = checkRun(id, &token, 1, error);
  return sequence && step(kDecodeEntry, id, *sequence, &token, 1, error);
}

bool ProgramSession::decodeBatch(const std::vector<SequenceId> &sequences,
                                 const std::vector<int32_t> &ids,
                                 std::string &error) {
  if (maxBatch_ == 0) {
    error = "the pack's programs on " + deviceName_ +
            " decode one sequence per step (compiled before plans decoded "
            "batches); decode each sequence in turn "
            "(hetrt_session_sequence_decode), or compile the model again";
    return false;
  }
  int64_t count = static_cast<int64_t>(sequences.size());
  if (count > maxBatch_) {
    error = "a batch of " + std::to_string(count) + " sequences, but the "
            "programs decode at most " + std::to_string(maxBatch_) +
            " at once; decode the rest in another step";
    return false;
  }
  std::vector<KvSequence *> members;
  if (!kv_->findBatch(sequences, ids, vocab_, members, error))
    return false;
  std::vector<int32_t> positions;
  for (KvSequence *member : members)
    positions.push_back(static_cast<int32_t>(member->length()));
  // The programs read a row of the pool's size per token.
  std::vector<int32_t> rows;
  size_t width = 0;
  if (!kv_->prepareBatch(sequences, members, rows, width, error,
                         table_.size()))
    return false;
  logits_.resize(static_cast<size_t>(count * vocab_));
  hal::Error halError;
  if (!runner_->runBatch(kBatchEntry, ids.data(), positions.data(), count,
                         rows.data(), logits_.data(), halError)) {
    error = deviceName_ + ": " + halError.message;
    return false;
  }
  for (size_t m = 0; m < members.size(); ++m) {
    members[m]->tokens.push_back(ids[m]);
    kv_->publishBlocks(*members[m]);
  }
  return true;
}

} // namespace hetrt::core
