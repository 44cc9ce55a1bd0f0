#include "runtime/core/KvBlocks.h"

#include <cassert>

namespace hetrt::core {

KvBlockPool::KvBlockPool(int32_t blocks)
    : references_(static_cast<size_t>(blocks), 0) {
  free_.reserve(static_cast<size_t>(blocks));
  for (int32_t block = blocks - 1; block >= 0; --block)
    free_.push_back(block);
}

std::optional<int32_t> KvBlockPool::allocate() {
  if (free_.empty())
    return std::nullopt;
  int32_t block = free_.back();
  free_.pop_back();
  references_[static_cast<size_t>(block)] = 1;
  return block;
}

void KvBlockPool::retain(int32_t block) {
  assert(references_[static_cast<size_t>(block)] > 0 && "retain of a free block");
  ++references_[static_cast<size_t>(block)];
}

void KvBlockPool::release(int32_t block) {
  int32_t &references = references_[static_cast<size_t>(block)];
  assert(references > 0 && "release of a free block");
  if (--references == 0)
    free_.push_back(block);
}

} // namespace hetrt::core
