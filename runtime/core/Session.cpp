// Calls into generated code with MLIR memref descriptors: {allocated, aligned,
// offset, sizes[rank], strides[rank]}, in the argument order the compiler's
// entry points take (weights, tokens, positions, caches..., logits), followed
// by the runtime interface the kernels dispatch through.
#include "runtime/core/Session.h"

#include "runtime/core/Limits.h"
#include "runtime/format/NonFinite.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include <system_error>

#include <chrono>

namespace hetrt::core {

namespace {
constexpr size_t kCacheAlignment = 64;
std::string defaultSwapDirectory() {
  const char *tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

template <int Rank> struct MemRefDescriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};

template <int Rank>
MemRefDescriptor<Rank> describe(const void *data, const int64_t (&sizes)[Rank]) {
  MemRefDescriptor<Rank> descriptor;
  descriptor.allocated = const_cast<void *>(data);
  descriptor.aligned = const_cast<void *>(data);
  descriptor.offset = 0;
  int64_t stride = 1;
  for (int i = Rank - 1; i >= 0; --i) {
    descriptor.sizes[i] = sizes[i];
    descriptor.strides[i] = stride;
    stride *= sizes[i];
  }
  return descriptor;
}
} // namespace

void Session::CacheDeleter::operator()(std::byte *data) const {
  ::operator delete[](data, std::align_val_t(kCacheAlignment));
}

Session::Session(const Model &model, int numThreads)
    : model_(model), pool_(numThreads),
      runtimeInterface_(makeRuntimeInterface(pool_)),
      blocks_(static_cast<int32_t>(model.manifest().kvPoolBlocks)),
      blockSize_(model.manifest().kvBlockSize) {
  const format::Manifest &m = model.manifest();
  sequences_[kDefaultSequence] = KvSequence();
  // Session::create checked that this product fits.
  size_t cacheBytes = static_cast<size_t>(*kvCacheBytes(
      1, m.kvSlots(), m.numKvHeads, m.headDim, m.kvElementBytes()));
  for (int64_t layer = 0; layer < m.numLayers; ++layer) {
    caches_.emplace_back(static_cast<std::byte *>(
        ::operator new[](cacheBytes, std::align_val_t(kCacheAlignment))));
    std::memset(caches_.back().get(), 0, cacheBytes);
  }
  logits_.assign(static_cast<size_t>(m.vocabSize), 0.0f);
  blockBuffer_.resize(blockBytes());
  swapDirectory_ = defaultSwapDirectory();
  resetTiers();
}

void Session::resetTiers() {
  const format::Manifest &m = model_.manifest();
  KvBlockRows rows{static_cast<size_t>(m.headDim),
                   static_cast<size_t>(m.kvElementBytes())};
  swap_ = std::make_unique<KvSwapSpace>(blockBytes(), hostBudget_,
                                        diskBudget_, swapDirectory_,
                                        tierFormat_, rows);
}

bool Session::anyBlockMovedOut() const {
  for (const auto &[id, sequence] : sequences_)
    for (int32_t block : sequence.table)
      if (block < 0)
        return true;
  return false;
}

bool Session::setKvTierFormat(KvTierFormat format, std::string &error) {
  if (anyBlockMovedOut()) {
    error = "the KV tiers hold blocks already; choose their format before "
            "the first run";
    return false;
  }
  tierFormat_ = format;
  resetTiers();
  return true;
}

std::unique_ptr<Session> Session::create(const Model &model,
                                         int64_t numThreads,
                                         std::string &error) {
  Failure failure;
  return create(model, numThreads, error, failure);
}

std::unique_ptr<Session> Session::create(const Model &model,
                                         int64_t numThreads,
                                         std::string &error,
                                         Failure &failure) {
  const format::Manifest &m = model.manifest();
  failure = Failure::InvalidInput;
  if (!checkThreadCount(numThreads, "the thread count", error))
    return nullptr;
  // The manifest and the code's record agree (Model::load checked it).
  if (m.kvBlockSize <= 0) {
    error = "cannot create a session: the pack's code keeps one KV cache "
            "slot per position instead of paging it; compile the model again "
            "with `hetc compile`";
    return nullptr;
  }
  failure = Failure::OutOfMemory;
  // Checked again at creation: memory that was free when the model loaded
  // may be taken by now, and an allocation that fails half-way must not
  // abort the process.
  if (!checkKvCacheFits(m.numLayers, m.kvSlots(), m.numKvHeads, m.headDim,
                        m.kvElementBytes(), "cannot create a session",
                        "free memory, or compile the model for a smaller "
                        "context with `hetc compile --context N`",
                        error))
    return nullptr;
  try {
    return std::unique_ptr<Session>(
        new Session(model, static_cast<int>(numThreads)));
  } catch (const std::bad_alloc &) {
    error = "cannot create a session: out of memory allocating its " +
            formatBytes(*kvCacheBytes(m.numLayers, m.kvSlots(),
                                      m.numKvHeads, m.headDim,
                                      m.kvElementBytes())) +
            " KV cache; free memory or compile for a smaller context";
  } catch (const std::system_error &threadFailure) {
    error = "cannot create a session: cannot start " +
            std::to_string(numThreads) + " threads (" + threadFailure.what() +
            "); give fewer with --threads";
    failure = Failure::Unavailable;
  }
  return nullptr;
}

bool Session::prefill(SequenceId sequence, const std::vector<int32_t> &ids,
                      std::string &error) {
  if (ids.empty()) {
    error = "prefill needs at least one token";
    return false;
  }
  int64_t count = static_cast<int64_t>(ids.size());
  KvSequence *checked = checkRun(sequence, ids.data(), count, error);
  if (!checked)
    return false;
  size_t blocksBefore = checked->table.size();
  int64_t reused = reusePrefix(*checked, ids.data(), count);
  int64_t lengthAfterReuse = checked->length();
  pool_.setParallel(true);
  if (run(sequence, model_.code().prefill(), ids.data() + reused,
          count - reused, error)) {
    reusedTokens_ += reused;
    return true;
  }
  // Nothing ran: the reused blocks are given back, so a failed call
  // changes nothing.
  if (checked->length() == lengthAfterReuse && reused > 0) {
    for (size_t i = blocksBefore; i < checked->table.size(); ++i)
      blocks_.release(checked->table[i]);
    checked->table.resize(blocksBefore);
    checked->tokens.resize(checked->tokens.size() -
                           static_cast<size_t>(reused));
    checked->hashes.resize(checked->tokens.size() /
                           static_cast<size_t>(blockSize_));
  }
  return false;
}

Session::SequenceId Session::createSequence() {
  SequenceId id = nextSequence_++;
  sequences_[id] = KvSequence();
  return id;
}

bool Session::forkSequence(SequenceId from, int64_t tokens,
                           SequenceId &forked, std::string &error) {
  auto source = sequences_.find(from);
  if (source == sequences_.end()) {
    error = "cannot fork sequence " + std::to_string(from) +
            ": there is no such sequence";
    return false;
  }
  if (tokens < 0 || tokens > source->second.length()) {
    error = "cannot fork the first " + std::to_string(tokens) +
            " positions of sequence " + std::to_string(from) + ": it holds " +
            std::to_string(source->second.length());
    return false;
  }
  // Blocks are shared by their place in the pool.
  if (!makeResident(from, source->second, error))
    return false;
  const KvSequence &original = source->second;
  KvSequence copy;
  size_t shared = static_cast<size_t>((tokens + blockSize_ - 1) / blockSize_);
  copy.table.assign(original.table.begin(),
                    original.table.begin() + static_cast<long>(shared));
  copy.tokens.assign(original.tokens.begin(),
                     original.tokens.begin() + static_cast<long>(tokens));
  copy.hashes.assign(original.hashes.begin(),
                     original.hashes.begin() +
                         static_cast<long>(tokens / blockSize_));
  copy.swapped.resize(copy.table.size());
  for (int32_t block : copy.table)
    blocks_.retain(block);
  forked = nextSequence_++;
  sequences_[forked] = std::move(copy);
  return true;
}

bool Session::removeSequence(SequenceId sequence, std::string &error) {
  auto found = sequences_.find(sequence);
  if (found == sequences_.end()) {
    error = "cannot remove sequence " + std::to_string(sequence) +
            ": there is no such sequence";
    return false;
  }
  KvSequence &removed = found->second;
  for (size_t i = 0; i < removed.table.size(); ++i) {
    if (removed.table[i] >= 0)
      blocks_.release(removed.table[i]);
    else
      swap_->discard(*removed.swapped[i]);
  }
  sequences_.erase(found);
  return true;
}

void Session::reset() {
  std::string ignored;
  if (hasSequence(kDefaultSequence))
    removeSequence(kDefaultSequence, ignored);
  sequences_[kDefaultSequence] = KvSequence();
}

int64_t Session::position(SequenceId sequence) const {
  auto found = sequences_.find(sequence);
  return found == sequences_.end() ? 0 : found->second.length();
}

KvUsage Session::kvUsage() const {
  KvUsage usage;
  usage.blockSize = blockSize_;
  usage.blocks = blocks_.blocks();
  usage.freeBlocks = blocks_.freeBlocks();
  for (int32_t block = 0; block < blocks_.blocks(); ++block)
    usage.sharedBlocks += blocks_.references(block) > 1;
  usage.copiedBlocks = copiedBlocks_;
  usage.cachedBlocks = blocks_.publishedBlocks();
  usage.evictedBlocks = blocks_.evictions();
  usage.reusedTokens = reusedTokens_;
  usage.blockBytes = static_cast<int64_t>(blockBytes());
  usage.swaps = swap_->stats();
  return usage;
}

size_t Session::blockBytes() const {
  const format::Manifest &m = model_.manifest();
  return static_cast<size_t>(m.numLayers * 2 * m.numKvHeads * blockSize_ *
                             m.headDim * m.kvElementBytes());
}

size_t Session::blockRuns() const {
  const format::Manifest &m = model_.manifest();
  return static_cast<size_t>(m.numLayers * 2 * m.numKvHeads);
}

std::byte *Session::blockRun(int32_t block, size_t run) const {
  // Each cache is [2, kvHeads, slots, headDim]: a block is one run of its
  // rows per (layer, keys or values, head).
  const format::Manifest &m = model_.manifest();
  size_t perLayer = 2 * static_cast<size_t>(m.numKvHeads);
  size_t rowBytes = static_cast<size_t>(m.headDim * m.kvElementBytes());
  size_t slots = static_cast<size_t>(m.kvSlots());
  return caches_[run / perLayer].get() +
         (run % perLayer) * slots * rowBytes +
         static_cast<size_t>(block) * blockBytes() / blockRuns();
}

void Session::copyBlock(int32_t from, int32_t to) {
  gatherBlock(from, blockBuffer_.data());
  scatterBlock(blockBuffer_.data(), to);
}

void Session::gatherBlock(int32_t block, std::byte *out) const {
  size_t runBytes = blockBytes() / blockRuns();
  for (size_t run = 0; run < blockRuns(); ++run)
    std::memcpy(out + run * runBytes, blockRun(block, run), runBytes);
}

void Session::scatterBlock(const std::byte *in, int32_t block) {
  size_t runBytes = blockBytes() / blockRuns();
  for (size_t run = 0; run < blockRuns(); ++run)
    std::memcpy(blockRun(block, run), in + run * runBytes, runBytes);
}

int64_t Session::blocksToWrite(const KvSequence &sequence,
                               int64_t count) const {
  int64_t first = sequence.length() / blockSize_;
  int64_t last = (sequence.length() + count - 1) / blockSize_;
  int64_t needed = 0;
  for (int64_t index = first; index <= last; ++index) {
    if (index >= static_cast<int64_t>(sequence.table.size())) {
      ++needed;
      continue;
    }
    // A moved-out block comes back unshared; a shared one is copied.
    int32_t block = sequence.table[static_cast<size_t>(index)];
    needed += block >= 0 && blocks_.references(block) > 1;
  }
  return needed;
}

int64_t Session::movableBlocks(SequenceId running) const {
  int64_t movable = 0;
  for (const auto &[id, sequence] : sequences_)
    if (id != running && !inBatch(id))
      for (int32_t block : sequence.table)
        movable += block >= 0 && blocks_.references(block) == 1;
  return std::min(movable, swap_->room());
}

std::optional<int32_t> Session::allocateBlock(SequenceId running,
                                              std::string &error) {
  if (std::optional<int32_t> block = blocks_.allocate())
    return block;
  // The sequence that ran longest ago gives up its last block that no
  // other sequence holds: the one it will read last when it runs again.
  KvSequence *victim = nullptr;
  size_t victimIndex = 0;
  for (auto &[id, sequence] : sequences_) {
    if (id == running || inBatch(id) ||
        (victim && victim->lastRun <= sequence.lastRun))
      continue;
    for (size_t i = sequence.table.size(); i-- > 0;)
      if (sequence.table[i] >= 0 &&
          blocks_.references(sequence.table[i]) == 1) {
        victim = &sequence;
        victimIndex = i;
        break;
      }
  }
  if (!victim) {
    failure_ = Failure::OutOfMemory;
    error = "the KV pool is full: every block of its " +
            std::to_string(blocks_.blocks()) +
            " is held by the running sequence or shared; remove sequences, "
            "or compile with a larger --context";
    return std::nullopt;
  }
  int32_t block = victim->table[victimIndex];
  gatherBlock(block, blockBuffer_.data());
  std::optional<KvSwapSpace::Handle> handle =
      swap_->store(blockBuffer_.data(), error);
  if (!handle) {
    failure_ = swap_->failure();
    return std::nullopt;
  }
  // Its bytes now live in a tier: the prefix cache can no longer point at
  // the pool's block.
  blocks_.unpublish(block);
  blocks_.release(block);
  victim->table[victimIndex] = -1;
  victim->swapped[victimIndex] = handle;
  return blocks_.allocate();
}

bool Session::makeResident(SequenceId id, KvSequence &sequence,
                           std::string &error) {
  for (size_t i = 0; i < sequence.table.size(); ++i) {
    if (sequence.table[i] >= 0)
      continue;
    std::optional<int32_t> block = allocateBlock(id, error);
    if (!block)
      return false;
    if (!swap_->load(*sequence.swapped[i], blockBuffer_.data(), error)) {
      failure_ = swap_->failure();
      blocks_.release(*block);
      return false;
    }
    scatterBlock(blockBuffer_.data(), *block);
    sequence.table[i] = *block;
    sequence.swapped[i].reset();
  }
  return true;
}

bool Session::setKvBudget(const std::string &space, uint64_t bytes,
                          std::string &error, const std::string &directory) {
  int64_t blocks = static_cast<int64_t>(
      std::min<uint64_t>(bytes / blockBytes(), INT64_MAX / 4));
  bool anyBlockUsed = blocks_.freeBlocks() != blocks_.blocks();
  bool anySwapped = anyBlockMovedOut();
  if (space == "pool") {
    int64_t compiled = model_.manifest().kvPoolBlocks;
    if (blocks < 1 || blocks > compiled) {
      error = "--kv-budget pool=" + std::to_string(bytes) + ": the pool holds " +
              std::to_string(compiled) + " blocks of " +
              std::to_string(blockBytes()) +
              " bytes; give between one block and all of them";
      return false;
    }
    if (anyBlockUsed || anySwapped) {
      error = "--kv-budget pool: the pool is in use; set its budget before "
              "the first run";
      return false;
    }
    blocks_ = KvBlockPool(static_cast<int32_t>(blocks));
    return true;
  }
  if (space != "host" && space != "disk") {
    error = "--kv-budget " + space +
            ": the KV cache's memories are pool, host and disk";
    return false;
  }
  if (anySwapped) {
    error = "--kv-budget " + space +
            ": blocks are moved out already; set the tiers' budgets before "
            "the first run";
    return false;
  }
  int64_t host = space == "host" ? blocks : hostBudget_;
  int64_t disk = space == "disk" ? blocks : diskBudget_;
  hostBudget_ = host;
  diskBudget_ = disk;
  if (!directory.empty())
    swapDirectory_ = directory;
  resetTiers();
  return true;
}

bool Session::prepareBlocks(SequenceId id, KvSequence &sequence,
                            int64_t count, std::string &error) {
  int64_t first = sequence.length() / blockSize_;
  int64_t last = (sequence.length() + count - 1) / blockSize_;
  int64_t needed = blocksToWrite(sequence, count);
  // Other sequences' blocks are counted only when the free ones fall short.
  int64_t available = blocks_.freeBlocks();
  if (needed > available)
    available += movableBlocks(id);
  if (needed > available) {
    failure_ = Failure::OutOfMemory;
    error = "the KV pool is full: " + std::to_string(count) +
            (count == 1 ? " more token needs " : " more tokens need ") +
            std::to_string(needed) + (needed == 1 ? " block of " : " blocks of ") +
            std::to_string(blockSize_) + " positions and " +
            std::to_string(available) + " of " +
            std::to_string(blocks_.blocks()) +
            " are free or can move to another memory; remove sequences, "
            "or compile with a larger --context";
    return false;
  }
  for (int64_t index = first; index <= last; ++index) {
    if (index >= static_cast<int64_t>(sequence.table.size())) {
      std::optional<int32_t> block = allocateBlock(id, error);
      if (!block)
        return false;
      sequence.table.push_back(*block);
      sequence.swapped.emplace_back();
      continue;
    }
    int32_t &block = sequence.table[static_cast<size_t>(index)];
    if (blocks_.references(block) == 1) {
      // Written in place: what the cache found under its hash changes.
      blocks_.unpublish(block);
      continue;
    }
    std::optional<int32_t> copy = allocateBlock(id, error);
    if (!copy)
      return false;
    copyBlock(block, *copy);
    blocks_.release(block);
    block = *copy;
    ++copiedBlocks_;
  }
  return true;
}

namespace {
/// Steps per window of the decode thread choice, and steps timed each way
/// at its start (after one that warms the caches).
constexpr int64_t kChoiceWindow = 256;
constexpr int64_t kTimedSteps = 3;
} // namespace

bool Session::decode(SequenceId sequence, int32_t id, std::string &error) {
  // A step of a tiny model is dozens of microsecond kernels, and on a busy
  // machine a worker may be descheduled: waking the other threads can then
  // cost more than they add. Which is faster is measured, not guessed, and
  // measured again every window, since the load of the machine changes.
  if (!choiceEnabled_ || pool_.numThreads() == 1)
    return run(sequence, model_.code().decode(), &id, 1, error);
  int64_t phase = choiceStep_ % kChoiceWindow;
  bool timedParallel = phase >= 1 && phase <= kTimedSteps;
  bool timedSerial = phase > kTimedSteps && phase <= 2 * kTimedSteps;
  if (phase == 0)
    parallelSeconds_ = serialSeconds_ = 0;
  if (phase == 2 * kTimedSteps + 1)
    chosenParallel_ = parallelSeconds_ <= serialSeconds_;
  pool_.setParallel(timedSerial ? false
                    : phase <= kTimedSteps ? true
                                           : chosenParallel_);
  if (!timedParallel && !timedSerial) {
    bool ok = run(sequence, model_.code().decode(), &id, 1, error);
    choiceStep_ += ok;
    return ok;
  }
  auto start = std::chrono::steady_clock::now();
  bool ok = run(sequence, model_.code().decode(), &id, 1, error);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  (timedParallel ? parallelSeconds_ : serialSeconds_) += seconds;
  if (ok)
    ++choiceStep_;
  return ok;
}

KvSequence *Session::checkRun(SequenceId id, const int32_t *ids, int64_t count,
                              std::string &error) {
  failure_ = Failure::InvalidInput;
  const format::Manifest &m = model_.manifest();
  auto found = sequences_.find(id);
  if (found == sequences_.end()) {
    error = "there is no sequence " + std::to_string(id) +
            " (it was removed, or never created)";
    return nullptr;
  }
  int64_t start = found->second.length();
  if (start + count > m.contextLength) {
    error = "the context is full: " + std::to_string(start) + " + " +
            std::to_string(count) + " tokens exceed the context length " +
            std::to_string(m.contextLength) +
            " (compile with a larger --context)";
    return nullptr;
  }
  for (int64_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= m.vocabSize) {
      error = "token id " + std::to_string(ids[i]) +
              " is outside the vocabulary [0, " + std::to_string(m.vocabSize) +
              ")";
      return nullptr;
    }
  }
  return &found->second;
}

bool Session::run(SequenceId id, cpu::EntryFunction entry, const int32_t *ids,
                  int64_t count, std::string &error) {
  const format::Manifest &m = model_.manifest();
  KvSequence *checked = checkRun(id, ids, count, error);
  if (!checked)
    return false;
  KvSequence &sequence = *checked;
  sequence.lastRun = ++runs_;
  if (!makeResident(id, sequence, error))
    return false;
  int64_t start = sequence.length();
  if (!prepareBlocks(id, sequence, count, error))
    return false;
  positions_.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    positions_[static_cast<size_t>(i)] = static_cast<int32_t>(start + i);

  auto tableDescriptor = describe<1>(
      sequence.table.data(), {static_cast<int64_t>(sequence.table.size())});
  callModel(entry, ids, count, &tableDescriptor, 1);
  sequence.tokens.insert(sequence.tokens.end(), ids, ids + count);
  lastPosition_ = sequence.length() - 1;
  if (!format::allFinite(logits_.data(), m.vocabSize)) {
    error = describeNonFiniteLogits();
    return false;
  }
  publishBlocks(sequence);
  return true;
}

void Session::callModel(cpu::EntryFunction entry, const int32_t *ids,
                        int64_t count, void *tables, int64_t logitRows) {
  const format::Manifest &m = model_.manifest();
  const cpu::CpuWeights &weights = model_.cpuWeights();
  auto weightsDescriptor = describe<1>(
      weights.data(), {static_cast<int64_t>(weights.size())});
  auto tokensDescriptor = describe<1>(ids, {count});
  auto positionsDescriptor = describe<1>(positions_.data(), {count});
  std::vector<MemRefDescriptor<4>> cacheDescriptors;
  cacheDescriptors.reserve(caches_.size());
  for (auto &cache : caches_)
    cacheDescriptors.push_back(describe<4>(
        cache.get(), {2, m.numKvHeads, m.kvSlots(), m.headDim}));
  logits_.resize(static_cast<size_t>(logitRows * m.vocabSize));
  auto logitsDescriptor =
      describe<2>(logits_.data(), {logitRows, m.vocabSize});
  std::vector<void *> arguments = {&weightsDescriptor, &tokensDescriptor,
                                   &positionsDescriptor, tables};
  for (MemRefDescriptor<4> &descriptor : cacheDescriptors)
    arguments.push_back(&descriptor);
  arguments.push_back(&logitsDescriptor);
  // The runtime interface is passed as itself, not through a descriptor.
  arguments.push_back(&runtimeInterface_);
  entry(arguments.data());
}

bool Session::inBatch(SequenceId id) const {
  return std::find(batch_.begin(), batch_.end(), id) != batch_.end();
}

bool Session::decodeBatch(const std::vector<SequenceId> &sequences,
                          const std::vector<int32_t> &ids,
                          std::string &error) {
  const format::Manifest &m = model_.manifest();
  failure_ = Failure::InvalidInput;
  if (sequences.empty() || sequences.size() != ids.size()) {
    error = "a batch needs one id per sequence and at least one sequence (" +
            std::to_string(sequences.size()) + " sequences, " +
            std::to_string(ids.size()) + " ids)";
    return false;
  }
  std::vector<KvSequence *> members;
  for (size_t i = 0; i < sequences.size(); ++i) {
    if (std::count(sequences.begin(), sequences.end(), sequences[i]) > 1) {
      error = "sequence " + std::to_string(sequences[i]) +
              " is in the batch twice; a batch decodes one token of each";
      return false;
    }
    KvSequence *member = checkRun(sequences[i], &ids[i], 1, error);
    if (!member)
      return false;
    members.push_back(member);
  }
  // Every member's blocks must be in the pool at once: none gives up its
  // blocks for another's.
  batch_ = sequences;
  struct ClearBatch {
    std::vector<SequenceId> &batch;
    ~ClearBatch() { batch.clear(); }
  } clearBatch{batch_};
  int64_t needed = 0;
  for (KvSequence *member : members) {
    member->lastRun = ++runs_;
    needed += std::count(member->table.begin(), member->table.end(), -1) +
              blocksToWrite(*member, 1);
  }
  if (needed > blocks_.freeBlocks() + movableBlocks(-1)) {
    failure_ = Failure::OutOfMemory;
    error = "the KV pool is full: the batch of " +
            std::to_string(sequences.size()) + " sequences needs " +
            std::to_string(needed) +
            (needed == 1 ? " more block of " : " more blocks of ") +
            std::to_string(blockSize_) + " positions in the pool at once; " +
            "decode fewer sequences together, or compile with a larger "
            "--context";
    return false;
  }
  size_t width = 0;
  positions_.resize(sequences.size());
  for (size_t i = 0; i < members.size(); ++i) {
    positions_[i] = static_cast<int32_t>(members[i]->length());
    if (!makeResident(sequences[i], *members[i], error) ||
        !prepareBlocks(sequences[i], *members[i], 1, error))
      return false;
    width = std::max(width, members[i]->table.size());
  }
  // Each row is a sequence's table; what is past its blocks is never read.
  tables_.assign(members.size() * width, 0);
  for (size_t i = 0; i < members.size(); ++i)
    std::copy(members[i]->table.begin(), members[i]->table.end(),
              tables_.begin() + static_cast<long>(i * width));

  int64_t count = static_cast<int64_t>(sequences.size());
  auto tablesDescriptor =
      describe<2>(tables_.data(), {count, static_cast<int64_t>(width)});
  pool_.setParallel(true);
  callModel(model_.code().decodeBatch(), ids.data(), count, &tablesDescriptor,
            count);
  for (size_t i = 0; i < members.size(); ++i)
    members[i]->tokens.push_back(ids[i]);
  for (int64_t i = 0; i < count; ++i) {
    if (format::allFinite(logits_.data() + i * m.vocabSize, m.vocabSize))
      continue;
    lastPosition_ = positions_[static_cast<size_t>(i)];
    error = "sequence " + std::to_string(sequences[static_cast<size_t>(i)]) +
            ": " + describeNonFiniteLogits();
    return false;
  }
  for (KvSequence *member : members)
    publishBlocks(*member);
  return true;
}

void Session::publishBlocks(KvSequence &sequence) {
  size_t block = static_cast<size_t>(blockSize_);
  for (size_t index = sequence.hashes.size();
       index < sequence.tokens.size() / block; ++index) {
    uint64_t previous = index == 0 ? 0 : sequence.hashes[index - 1];
    const int32_t *tokens = sequence.tokens.data() + index * block;
    uint64_t hash = kvBlockHash(previous, tokens, block);
    sequence.hashes.push_back(hash);
    if (prefixCaching_)
      blocks_.publish(sequence.table[index], hash, previous, tokens, block);
  }
}

int64_t Session::reusePrefix(KvSequence &sequence, const int32_t *ids,
                             int64_t count) {
  size_t block = static_cast<size_t>(blockSize_);
  // Only a sequence that ends on a whole block continues with cached ones,
  // and the last id always runs: its logits are the result.
  if (!prefixCaching_ || sequence.tokens.size() % block != 0 ||
      sequence.hashes.size() != sequence.tokens.size() / block)
    return 0;
  int64_t reused = 0;
  while (count - reused > blockSize_) {
    uint64_t previous = sequence.hashes.empty() ? 0 : sequence.hashes.back();
    const int32_t *tokens = ids + reused;
    uint64_t hash = kvBlockHash(previous, tokens, block);
    std::optional<int32_t> found =
        blocks_.lookup(hash, previous, tokens, block);
    if (!found)
      break;
    sequence.table.push_back(*found);
    sequence.tokens.insert(sequence.tokens.end(), tokens, tokens + block);
    sequence.hashes.push_back(hash);
    reused += blockSize_;
  }
  return reused;
}

std::string Session::describeNonFiniteLogits() const {
  int64_t bad = 0;
  for (float value : logits_)
    bad += !std::isfinite(value);
  std::string message = "the logits at position " +
                        std::to_string(lastPosition_) + " are not finite (" +
                        std::to_string(bad) + " of " +
                        std::to_string(logits_.size()) +
                        " values are NaN or infinite): ";
  const format::GgufFile &weights = model_.weights();
  std::optional<format::NonFiniteTensor> tensor =
      format::firstNonFiniteTensor(weights);
  if (!tensor)
    return message +
           "every weight is finite, so an activation overflowed inside the "
           "model; its weights are too large for f32 arithmetic";
  std::string where =
      tensor->layer < 0 ? std::string("the token embedding")
      : tensor->layer >= model_.manifest().numLayers
          ? std::string("the output layers")
          : "layer " + std::to_string(tensor->layer);
  return message + "tensor \"" + tensor->name + "\" holds " +
         std::to_string(tensor->count) +
         " non-finite values; the first layer to produce them is " + where +
         "; " + weights.path() +
         " is damaged (download or convert the model again)";
}

} // namespace hetrt::core
