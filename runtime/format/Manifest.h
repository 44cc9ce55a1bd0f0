// The manifest of a .hetpack: which model file the code was compiled for, the
// shapes the runtime allocates, the entry points and the code variants.
#ifndef HETRT_FORMAT_MANIFEST_H
#define HETRT_FORMAT_MANIFEST_H

#include "abi/CodeRecord.h"

#include <cstdint>
#include <array>
#include <optional>
#include <string>
#include <vector>

namespace hetrt::format {

/// One compiled code variant and the CPU features it needs.
struct CodeVariant {
  std::string name;
  /// The pack section holding the shared object.
  std::string section;
  /// CPU features (cpuid names such as "avx512f") the code uses.
  std::vector<std::string> requires_;
};

/// One compiled variant of the SPIR-V kernel library and what it needs of a
/// device, by SPIR-V names.
struct SpirvLibrary {
  /// "subgroup", "portable".
  std::string variant;
  std::string section;
  /// SPIR-V version, "1.3".
  std::string version;
  std::vector<std::string> capabilities;
  std::vector<std::string> extensions;
};

/// A SPIR-V version as SpirvLibrary writes it, as major * 100 + minor
/// ("1.3" → 103); -1 when it is not MAJOR.MINOR below 100.
int spirvVersionNumber(const std::string &version);

/// The model as a program of SPIR-V kernels, for Vulkan devices: the kernel
/// library's variants (best first; a device runs the first it supports), the
/// kernels every variant holds with their binding counts, and the programs
/// (abi/Program.h, as JSON) of the prefill and of one decode step.
struct SpirvCode {
  std::vector<SpirvLibrary> libraries;
  std::vector<std::pair<std::string, int>> kernels;
  std::string prefillSection;
  std::string decodeSection;
  /// The most tokens one prefill step takes (longer prompts run in chunks).
  int64_t maxPrefillTokens = 0;
  /// The program of a decode step of a batch, one sequence per token, and
  /// the most sequences it takes (empty and 0 in packs without one).
  std::string decodeBatchSection;
  int64_t maxBatch = 0;
};

/// One build of the GPU kernel library: for NVIDIA GPUs a cubin per chip
/// (variant "sm_90", format "cubin") or the PTX the driver compiles for
/// later ones ("compute_80", "ptx"); for AMD GPUs a code object per chip
/// ("gfx942", "hsaco").
struct GpuLibrary {
  std::string variant;
  std::string format;
  std::string section;
};

/// A kernel of a GPU library: its entry point, buffer count and the
/// workgroup size it is launched with (CUDA and HIP modules do not carry
/// it).
struct GpuKernel {
  std::string name;
  int bindings = 0;
  std::array<int, 3> workgroup = {1, 1, 1};
  bool operator==(const GpuKernel &other) const {
    return name == other.name && bindings == other.bindings &&
           workgroup == other.workgroup;
  }
};

/// The kernel library compiled for one GPU target (nvptx, amdgpu), for the
/// plan's segments on its devices: every build, and the kernels each holds.
struct GpuCode {
  std::vector<GpuLibrary> libraries;
  std::vector<GpuKernel> kernels;
};

/// The formats a GPU target's libraries may have: "cubin" and "ptx" for
/// nvptx, "hsaco" for amdgpu; empty for any other target.
std::vector<std::string> gpuLibraryFormats(const std::string &target);

/// The model as the cost model planned it over a system's devices: the
/// programs (abi/Program.h, as JSON) of the prefill and of one decode step,
/// which name their devices; the code the x86 target compiled for the CPU
/// segments (its variants and entry points); the plan's units per device.
/// SPIR-V segments dispatch the kernel library of the "spirv" part.
struct PlannedCode {
  /// The system the plan was made for, for messages.
  std::string system;
  std::string prefillSection;
  std::string decodeSection;
  int64_t maxPrefillTokens = 0;
  /// The program of a batch's decode step and the most sequences it takes
  /// (empty and 0 in packs planned before plans decoded batches).
  std::string decodeBatchSection;
  int64_t maxBatch = 0;
  /// The CPU segments' code, by CPU variant (empty when no segment runs on
  /// the CPU), and its entry points with their binding counts.
  std::vector<CodeVariant> cpuVariants;
  std::vector<std::pair<std::string, int>> cpuKernels;
  /// Decoder units (embedding, attention, FFN, output) per device id.
  std::vector<std::pair<std::string, int64_t>> units;
  /// What the plan predicts each device's memories hold, by device id
  /// (none in packs planned before predictions were recorded).
  struct PlannedMemory {
    std::string device;
    uint64_t weightBytes = 0;
    uint64_t kvCacheBytes = 0;
    uint64_t streamBufferBytes = 0;
    /// What the programs compute with there (activations, parameters), at
    /// maxPrefillTokens, as the runner allocates it.
    uint64_t workBytes = 0;
    /// The device's first memory as the plan saw it (--device-memory caps
    /// it): the runtime holds no more there (0: not bounded).
    uint64_t capacityBytes = 0;
  };
  std::vector<PlannedMemory> memory;
  /// The plan's decode step at its context `plannedContext` and with an
  /// empty cache (0: not recorded).
  double decodeSecondsPerStep = 0;
  double emptyCacheDecodeSecondsPerStep = 0;
  int64_t plannedContext = 0;
  /// Blocks of the KV cache's host tier the plan gives (het.kv_tiers; 0:
  /// none, or a pack planned before tiers were).
  int64_t kvHostBlocks = 0;
  /// Whether the plan keeps that tier's blocks as int8 rows (the link is
  /// the bottleneck) rather than exact.
  bool kvTierInt8 = false;
};

/// Bytes of a KV-cache element of `type` ("f32", "f16", "bf16"); 0 for a type
/// no runtime of this version allocates.
inline int64_t kvElementBytesOf(const std::string &type) {
  return type == "f32" ? 4 : type == "f16" || type == "bf16" ? 2 : 0;
}

struct Manifest {
  /// The model file the code binds to (weights are viewed at fixed offsets).
  std::string weightsPath;
  uint64_t weightsSize = 0;
  /// XXH3-64 of the whole model file, as 16 hex digits.
  std::string weightsHash;

  std::string architecture;
  int64_t vocabSize = 0;
  int64_t numLayers = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  /// KV-cache capacity in positions: the longest sequence a session can hold.
  int64_t contextLength = 0;
  /// Slots of a KV block when the code pages its caches (its entry points
  /// take a block table), 0 when a cache's slot is the position.
  int64_t kvBlockSize = 0;
  /// Blocks of each layer's KV pool (paged code only).
  int64_t kvPoolBlocks = 0;
  /// Slots of each layer's KV cache: the pool's, or one per position.
  int64_t kvSlots() const {
    return kvBlockSize > 0 ? kvBlockSize * kvPoolBlocks : contextLength;
  }
  /// Element type of the KV cache: "f32", "bf16", or "f16" (llama.cpp's default,
  /// half the bytes every decode step reads).
  std::string kvElementType = "f32";
  /// Bytes of one KV-cache element (fromJson admits only "f32", "f16" and
  /// "bf16").
  int64_t kvElementBytes() const { return kvElementBytesOf(kvElementType); }

  /// Symbols of the one-pointer entry wrappers; fromJson admits only the
  /// ones the kernel ABI fixes (CodeRecord.h).
  std::string prefillSymbol = kPrefillEntrySymbol;
  std::string decodeSymbol = kDecodeEntrySymbol;

  std::vector<CodeVariant> variants;
  /// Present when the pack also runs on Vulkan devices.
  std::optional<SpirvCode> spirv;
  /// Present when the pack was compiled for a system's plan.
  std::optional<PlannedCode> plan;
  /// Present when the plan runs segments on NVIDIA (nvptx) or AMD (amdgpu)
  /// GPUs.
  std::optional<GpuCode> nvptx;
  std::optional<GpuCode> amdgpu;

  std::string toJson() const;
  /// Parses and validates a manifest; on failure returns nullopt and sets
  /// `error` naming the field and the fix. `origin` names the pack in messages.
  static std::optional<Manifest> fromJson(const std::string &json,
                                          const std::string &origin,
                                          std::string &error);
};

/// XXH3-64 of the file at `path` as 16 hex digits; nullopt (with `error`) when
/// it cannot be read.
std::optional<std::string> hashFile(const std::string &path, std::string &error);

} // namespace hetrt::format

#endif // HETRT_FORMAT_MANIFEST_H
