// Model loading: pack (checksums) → manifest → sizes against memory → code
// (its record against the manifest) → weights (checked against the manifest)
// → tokenizer.
#include "runtime/core/Model.h"

#include "runtime/core/Limits.h"
#include "runtime/format/InputFile.h"

#include <unistd.h>

namespace hetrt::core {

namespace {

/// Io when `path` cannot be opened as a regular file, else InvalidInput: a
/// reader that failed on a file it could open failed on its content.
Failure readFailure(const std::string &path) {
  uint64_t size = 0;
  std::string ignored;
  int fd = format::openRegularFile(path, "a file", size, ignored);
  if (fd < 0)
    return Failure::Io;
  ::close(fd);
  return Failure::InvalidInput;
}

} // namespace

std::unique_ptr<Model> Model::load(const std::string &packPath,
                                   const std::string &weightsPath,
                                   std::string &error) {
  Failure failure;
  return load(packPath, weightsPath, error, failure);
}

std::unique_ptr<Model> Model::load(const std::string &packPath,
                                   const std::string &weightsPath,
                                   std::string &error, Failure &failure) {
  failure = Failure::InvalidInput;
  std::unique_ptr<Model> model(new Model());
  model->pack_ = format::PackFile::open(packPath, error);
  if (!model->pack_) {
    failure = readFailure(packPath);
    return nullptr;
  }
  const std::string_view *manifestText =
      model->pack_->section("manifest.json");
  if (!manifestText) {
    error = packPath + ": the pack has no manifest.json section (recompile it "
                       "with `hetc compile`)";
    return nullptr;
  }
  std::optional<format::Manifest> manifest = format::Manifest::fromJson(
      std::string(*manifestText), packPath, error);
  if (!manifest)
    return nullptr;
  model->manifest_ = std::move(*manifest);
  const format::Manifest &m = model->manifest_;
  // Sizes first, then the code's own record of them, and only then anything
  // that reads the weights: a manifest is untrusted until both agree.
  if (!checkKvCacheFits(m.numLayers, m.kvSlots(), m.numKvHeads, m.headDim,
                        m.kvElementBytes(), packPath,
                        "compile the model for a smaller context with "
                        "`hetc compile --context N`",
                        error)) {
    failure = Failure::OutOfMemory;
    return nullptr;
  }
  model->code_ = cpu::CpuCode::load(*model->pack_, m, error, failure);
  if (!model->code_)
    return nullptr;

  std::string weights = weightsPath.empty() ? m.weightsPath : weightsPath;
  failure = Failure::InvalidInput;
  model->weights_ = format::GgufFile::open(weights, error);
  if (!model->weights_) {
    failure = readFailure(weights);
    if (weightsPath.empty())
      error += " (" + packPath +
               " was compiled from it and reads its weights there: put the "
               "model back, or compile the pack again from where it is now)";
    return nullptr;
  }
  // The code views weights at fixed offsets: any other file would be read as
  // garbage, so the exact bytes are required.
  if (model->weights_->fileSize() != m.weightsSize) {
    error = weights + ": is " + std::to_string(model->weights_->fileSize()) +
            " bytes but " + packPath + " was compiled for a " +
            std::to_string(m.weightsSize) +
            "-byte model file; recompile the pack for this model";
    return nullptr;
  }
  std::optional<std::string> hash = format::hashFile(weights, error);
  if (!hash) {
    failure = Failure::Io;
    return nullptr;
  }
  if (*hash != m.weightsHash) {
    error = weights + ": content hash " + *hash + " differs from the " +
            m.weightsHash + " that " + packPath +
            " was compiled for; recompile the pack for this model";
    return nullptr;
  }
  model->cpuWeights_ = cpu::CpuWeights::prepare(
      *model->weights_, model->code_->weightLayouts(),
      packPath + ": the code of variant \"" + model->code_->variantName() +
          "\"",
      error);
  if (!model->cpuWeights_)
    return nullptr;
  model->tokenizer_ = tokenizer::Tokenizer::fromGguf(*model->weights_, error);
  if (!model->tokenizer_)
    return nullptr;
  if (model->tokenizer_->vocabSize() != m.vocabSize) {
    error = weights + ": the tokenizer has " +
            std::to_string(model->tokenizer_->vocabSize()) +
            " tokens but the model's output has " +
            std::to_string(m.vocabSize) +
            " (tokenizer.ggml.tokens against token_embd.weight); re-convert "
            "the model with its own tokenizer";
    return nullptr;
  }
  return model;
}

} // namespace hetrt::core
