// Conformance of the device layer, run against every device the runtime
// finds (the CPU always; each other back end where its driver is present),
// and against the CUDA and HIP back ends' shared layer over a host-memory
// test driver, so that layer is checked on machines without a GPU:
// buffers in every memory space, fill, copy and host transfers with their
// bounds, queue order, and events that order one queue's work after
// another's and let the host wait.
#include "runtime/backends/gpu/GpuDevice.h"
#include "runtime/hal/Device.h"
#include "test/runtime/hal/HostGpuDriver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace hetrt::hal;
using hetrt::core::Failure;

namespace {

constexpr uint64_t kForever = std::numeric_limits<uint64_t>::max();

std::vector<std::shared_ptr<Device>> devicesUnderTest() {
  std::vector<std::shared_ptr<Device>> devices = enumerateDevices();
  // A test GPU with managed memory, so every space's conformance is tested.
  for (std::shared_ptr<Device> &device : hetrt::gpu::createGpuDevices(
           std::make_shared<hetrt::test::HostGpuDriver>(uint64_t(1) << 30,
                                                        /*managed=*/true)))
    devices.push_back(std::move(device));
  return devices;
}

class DeviceConformance
    : public ::testing::TestWithParam<std::shared_ptr<Device>> {
protected:
  Device &device() { return *GetParam(); }

  std::shared_ptr<Buffer> allocate(int space, uint64_t size) {
    Error error;
    std::shared_ptr<Buffer> buffer = device().allocate(space, size, error);
    EXPECT_TRUE(buffer) << error.message;
    return buffer;
  }
  std::unique_ptr<Queue> queue() {
    Error error;
    std::unique_ptr<Queue> created = device().createQueue(error);
    EXPECT_TRUE(created) << error.message;
    return created;
  }
  std::vector<uint8_t> readBack(Queue &q, Buffer &buffer) {
    std::vector<uint8_t> bytes(buffer.size());
    Error error;
    EXPECT_TRUE(q.read(buffer, 0, bytes.data(), bytes.size(), error))
        << error.message;
    EXPECT_TRUE(q.finish(error)) << error.message;
    return bytes;
  }
};

TEST_P(DeviceConformance, DescribesItselfAndItsMemories) {
  const DeviceInfo &info = device().info();
  EXPECT_FALSE(info.name.empty());
  EXPECT_FALSE(info.kind.empty());
  EXPECT_FALSE(info.description.empty());
  ASSERT_FALSE(info.memories.empty());
  for (size_t i = 0; i < info.memories.size(); ++i)
    for (size_t j = i + 1; j < info.memories.size(); ++j)
      EXPECT_NE(info.memories[i].name, info.memories[j].name);
}

TEST_P(DeviceConformance, FillsWithEveryPatternWidthInEverySpace) {
  for (size_t space = 0; space < device().info().memories.size(); ++space) {
    std::shared_ptr<Buffer> buffer = allocate(static_cast<int>(space), 64);
    ASSERT_TRUE(buffer);
    EXPECT_EQ(buffer->size(), 64u);
    EXPECT_EQ(buffer->memorySpace(), static_cast<int>(space));
    std::unique_ptr<Queue> q = queue();
    Error error;
    ASSERT_TRUE(q->fill(*buffer, 0, 64, 0xAB, 1, error)) << error.message;
    ASSERT_TRUE(q->fill(*buffer, 16, 16, 0x1234, 2, error)) << error.message;
    ASSERT_TRUE(q->fill(*buffer, 32, 32, 0xDEADBEEF, 4, error))
        << error.message;
    std::vector<uint8_t> bytes = readBack(*q, *buffer);
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(bytes[i], 0xAB) << i;
    for (int i = 16; i < 32; i += 2) {
      uint16_t value;
      std::memcpy(&value, &bytes[i], 2);
      EXPECT_EQ(value, 0x1234) << i;
    }
    for (int i = 32; i < 64; i += 4) {
      uint32_t value;
      std::memcpy(&value, &bytes[i], 4);
      EXPECT_EQ(value, 0xDEADBEEFu) << i;
    }
  }
}

TEST_P(DeviceConformance, CopiesBetweenSpacesAndRoundTripsHostData) {
  const size_t spaces = device().info().memories.size();
  std::vector<uint8_t> data(4096 + 13);
  std::mt19937 random(7);
  for (uint8_t &byte : data)
    byte = static_cast<uint8_t>(random());
  for (size_t from = 0; from < spaces; ++from) {
    for (size_t to = 0; to < spaces; ++to) {
      std::shared_ptr<Buffer> source = allocate(static_cast<int>(from), data.size());
      std::shared_ptr<Buffer> target = allocate(static_cast<int>(to), data.size());
      ASSERT_TRUE(source && target);
      std::unique_ptr<Queue> q = queue();
      Error error;
      ASSERT_TRUE(q->write(data.data(), *source, 0, data.size(), error))
          << error.message;
      ASSERT_TRUE(q->fill(*target, 0, data.size(), 0, 1, error));
      // An odd offset and size: copies are byte-exact, not word-rounded.
      ASSERT_TRUE(q->copy(*source, 3, *target, 5, data.size() - 8, error))
          << error.message;
      std::vector<uint8_t> bytes = readBack(*q, *target);
      EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 5),
                std::vector<uint8_t>(5, 0));
      EXPECT_TRUE(std::equal(bytes.begin() + 5, bytes.end() - 3,
                             data.begin() + 3))
          << "space " << from << " to " << to;
    }
  }
}

TEST_P(DeviceConformance, RunsAQueueInSubmissionOrder) {
  std::shared_ptr<Buffer> buffer = allocate(0, 4);
  ASSERT_TRUE(buffer);
  std::unique_ptr<Queue> q = queue();
  Error error;
  for (uint32_t i = 1; i <= 200; ++i)
    ASSERT_TRUE(q->fill(*buffer, 0, 4, i, 4, error));
  std::vector<uint8_t> bytes = readBack(*q, *buffer);
  uint32_t last;
  std::memcpy(&last, bytes.data(), 4);
  EXPECT_EQ(last, 200u);
}

TEST_P(DeviceConformance, RefusesWorkOutsideItsBuffers) {
  std::shared_ptr<Buffer> buffer = allocate(0, 32);
  ASSERT_TRUE(buffer);
  std::unique_ptr<Queue> q = queue();
  Error error;
  EXPECT_FALSE(q->fill(*buffer, 16, 32, 0, 1, error));
  EXPECT_EQ(error.kind, Failure::InvalidInput);
  EXPECT_NE(error.message.find("outside the 32-byte buffer"), std::string::npos)
      << error.message;
  // offset + size past 64 bits must not wrap into range.
  EXPECT_FALSE(q->fill(*buffer, 8, kForever - 4, 0, 1, error));
  EXPECT_FALSE(q->fill(*buffer, 2, 4, 0, 4, error));
  EXPECT_NE(error.message.find("multiples of the 4-byte pattern"),
            std::string::npos)
      << error.message;
  EXPECT_FALSE(q->fill(*buffer, 0, 4, 0, 3, error));
  EXPECT_FALSE(q->copy(*buffer, 0, *buffer, 8, 16, error));
  EXPECT_NE(error.message.find("overlap"), std::string::npos) << error.message;
  EXPECT_TRUE(q->copy(*buffer, 0, *buffer, 16, 16, error)) << error.message;
  uint8_t host[8];
  EXPECT_FALSE(q->read(*buffer, 30, host, 8, error));
  EXPECT_FALSE(q->write(nullptr, *buffer, 0, 8, error));
  // Refused submissions leave the queue usable.
  EXPECT_TRUE(q->finish(error)) << error.message;
}

TEST_P(DeviceConformance, RefusesImpossibleAllocations) {
  Error error;
  EXPECT_FALSE(device().allocate(0, kForever / 2, error));
  EXPECT_EQ(error.kind, Failure::OutOfMemory);
  EXPECT_NE(error.message.find(device().info().name), std::string::npos)
      << error.message;
  int spaces = static_cast<int>(device().info().memories.size());
  EXPECT_FALSE(device().allocate(spaces, 16, error));
  EXPECT_EQ(error.kind, Failure::InvalidInput);
  EXPECT_FALSE(device().allocate(-1, 16, error));
}

TEST_P(DeviceConformance, EventsOrderOneQueueAfterAnother) {
  std::shared_ptr<Buffer> staging = allocate(0, 1024);
  std::shared_ptr<Buffer> result = allocate(0, 1024);
  ASSERT_TRUE(staging && result);
  Error error;
  std::shared_ptr<Event> ready = device().createEvent(0, error);
  ASSERT_TRUE(ready) << error.message;
  std::unique_ptr<Queue> producer = queue(), consumer = queue();
  // The consumer's copy is submitted first but waits for the producer.
  ASSERT_TRUE(consumer->wait(*ready, 1, error)) << error.message;
  ASSERT_TRUE(consumer->copy(*staging, 0, *result, 0, 1024, error));
  EXPECT_FALSE(ready->hostWait(1, 1000000)) << "signaled before any work";
  ASSERT_TRUE(producer->fill(*staging, 0, 1024, 0x5A, 1, error));
  ASSERT_TRUE(producer->signal(*ready, 1, error));
  EXPECT_TRUE(ready->hostWait(1, kForever));
  EXPECT_GE(ready->value(), 1u);
  EXPECT_EQ(ready->failure(), nullptr);
  std::vector<uint8_t> bytes = readBack(*consumer, *result);
  EXPECT_EQ(bytes, std::vector<uint8_t>(1024, 0x5A));
  ASSERT_TRUE(producer->finish(error)) << error.message;
}

TEST_P(DeviceConformance, HostSignalsReleaseQueuesAndNeverLowerAnEvent) {
  Error error;
  std::shared_ptr<Event> gate = device().createEvent(5, error);
  ASSERT_TRUE(gate);
  EXPECT_EQ(gate->value(), 5u);
  EXPECT_TRUE(gate->hostWait(5, 0));
  gate->signal(3);
  EXPECT_EQ(gate->value(), 5u);
  std::shared_ptr<Buffer> buffer = allocate(0, 4);
  std::unique_ptr<Queue> q = queue();
  ASSERT_TRUE(q->wait(*gate, 6, error));
  ASSERT_TRUE(q->fill(*buffer, 0, 4, 7, 4, error));
  std::shared_ptr<Event> done = device().createEvent(0, error);
  ASSERT_TRUE(q->signal(*done, 1, error));
  EXPECT_FALSE(done->hostWait(1, 1000000));
  gate->signal(6);
  EXPECT_TRUE(done->hostWait(1, kForever));
  std::vector<uint8_t> bytes = readBack(*q, *buffer);
  uint32_t value;
  std::memcpy(&value, bytes.data(), 4);
  EXPECT_EQ(value, 7u);
}

// What the runtime reports as the hidden share of a transfer: a queue's busy
// time leaves its waits out, and an event counts how long queues waited for
// it (none for a value already reached).
TEST_P(DeviceConformance, CountsBusyTimeAndTheTimeQueuesWaitForAnEvent) {
  Error error;
  std::shared_ptr<Event> started = device().createEvent(0, error);
  std::shared_ptr<Event> gate = device().createEvent(1, error);
  ASSERT_TRUE(started && gate) << error.message;
  std::shared_ptr<Buffer> buffer = allocate(0, 1 << 20);
  std::unique_ptr<Queue> q = queue();
  ASSERT_TRUE(q->wait(*gate, 1, error));
  ASSERT_TRUE(q->fill(*buffer, 0, 1 << 20, 1, 4, error));
  ASSERT_TRUE(q->finish(error)) << error.message;
  EXPECT_EQ(gate->blockedNanoseconds(), 0u);
  EXPECT_GT(q->busyNanoseconds(), 0u);
  uint64_t busy = q->busyNanoseconds();
  // The queue is waiting (or about to) once `started` is reached; the host
  // signals the gate well after.
  ASSERT_TRUE(q->signal(*started, 1, error));
  ASSERT_TRUE(q->wait(*gate, 2, error));
  ASSERT_TRUE(started->hostWait(1, kForever));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  gate->signal(2);
  ASSERT_TRUE(q->finish(error)) << error.message;
  EXPECT_GT(gate->blockedNanoseconds(), 0u);
  // The wait is not busy time: far less than the 200 ms were added.
  EXPECT_LT(q->busyNanoseconds() - busy, 100000000u);
}

std::string deviceName(const ::testing::TestParamInfo<std::shared_ptr<Device>> &info) {
  return info.param->info().name;
}

INSTANTIATE_TEST_SUITE_P(EveryDevice, DeviceConformance,
                         ::testing::ValuesIn(devicesUnderTest()), deviceName);

TEST(DeviceRegistry, ListsTheCpuFirst) {
  std::vector<std::shared_ptr<Device>> devices = enumerateDevices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices.front()->info().name, "cpu0");
  EXPECT_EQ(devices.front()->info().kind, "cpu");
  EXPECT_TRUE(devices.front()->info().memories.front().hostVisible);
  // The same objects every time: the C API hands out their strings.
  EXPECT_EQ(enumerateDevices().front().get(), devices.front().get());
}

TEST(DeviceRegistry, FindsAVulkanDeviceOrSaysWhyNot) {
  std::vector<std::string> unavailable;
  std::vector<std::shared_ptr<Device>> devices = enumerateDevices(&unavailable);
  bool vulkan = false;
  for (const std::shared_ptr<Device> &device : devices)
    vulkan |= device->info().kind == "vulkan";
  if (!vulkan) {
    std::string reasons;
    for (const std::string &line : unavailable)
      reasons += "\n  " + line;
    ASSERT_FALSE(unavailable.empty())
        << "no Vulkan device and no reason given";
    GTEST_SKIP() << "no Vulkan device on this machine:" << reasons;
  }
  for (const std::shared_ptr<Device> &device : devices)
    if (device->info().kind == "vulkan") {
      EXPECT_EQ(device->info().name.rfind("vulkan", 0), 0u);
      EXPECT_NE(device->info().description.find("Vulkan 1."), std::string::npos)
          << device->info().description;
    }
}

// Work on one device follows work on another through an event: the CPU
// fills a buffer, a queue of the second device waits for it and copies the
// bytes in through the host.
TEST(DeviceRegistry, EventsOrderQueuesOfDifferentDevices) {
  std::vector<std::shared_ptr<Device>> devices = enumerateDevices();
  if (devices.size() < 2)
    GTEST_SKIP() << "one device only (" << devices.front()->info().name
                 << "); the test needs two";
  Device &first = *devices[0], &second = *devices[1];
  Error error;
  std::shared_ptr<Buffer> source = first.allocate(0, 256, error);
  std::shared_ptr<Buffer> target = second.allocate(0, 256, error);
  ASSERT_TRUE(source && target) << error.message;
  ASSERT_TRUE(source->hostPointer()) << "the CPU's memory is host-visible";
  std::unique_ptr<Queue> producer = first.createQueue(error);
  std::unique_ptr<Queue> consumer = second.createQueue(error);
  std::shared_ptr<Event> filled = first.createEvent(0, error);
  ASSERT_TRUE(producer && consumer && filled) << error.message;
  ASSERT_TRUE(consumer->wait(*filled, 1, error)) << error.message;
  ASSERT_TRUE(consumer->write(source->hostPointer(), *target, 0, 256, error))
      << error.message;
  ASSERT_TRUE(producer->fill(*source, 0, 256, 0x3C, 1, error));
  ASSERT_TRUE(producer->signal(*filled, 1, error));
  std::vector<uint8_t> bytes(256);
  ASSERT_TRUE(consumer->read(*target, 0, bytes.data(), 256, error));
  ASSERT_TRUE(consumer->finish(error)) << error.message;
  EXPECT_EQ(bytes, std::vector<uint8_t>(256, 0x3C));
  // A buffer of one device is refused by the other's queues.
  EXPECT_FALSE(consumer->copy(*source, 0, *target, 0, 16, error));
  EXPECT_NE(error.message.find("another device"), std::string::npos)
      << error.message;
  ASSERT_TRUE(producer->finish(error)) << error.message;
}

// The CUDA and HIP back ends' shared layer: what it says of a GPU, and what
// it refuses before any driver call.
TEST(GpuDeviceLayer, DescribesTheGpuAndItsTwoSpaces) {
  auto devices = hetrt::gpu::createGpuDevices(
      std::make_shared<hetrt::test::HostGpuDriver>(uint64_t(80) << 30));
  ASSERT_EQ(devices.size(), 1u);
  const DeviceInfo &info = devices[0]->info();
  EXPECT_EQ(info.name, "testgpu0");
  EXPECT_EQ(info.arch, "sm_90");
  EXPECT_EQ(info.description,
            "host test GPU (sm_90, 1 compute units, 81920 MiB; host test driver)");
  ASSERT_EQ(info.memories.size(), 2u);
  EXPECT_EQ(info.memories[hetrt::gpu::kDeviceLocal].name, "device-local");
  EXPECT_EQ(info.memories[hetrt::gpu::kDeviceLocal].capacityBytes,
            uint64_t(80) << 30);
  EXPECT_FALSE(info.memories[hetrt::gpu::kDeviceLocal].hostVisible);
  EXPECT_EQ(info.memories[hetrt::gpu::kHostPinned].name, "host-pinned");
  EXPECT_TRUE(info.memories[hetrt::gpu::kHostPinned].hostVisible);
  EXPECT_TRUE(devices[0]->runs(ExecutableFormat::GpuModule));
  EXPECT_FALSE(devices[0]->runs(ExecutableFormat::SpirV));
  EXPECT_FALSE(devices[0]->runs(ExecutableFormat::X86SharedObject));
}

TEST(GpuDeviceLayer, RefusesModulesItCannotLaunch) {
  auto devices = hetrt::gpu::createGpuDevices(
      std::make_shared<hetrt::test::HostGpuDriver>(uint64_t(1) << 30));
  Device &gpu = *devices[0];
  Error error;
  EXPECT_FALSE(gpu.loadExecutable(ExecutableFormat::SpirV, "x", {}, error));
  EXPECT_EQ(error.kind, Failure::Unsupported);
  KernelSignature wide{"k", 2, 0, {64, 32, 1}};
  EXPECT_FALSE(gpu.loadExecutable(ExecutableFormat::GpuModule, "x", {wide},
                                  error));
  EXPECT_EQ(error.kind, Failure::InvalidInput);
  EXPECT_NE(error.message.find("workgroup of 2048 threads"), std::string::npos)
      << error.message;
  KernelSignature fine{"k", 2, 0, {256, 1, 1}};
  EXPECT_FALSE(gpu.loadExecutable(ExecutableFormat::GpuModule, "x", {fine},
                                  error));
  EXPECT_EQ(error.message,
            "testgpu0 (sm_90) cannot load the module: the host test driver "
            "loads no modules");
}

TEST(GpuDeviceLayer, KeepsDeviceMemoryWithinWhatIsFree) {
  auto devices = hetrt::gpu::createGpuDevices(
      std::make_shared<hetrt::test::HostGpuDriver>(uint64_t(1) << 20));
  Device &gpu = *devices[0];
  Error error;
  std::shared_ptr<Buffer> most = gpu.allocate(0, 768 << 10, error);
  ASSERT_TRUE(most) << error.message;
  EXPECT_FALSE(gpu.allocate(0, 512 << 10, error));
  EXPECT_EQ(error.kind, Failure::OutOfMemory);
  EXPECT_EQ(error.message, "testgpu0: 524288 bytes of device-local memory "
                           "asked for, 262144 free on the device");
  most.reset();
  EXPECT_TRUE(gpu.allocate(0, 512 << 10, error)) << error.message;
  // Pinned host memory is not the GPU's.
  EXPECT_TRUE(gpu.allocate(1, 2 << 20, error)) << error.message;
  // Without managed memory from the driver there is no third space.
  EXPECT_FALSE(gpu.allocate(hetrt::gpu::kManaged, 64, error));
  EXPECT_EQ(error.message, "testgpu0 has memory spaces 0 (device-local), 1 "
                           "(host-pinned), not 2");
}

// Managed (unified) memory where the driver offers it: one address for the
// host and the device, never asked for past what the device has free (its
// pages live in the device's memory while the device uses them).
TEST(GpuDeviceLayer, ManagedMemoryIsHostVisibleAndWithinWhatIsFree) {
  auto devices = hetrt::gpu::createGpuDevices(
      std::make_shared<hetrt::test::HostGpuDriver>(uint64_t(1) << 20,
                                                   /*managed=*/true));
  Device &gpu = *devices[0];
  const DeviceInfo &info = gpu.info();
  ASSERT_EQ(info.memories.size(), 3u);
  EXPECT_EQ(info.memories[hetrt::gpu::kManaged].name, "managed");
  EXPECT_EQ(info.memories[hetrt::gpu::kManaged].capacityBytes,
            uint64_t(1) << 20);
  EXPECT_TRUE(info.memories[hetrt::gpu::kManaged].hostVisible);
  Error error;
  std::shared_ptr<Buffer> device = gpu.allocate(0, 512 << 10, error);
  std::shared_ptr<Buffer> managed =
      gpu.allocate(hetrt::gpu::kManaged, 256 << 10, error);
  ASSERT_TRUE(device && managed) << error.message;
  EXPECT_EQ(managed->memorySpace(), hetrt::gpu::kManaged);
  // The host writes it in place, and the device's queue reads what it wrote.
  ASSERT_TRUE(managed->hostPointer());
  std::memset(managed->hostPointer(), 0x5A, 256 << 10);
  std::unique_ptr<Queue> q = gpu.createQueue(error);
  ASSERT_TRUE(q) << error.message;
  ASSERT_TRUE(q->copy(*managed, 0, *device, 0, 256 << 10, error))
      << error.message;
  std::vector<uint8_t> bytes(256 << 10);
  ASSERT_TRUE(q->read(*device, 0, bytes.data(), bytes.size(), error));
  ASSERT_TRUE(q->finish(error)) << error.message;
  EXPECT_EQ(bytes, std::vector<uint8_t>(256 << 10, 0x5A));
  // 768 KiB of the device's 1 MiB are taken, managed memory included.
  EXPECT_FALSE(gpu.allocate(hetrt::gpu::kManaged, 512 << 10, error));
  EXPECT_EQ(error.kind, Failure::OutOfMemory);
  EXPECT_EQ(error.message, "testgpu0: 524288 bytes of managed memory asked "
                           "for, 262144 free on the device");
  managed.reset();
  EXPECT_TRUE(gpu.allocate(hetrt::gpu::kManaged, 512 << 10, error))
      << error.message;
}

// Small writes go through the queue's pinned staging memory, which is only
// reused once the stream has caught up; writes larger than a staging slot go
// directly. More small writes than the staging holds, and large ones between
// them, all land (the test driver copies only when the stream is
// synchronized, as a GPU would copy later).
TEST(GpuDeviceLayer, SmallWritesThroughStagingAllLand) {
  auto devices = hetrt::gpu::createGpuDevices(
      std::make_shared<hetrt::test::HostGpuDriver>(uint64_t(1) << 30));
  Device &gpu = *devices[0];
  Error error;
  constexpr uint64_t kChunk = 48 << 10, kChunks = 64;
  std::shared_ptr<Buffer> target = gpu.allocate(0, kChunk * kChunks, error);
  ASSERT_TRUE(target) << error.message;
  std::unique_ptr<Queue> q = gpu.createQueue(error);
  ASSERT_TRUE(q) << error.message;
  std::vector<std::vector<uint8_t>> sources;
  for (uint64_t c = 0; c < kChunks; ++c) {
    // Every fourth chunk is one byte past the staged size.
    uint64_t size = c % 4 == 3 ? (64 << 10) + 1 : kChunk - 3;
    sources.emplace_back(std::min(size, kChunk), static_cast<uint8_t>(c + 1));
    ASSERT_TRUE(q->write(sources.back().data(), *target, c * kChunk,
                         sources.back().size(), error))
        << error.message;
  }
  std::vector<uint8_t> bytes(kChunk * kChunks);
  ASSERT_TRUE(q->read(*target, 0, bytes.data(), bytes.size(), error));
  ASSERT_TRUE(q->finish(error)) << error.message;
  for (uint64_t c = 0; c < kChunks; ++c)
    EXPECT_EQ(bytes[c * kChunk], c + 1) << "chunk " << c;
  EXPECT_EQ(bytes[kChunk - 4], 1);
}

} // namespace
