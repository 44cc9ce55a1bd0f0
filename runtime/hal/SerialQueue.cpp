// Host events and the serial queue every back end builds on.
#include "runtime/hal/SerialQueue.h"

#include <chrono>
#include <limits>

namespace hetrt::hal {

bool failWith(Error &error, core::Failure kind, std::string message) {
  error.kind = kind;
  error.message = std::move(message);
  return false;
}

bool checkRange(const char *what, uint64_t offset, uint64_t size,
                uint64_t bufferSize, Error &error) {
  if (rangeInside(offset, size, bufferSize))
    return true;
  return failWith(error, core::Failure::InvalidInput,
                  std::string(what) + ": bytes [" + std::to_string(offset) +
                      ", " + std::to_string(offset) + " + " +
                      std::to_string(size) + ") are outside the " +
                      std::to_string(bufferSize) + "-byte buffer");
}

bool checkHostPointer(const char *what, const void *host, uint64_t size,
                      Error &error) {
  if (host || size == 0)
    return true;
  return failWith(error, core::Failure::InvalidInput,
                  std::string(what) + ": the host pointer is null");
}

bool checkFillPattern(uint64_t offset, uint64_t size, int patternBytes,
                      Error &error) {
  if (patternBytes != 1 && patternBytes != 2 && patternBytes != 4)
    return failWith(error, core::Failure::InvalidInput,
                    "fill: the pattern is " + std::to_string(patternBytes) +
                        " bytes; give 1, 2 or 4");
  if (offset % patternBytes != 0 || size % patternBytes != 0)
    return failWith(error, core::Failure::InvalidInput,
                    "fill: offset " + std::to_string(offset) + " and size " +
                        std::to_string(size) + " must be multiples of the " +
                        std::to_string(patternBytes) + "-byte pattern");
  return true;
}

bool checkCopy(const Buffer &source, uint64_t sourceOffset,
               const Buffer &target, uint64_t targetOffset, uint64_t size,
               Error &error) {
  if (!checkRange("copy (source)", sourceOffset, size, source.size(), error) ||
      !checkRange("copy (target)", targetOffset, size, target.size(), error))
    return false;
  if (&source != &target || sourceOffset >= targetOffset + size ||
      targetOffset >= sourceOffset + size)
    return true;
  return failWith(error, core::Failure::InvalidInput,
                  "copy: the source and target ranges of one buffer overlap; "
                  "copy through a second buffer");
}

uint64_t HostEvent::value() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return value_;
}

void HostEvent::signal(uint64_t value) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (value > value_)
    value_ = value;
  changed_.notify_all();
}

bool HostEvent::hostWait(uint64_t value, uint64_t timeoutNanoseconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto reached = [&] { return value_ >= value; };
  if (timeoutNanoseconds == std::numeric_limits<uint64_t>::max()) {
    changed_.wait(lock, reached);
    return true;
  }
  return changed_.wait_for(lock, std::chrono::nanoseconds(timeoutNanoseconds),
                           reached);
}

void HostEvent::queueWait(uint64_t value) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (value_ >= value)
    return;
  auto start = std::chrono::steady_clock::now();
  changed_.wait(lock, [&] { return value_ >= value; });
  blockedNanoseconds_ += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - start)
          .count());
}

uint64_t HostEvent::blockedNanoseconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blockedNanoseconds_;
}

const Error *HostEvent::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_ ? &*failure_ : nullptr;
}

void HostEvent::fail(const Error &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_)
    failure_ = error;
  value_ = std::numeric_limits<uint64_t>::max();
  changed_.notify_all();
}

SerialQueue::SerialQueue() { worker_ = std::thread([this] { run(); }); }

SerialQueue::~SerialQueue() { drain(); }

void SerialQueue::drain() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_)
      return;
    stopping_ = true;
    changed_.notify_all();
  }
  worker_.join();
}

bool SerialQueue::wait(Event &event, uint64_t value, Error &error) {
  HostEvent *hostEvent = dynamic_cast<HostEvent *>(&event);
  if (!hostEvent)
    return failWith(error, core::Failure::InvalidInput,
                    "wait: the event does not come from the device layer's "
                    "createEvent");
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back({[hostEvent, value](Error &failure) {
                      hostEvent->queueWait(value);
                      if (const Error *upstream = hostEvent->failure()) {
                        failure = *upstream;
                        return false;
                      }
                      return true;
                    },
                    nullptr, /*waits=*/true});
  changed_.notify_all();
  return true;
}

bool SerialQueue::signal(Event &event, uint64_t value, Error &error) {
  HostEvent *hostEvent = dynamic_cast<HostEvent *>(&event);
  if (!hostEvent)
    return failWith(error, core::Failure::InvalidInput,
                    "signal: the event does not come from the device layer's "
                    "createEvent");
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back({[hostEvent, value](Error &) {
                      hostEvent->signal(value);
                      return true;
                    },
                    hostEvent});
  changed_.notify_all();
  return true;
}

uint64_t SerialQueue::busyNanoseconds() const {
  return busyNanoseconds_.load(std::memory_order_relaxed);
}

bool SerialQueue::finish(Error &error) {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return tasks_.empty() && !running_; });
  if (!failure_)
    return true;
  error = *failure_;
  failure_.reset();
  return false;
}

void SerialQueue::submit(std::function<bool(Error &)> work) {
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back({std::move(work), nullptr});
  changed_.notify_all();
}

void SerialQueue::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) {
      if (stopping_)
        return;
      continue;
    }
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    running_ = true;
    std::optional<Error> failed = failure_;
    lock.unlock();
    if (failed) {
      // Work after a failure is skipped; its signals carry the failure.
      if (task.signals)
        task.signals->fail(*failed);
    } else {
      Error error;
      auto start = std::chrono::steady_clock::now();
      if (!task.work(error))
        failed = error;
      if (!task.waits)
        busyNanoseconds_.fetch_add(
            static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count()),
            std::memory_order_relaxed);
    }
    lock.lock();
    if (failed && !failure_)
      failure_ = failed;
    running_ = false;
    if (tasks_.empty())
      idle_.notify_all();
  }
}

} // namespace hetrt::hal
