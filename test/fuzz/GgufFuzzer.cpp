// libFuzzer target for everything the runtime derives from an untrusted model
// file: the GGUF reader, the model config and the tokenizer built from its
// metadata. Any crash, out-of-bounds access (ASan) or undefined behaviour
// (UBSan) is a bug; errors are the expected outcome for most inputs.
#include "runtime/format/Gguf.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string error;
  std::unique_ptr<hetrt::format::GgufFile> file =
      hetrt::format::GgufFile::openBuffer(
          std::string_view(reinterpret_cast<const char *>(data), size),
          "fuzz.gguf", error);
  if (!file)
    return 0;
  // Touch every parsed structure and every tensor's first and last byte: the
  // reader promised they lie inside the image.
  size_t checksum = 0;
  for (const auto &[key, value] : file->metadata())
    checksum += key.size() + value.elements().size();
  for (const hetrt::format::GgufTensorInfo &tensor : file->tensors()) {
    const uint8_t *bytes = file->tensorData(tensor);
    if (tensor.sizeBytes > 0)
      checksum += bytes[0] + bytes[tensor.sizeBytes - 1];
  }
  (void)hetrt::format::ModelConfig::fromGguf(*file, error);
  std::unique_ptr<hetrt::tokenizer::Tokenizer> tokenizer =
      hetrt::tokenizer::Tokenizer::fromGguf(*file, error);
  if (tokenizer) {
    std::vector<int32_t> ids =
        tokenizer->encode("Once upon a time, \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80", true);
    checksum += tokenizer->decode(ids).size();
  }
  return checksum == 0xdeadbeef ? 1 : 0;
}
