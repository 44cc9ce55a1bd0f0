#include "runtime/core/MemorySpaces.h"

#include <algorithm>
#include <mutex>

namespace hetrt::core {

struct MemoryManager::State {
  mutable std::mutex mutex;
  std::vector<MemorySpaceStats> spaces;

  size_t find(const std::string &name, const std::string &device,
              uint64_t capacity) {
    for (size_t i = 0; i < spaces.size(); ++i)
      if (spaces[i].name == name)
        return i;
    MemorySpaceStats space;
    space.name = name;
    space.device = device;
    space.capacityBytes = capacity;
    spaces.push_back(std::move(space));
    return spaces.size() - 1;
  }
  void charge(size_t space, MemoryRole role, uint64_t bytes) {
    MemorySpaceStats &stats = spaces[space];
    stats.heldBytes[static_cast<size_t>(role)] += bytes;
    stats.peakBytes = std::max(stats.peakBytes, stats.held());
  }
};

MemoryManager::MemoryManager() : state_(std::make_shared<State>()) {}

size_t MemoryManager::spaceOf(const hal::Device &device, int memory) {
  const hal::DeviceInfo &info = device.info();
  const hal::MemorySpaceInfo &space = info.memories.at(memory);
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->find(info.name + "." + space.name, info.name,
                      space.capacityBytes);
}

size_t MemoryManager::namedSpace(const std::string &name,
                                 uint64_t capacityBytes) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->find(name, "", capacityBytes);
}

bool MemoryManager::setBudget(size_t space, uint64_t bytes,
                              const std::string &source, hal::Error &error) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  MemorySpaceStats &stats = state_->spaces.at(space);
  if (stats.held() > bytes) {
    error = {Failure::OutOfMemory,
             stats.name + " already holds " + std::to_string(stats.held()) +
                 " bytes, past the budget of " + std::to_string(bytes) +
                 " bytes " + source + " sets"};
    return false;
  }
  stats.budgetBytes = bytes;
  stats.budgetSource = source;
  return true;
}

std::shared_ptr<hal::Buffer>
MemoryManager::allocate(hal::Device &device, int memory, uint64_t bytes,
                        MemoryRole role, const std::string &what,
                        hal::Error &error) {
  size_t space = spaceOf(device, memory);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    MemorySpaceStats &stats = state_->spaces[space];
    if (stats.budgetBytes > 0 && stats.held() + bytes > stats.budgetBytes) {
      error = {Failure::OutOfMemory,
               what + " (" + std::to_string(bytes) + " bytes) would take " +
                   stats.name + " to " + std::to_string(stats.held() + bytes) +
                   " bytes, past the budget of " +
                   std::to_string(stats.budgetBytes) + " bytes " +
                   stats.budgetSource + " sets; give the device more memory "
                   "(--device-memory) or plan for a shorter context"};
      return nullptr;
    }
    // Charged before the device allocates, so two threads cannot both pass
    // the check with the last bytes.
    state_->charge(space, role, bytes);
  }
  std::shared_ptr<hal::Buffer> buffer = device.allocate(memory, bytes, error);
  std::shared_ptr<State> state = state_;
  auto release = [state, space, role, bytes] {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->spaces[space].heldBytes[static_cast<size_t>(role)] -= bytes;
  };
  if (!buffer) {
    release();
    return nullptr;
  }
  // The returned owner shares the buffer's lifetime and gives its bytes
  // back when the last owner drops it.
  hal::Buffer *raw = buffer.get();
  return std::shared_ptr<hal::Buffer>(
      raw, [buffer = std::move(buffer), release](hal::Buffer *) mutable {
        buffer.reset();
        release();
      });
}

void MemoryManager::recordMigration(size_t from, size_t to, uint64_t count,
                                    uint64_t bytes, uint64_t waitNanoseconds) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  MemorySpaceStats &source = state_->spaces.at(from);
  source.migrationsOut += count;
  source.bytesOut += bytes;
  MemorySpaceStats &target = state_->spaces.at(to);
  target.migrationsIn += count;
  target.bytesIn += bytes;
  target.waitNanoseconds += waitNanoseconds;
}

std::vector<MemorySpaceStats> MemoryManager::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->spaces;
}

} // namespace hetrt::core
