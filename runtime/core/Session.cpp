// Calls into generated code with MLIR memref descriptors: {allocated, aligned,
// offset, sizes[rank], strides[rank]}, in the argument order the compiler's
// entry points take (weights, tokens, positions, caches..., logits), followed
// by the runtime interface the kernels dispatch through.
#include "runtime/core/Session.h"

#include "runtime/core/Limits.h"
#include "runtime/format/NonFinite.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include <system_error>

#include <chrono>

namespace hetrt::core {

namespace {
constexpr size_t kCacheAlignment = 64;

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
      blockSize_(model.manifest().kvBlockSize) {
  const format::Manifest &m = model.manifest();
  // Session::create checked that this product fits.
  size_t cacheBytes = static_cast<size_t>(*kvCacheBytes(
      1, m.kvSlots(), m.numKvHeads, m.headDim, m.kvElementBytes()));
  for (int64_t layer = 0; layer < m.numLayers; ++layer) {
    caches_.emplace_back(static_cast<std::byte *>(
        ::operator new[](cacheBytes, std::align_val_t(kCacheAlignment))));
    std::memset(caches_.back().get(), 0, cacheBytes);
  }
  logits_.assign(static_cast<size_t>(m.vocabSize), 0.0f);
  KvBlockStore &store = *this;
  kv_ = std::make_unique<KvCache>(store, static_cast<int32_t>(m.kvPoolBlocks),
                                  blockSize_, m.contextLength);
}

std::vector<MemorySpaceStats> Session::memorySpaces() const {
  const format::Manifest &m = model_.manifest();
  std::vector<MemorySpaceStats> spaces;
  addKvSpaces(kv_->usage(), {{hostMemorySpace(), blockBytes()}}, spaces);
  // The pool's caches, allocated at creation.
  MemorySpaceStats &host = spaces.front();
  host.heldBytes[static_cast<size_t>(MemoryRole::KvCache)] =
      static_cast<uint64_t>(*kvCacheBytes(1, m.kvSlots(), m.numKvHeads,
                                          m.headDim, m.kvElementBytes())) *
      caches_.size();
  host.peakBytes = std::max(host.peakBytes, host.held());
  return spaces;
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
  int64_t reused = kv_->reusePrefix(*checked, ids.data(), count);
  int64_t lengthAfterReuse = checked->length();
  pool_.setParallel(true);
  if (run(sequence, model_.code().prefill(), ids.data() + reused,
          count - reused, error)) {
    kv_->countReused(reused);
    return true;
  }
  // Nothing ran: the reused blocks are given back, so a failed call
  // changes nothing.
  if (checked->length() == lengthAfterReuse)
    kv_->dropReused(*checked, blocksBefore, reused);
  return false;
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

KvBlockRows Session::blockRows() const {
  const format::Manifest &m = model_.manifest();
  return {static_cast<size_t>(m.headDim),
          static_cast<size_t>(m.kvElementBytes()), m.kvElementType == "bf16"};
}

bool Session::copyBlock(int32_t from, int32_t to, std::string &) {
  size_t runBytes = blockBytes() / blockRuns();
  for (size_t run = 0; run < blockRuns(); ++run)
    std::memcpy(blockRun(to, run), blockRun(from, run), runBytes);
  return true;
}

bool Session::gatherBlock(int32_t block, std::byte *out, std::string &) {
  size_t runBytes = blockBytes() / blockRuns();
  for (size_t run = 0; run < blockRuns(); ++run)
    std::memcpy(out + run * runBytes, blockRun(block, run), runBytes);
  return true;
}

bool Session::scatterBlock(const std::byte *in, int32_t block, std::string &) {
  size_t runBytes = blockBytes() / blockRuns();
  for (size_t run = 0; run < blockRuns(); ++run)
    std::memcpy(blockRun(block, run), in + run * runBytes, runBytes);
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
  return kv_->findRun(id, ids, count, model_.manifest().vocabSize, error);
}

bool Session::run(SequenceId id, cpu::EntryFunction entry, const int32_t *ids,
                  int64_t count, std::string &error) {
  const format::Manifest &m = model_.manifest();
  KvSequence *checked = checkRun(id, ids, count, error);
  if (!checked)
    return false;
  KvSequence &sequence = *checked;
  int64_t start = sequence.length();
  if (!kv_->prepare(id, sequence, count, error))
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
  kv_->publishBlocks(sequence);
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

bool Session::decodeBatch(const std::vector<SequenceId> &sequences,
                          const std::vector<int32_t> &ids,
                          std::string &error) {
  const format::Manifest &m = model_.manifest();
  std::vector<KvSequence *> members;
  if (!kv_->findBatch(sequences, ids, m.vocabSize, members, error))
    return false;
  positions_.resize(sequences.size());
  for (size_t i = 0; i < members.size(); ++i)
    positions_[i] = static_cast<int32_t>(members[i]->length());
  size_t width = 0;
  if (!kv_->prepareBatch(sequences, members, tables_, width, error))
    return false;

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
    kv_->publishBlocks(*member);
  return true;
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
