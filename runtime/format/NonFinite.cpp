// Non-finite checks by exponent bits: all ones is an infinity or a NaN in
// every IEEE format, so no value needs converting.
#include "runtime/format/NonFinite.h"

#include "abi/TensorNames.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace hetrt::format {

namespace {

uint16_t loadU16(const uint8_t *bytes) {
  uint16_t value;
  std::memcpy(&value, bytes, 2);
  return value;
}

bool f16NonFinite(uint16_t bits) { return (bits & 0x7C00) == 0x7C00; }

/// Forward order of a tensor: the embedding first, layers by index, the rest
/// after the last layer.
int64_t forwardLayer(const std::string &name) {
  std::optional<TensorName> parsed = parseTensorName(name);
  if (parsed && parsed->role == TensorRole::Embedding)
    return -1;
  if (!parsed || parsed->layer < 0)
    return std::numeric_limits<int64_t>::max();
  return parsed->layer;
}

} // namespace

uint64_t countNonFinite(const GgufFile &file, const GgufTensorInfo &tensor) {
  const uint8_t *data = file.tensorData(tensor);
  uint64_t size = tensor.sizeBytes;
  uint64_t count = 0;
  // The scale fields of each block format (ggml's layouts, BlockFormats.h).
  auto blockScales = [&](uint64_t blockBytes, std::initializer_list<int> at) {
    for (uint64_t block = 0; block + blockBytes <= size; block += blockBytes)
      for (int offset : at)
        count += f16NonFinite(loadU16(data + block + offset));
  };
  switch (tensor.format) {
  case BlockFormat::F32:
    for (uint64_t i = 0; i + 4 <= size; i += 4) {
      uint32_t bits;
      std::memcpy(&bits, data + i, 4);
      count += (bits & 0x7F800000u) == 0x7F800000u;
    }
    break;
  case BlockFormat::F16:
    for (uint64_t i = 0; i + 2 <= size; i += 2)
      count += f16NonFinite(loadU16(data + i));
    break;
  case BlockFormat::BF16:
    for (uint64_t i = 0; i + 2 <= size; i += 2)
      count += (loadU16(data + i) & 0x7F80) == 0x7F80;
    break;
  case BlockFormat::Q8_0:
    blockScales(34, {0});
    break;
  case BlockFormat::Q4_0:
    blockScales(18, {0});
    break;
  case BlockFormat::Q2_K:
    blockScales(84, {80, 82});
    break;
  case BlockFormat::Q3_K:
    blockScales(110, {108});
    break;
  case BlockFormat::Q4_K:
    blockScales(144, {0, 2});
    break;
  case BlockFormat::Q5_K:
    blockScales(176, {0, 2});
    break;
  case BlockFormat::Q6_K:
    blockScales(210, {208});
    break;
  }
  return count;
}

std::optional<NonFiniteTensor> firstNonFiniteTensor(const GgufFile &file) {
  std::vector<const GgufTensorInfo *> order;
  for (const GgufTensorInfo &tensor : file.tensors())
    order.push_back(&tensor);
  std::stable_sort(order.begin(), order.end(),
                   [](const GgufTensorInfo *a, const GgufTensorInfo *b) {
                     return forwardLayer(a->name) < forwardLayer(b->name);
                   });
  for (const GgufTensorInfo *tensor : order)
    if (uint64_t count = countNonFinite(file, *tensor))
      return NonFiniteTensor{tensor->name, forwardLayer(tensor->name), count};
  return std::nullopt;
}

bool allFinite(const float *values, int64_t count) {
  // An OR over exponent tests: no branch per value, so it vectorizes.
  uint32_t nonFinite = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, values + i, 4);
    nonFinite |= (bits & 0x7F800000u) == 0x7F800000u;
  }
  return nonFinite == 0;
}

} // namespace hetrt::format
