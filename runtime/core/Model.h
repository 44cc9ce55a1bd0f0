// A loaded model: its pack's manifest and code, the memory-mapped weights and
// the tokenizer. Immutable after loading and shared by its sessions.
#ifndef HETRT_CORE_MODEL_H
#define HETRT_CORE_MODEL_H

#include "runtime/backends/cpu/CpuCode.h"
#include "runtime/backends/cpu/CpuWeights.h"
#include "runtime/core/Failure.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/Pack.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <memory>
#include <string>

namespace hetrt::core {

class Model {
public:
  /// Loads `packPath` with the weights at `weightsPath` (empty: the path the
  /// pack was compiled from). The weights must be the exact file the code was
  /// compiled for (size and XXH3 hash). On failure returns null and sets
  /// `error` naming the file, the field and the fix.
  static std::unique_ptr<Model> load(const std::string &packPath,
                                     const std::string &weightsPath,
                                     std::string &error);
  /// As above, and sets `failure` to the kind of the failure.
  static std::unique_ptr<Model> load(const std::string &packPath,
                                     const std::string &weightsPath,
                                     std::string &error, Failure &failure);

  const format::Manifest &manifest() const { return manifest_; }
  const format::GgufFile &weights() const { return *weights_; }
  const tokenizer::Tokenizer &tokenizer() const { return *tokenizer_; }
  const cpu::CpuCode &code() const { return *code_; }
  /// The weights as the loaded code variant reads them.
  const cpu::CpuWeights &cpuWeights() const { return *cpuWeights_; }
  /// The pack's sections (its other targets' code and programs).
  const format::PackFile &pack() const { return *pack_; }

private:
  Model() = default;
  std::unique_ptr<format::PackFile> pack_;
  format::Manifest manifest_;
  std::unique_ptr<format::GgufFile> weights_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<cpu::CpuCode> code_;
  std::unique_ptr<cpu::CpuWeights> cpuWeights_;
};

} // namespace hetrt::core

#endif // HETRT_CORE_MODEL_H
