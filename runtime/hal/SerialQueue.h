// The parts of a back end every device layer shares: events kept on the host
// (a mutex, a condition variable and a value) and a queue that runs its work
// one item after another on a thread of its own. A back end derives its queue
// from SerialQueue and submits closures that do the device's work and return
// once it is done, so events, waits and failures behave the same on every
// back end and order work across devices.
#ifndef HETRT_HAL_SERIALQUEUE_H
#define HETRT_HAL_SERIALQUEUE_H

#include "runtime/hal/Device.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace hetrt::hal {

/// Sets `error` and returns false: the shape of every refusal.
bool failWith(Error &error, core::Failure kind, std::string message);

/// Whether [offset, offset + size) lies inside `limit` bytes, without
/// overflow.
inline bool rangeInside(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

/// The checks every back end's queue makes before it accepts work, with the
/// same messages everywhere: `what` names the call ("fill", "copy (source)").
/// [offset, offset + size) inside a buffer of `bufferSize` bytes:
bool checkRange(const char *what, uint64_t offset, uint64_t size,
                uint64_t bufferSize, Error &error);
/// A host pointer for `size` bytes (null only when there are none):
bool checkHostPointer(const char *what, const void *host, uint64_t size,
                      Error &error);
/// A fill pattern of 1, 2 or 4 bytes that whole patterns fill:
bool checkFillPattern(uint64_t offset, uint64_t size, int patternBytes,
                      Error &error);
/// A copy's two ranges inside their buffers, not overlapping within one:
bool checkCopy(const Buffer &source, uint64_t sourceOffset,
               const Buffer &target, uint64_t targetOffset, uint64_t size,
               Error &error);

class HostEvent final : public Event {
public:
  explicit HostEvent(uint64_t value) : value_(value) {}
  uint64_t value() const override;
  void signal(uint64_t value) override;
  bool hostWait(uint64_t value, uint64_t timeoutNanoseconds) override;
  const Error *failure() const override;
  uint64_t blockedNanoseconds() const override;
  /// Records `error` and releases every waiter.
  void fail(const Error &error);
  /// A queue's wait: as hostWait without a limit, counting the time it
  /// blocked.
  void queueWait(uint64_t value);

private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t value_;
  uint64_t blockedNanoseconds_ = 0;
  std::optional<Error> failure_;
};

class SerialQueue : public Queue {
public:
  SerialQueue();
  /// Runs what is still queued, then stops the thread.
  ~SerialQueue() override;

  bool wait(Event &event, uint64_t value, Error &error) override;
  bool signal(Event &event, uint64_t value, Error &error) override;
  bool finish(Error &error) override;
  uint64_t busyNanoseconds() const override;

protected:
  /// Queues `work`; it runs after everything submitted before it, and is
  /// skipped when earlier work failed. It returns false with `error` set to
  /// fail the queue.
  void submit(std::function<bool(Error &)> work);
  /// Derived destructors call this first, so no work runs on a half-
  /// destroyed queue.
  void drain();

private:
  struct Task {
    std::function<bool(Error &)> work;
    /// For signals: failed instead of skipped after a failure, so its
    /// waiters wake.
    HostEvent *signals = nullptr;
    /// Waits are not counted as busy time.
    bool waits = false;
  };
  void run();

  std::mutex mutex_;
  std::condition_variable changed_, idle_;
  std::deque<Task> tasks_;
  bool running_ = false;
  bool stopping_ = false;
  std::optional<Error> failure_;
  std::atomic<uint64_t> busyNanoseconds_{0};
  std::thread worker_;
};

} // namespace hetrt::hal

#endif // HETRT_HAL_SERIALQUEUE_H
