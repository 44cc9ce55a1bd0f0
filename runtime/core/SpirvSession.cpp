#include "runtime/core/SpirvSession.h"

#include "runtime/format/ProgramJson.h"

#include <algorithm>

namespace hetrt::core {

std::unique_ptr<SpirvSession> SpirvSession::create(const Model &model,
                                                   hal::Device &device,
                                                   std::string &error) {
  const format::Manifest &manifest = model.manifest();
  const format::PackFile &pack = model.pack();
  if (!manifest.spirv) {
    error = pack.path() + ": the pack holds no SPIR-V programs for " +
            device.info().name +
            "; compile it with `hetc compile --spirv` (hetc run MODEL.gguf "
            "--device " + device.info().name + " does so itself)";
    return nullptr;
  }
  const format::SpirvCode &code = *manifest.spirv;
  auto sectionOf = [&](const std::string &name) -> const std::string_view * {
    const std::string_view *bytes = pack.section(name);
    if (!bytes)
      error = pack.path() + ": the manifest names section \"" + name +
              "\", which the pack does not hold (compile the model again "
              "with `hetc compile --spirv`)";
    return bytes;
  };
  const std::string_view *binary = sectionOf(code.section);
  const std::string_view *prefillText = sectionOf(code.prefillSection);
  const std::string_view *decodeText = sectionOf(code.decodeSection);
  if (!binary || !prefillText || !decodeText)
    return nullptr;
  std::optional<hetc::abi::Program> prefill = format::programFromJson(
      std::string(*prefillText), pack.path() + ": " + code.prefillSection,
      error);
  if (!prefill)
    return nullptr;
  std::optional<hetc::abi::Program> decode = format::programFromJson(
      std::string(*decodeText), pack.path() + ": " + code.decodeSection, error);
  if (!decode)
    return nullptr;
  std::vector<hal::KernelSignature> signatures;
  for (const auto &[name, bindings] : code.kernels)
    signatures.push_back({name, bindings, 0});
  if (!device.runs(hal::ExecutableFormat::SpirV)) {
    error = device.info().name + " does not run SPIR-V; give --device a "
            "Vulkan device (hetrt-run --list-devices lists them)";
    return nullptr;
  }
  std::unique_ptr<SpirvSession> session(new SpirvSession());
  session->context_ = manifest.contextLength;
  session->maxPrefillTokens_ = code.maxPrefillTokens;
  session->deviceName_ = device.info().name;
  hal::Error halError;
  session->runner_ = ProgramRunner::create(
      device, hal::ExecutableFormat::SpirV, std::string(*binary), signatures,
      {{std::move(*prefill), code.maxPrefillTokens}, {std::move(*decode), 1}},
      model.weights(), halError);
  if (!session->runner_) {
    error = pack.path() + " on " + device.info().name + ": " +
            halError.message;
    return nullptr;
  }
  if (session->runner_->vocab() != manifest.vocabSize) {
    error = pack.path() + ": the SPIR-V programs compute " +
            std::to_string(session->runner_->vocab()) +
            " logits, but the model has " +
            std::to_string(manifest.vocabSize) +
            " tokens (compile the model again with `hetc compile --spirv`)";
    return nullptr;
  }
  session->logits_.assign(manifest.vocabSize, 0.0f);
  return session;
}

bool SpirvSession::step(size_t program, const int32_t *tokens, int64_t count,
                        std::string &error) {
  if (position_ + count > context_) {
    error = "the context holds " + std::to_string(context_) +
            " tokens; this step would pass it";
    return false;
  }
  hal::Error halError;
  if (!runner_->run(program, tokens, count, position_, logits_.data(),
                    halError)) {
    error = deviceName_ + ": " + halError.message;
    return false;
  }
  position_ += count;
  return true;
}

bool SpirvSession::prefill(const std::vector<int32_t> &tokens,
                           std::string &error) {
  for (size_t done = 0; done < tokens.size();) {
    int64_t count = std::min<int64_t>(maxPrefillTokens_,
                                      static_cast<int64_t>(tokens.size() - done));
    if (!step(0, tokens.data() + done, count, error))
      return false;
    done += static_cast<size_t>(count);
  }
  return true;
}

bool SpirvSession::decode(int32_t token, std::string &error) {
  return step(1, &token, 1, error);
}

} // namespace hetrt::core
