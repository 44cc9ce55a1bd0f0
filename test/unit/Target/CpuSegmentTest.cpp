// Code the x86 target compiles for a CPU segment, run by the CPU device of
// the device layer: the device binds buffers by the signature the code
// exports, and refuses dispatches whose buffers the code would overrun.
#include "hetc/InitAll.h"
#include "hetc/Target/Target.h"
#include "hetc/Target/X86.h"
#include "runtime/core/ProgramRunner.h"
#include "runtime/format/Gguf.h"
#include "runtime/hal/Device.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace hetc;
using hetrt::hal::Buffer;
using hetrt::hal::Device;
using hetrt::hal::Error;

namespace {

// One RMS norm over rows of 4, with its weight at offset 16 of the model's
// tensor data, then a residual add: a segment that takes an activation and
// gives one back.
constexpr const char *kSegmentModule = R"mlir(
module {
  llm.weight @pad {data_offset = 0 : i64} : tensor<4xf32>
  llm.weight @norm.weight {data_offset = 16 : i64} : tensor<4xf32>
  func.func @prefill_seg0(%x: tensor<?x4xf32>) -> tensor<?x4xf32>
      attributes {hetc.segment_entry} {
    %w = llm.get_weight @norm.weight : tensor<4xf32>
    %n = llm.rms_norm %x, %w eps = 1.0e-5 : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    %y = llm.add %x, %n : tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}
)mlir";

std::string compileSegment() {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kSegmentModule, &context);
  if (!module)
    return "";
  target::CompileRequest request;
  request.cpuVariants = {"host"};
  std::vector<target::Executable> executables;
  std::string error;
  het::DeviceAttr device = target::x86::hostDevice(&context);
  if (!target::x86::x86Target().compile(*module, device, request, executables,
                                        error) ||
      executables.size() != 1) {
    ADD_FAILURE() << error;
    return "";
  }
  return std::string(executables[0].code.begin(), executables[0].code.end());
}

struct CpuSegmentTest : testing::Test {
  static void SetUpTestSuite() { code = new std::string(compileSegment()); }
  static void TearDownTestSuite() { delete code; }
  static std::string *code;

  void SetUp() override {
    ASSERT_FALSE(code->empty());
    device = hetrt::hal::enumerateDevices().front();
    ASSERT_EQ(device->info().name, "cpu0");
    ASSERT_TRUE(device->runs(hetrt::hal::ExecutableFormat::X86SharedObject));
  }
  std::shared_ptr<Device> device;
};
std::string *CpuSegmentTest::code = nullptr;

std::string sizes(std::initializer_list<int64_t> values) {
  std::string bytes(values.size() * 8, '\0');
  std::memcpy(bytes.data(), values.begin(), bytes.size());
  return bytes;
}

} // namespace

TEST_F(CpuSegmentTest, RunsOnTheCpuDeviceWithBuffersBoundBySignature) {
  Error error;
  auto executable = device->loadExecutable(
      hetrt::hal::ExecutableFormat::X86SharedObject, *code,
      {{"prefill_seg0", 3, 8}}, error);
  ASSERT_TRUE(executable) << error.message;
  // The model's tensor data: 4 floats of padding, then the norm's weight.
  const float weights[8] = {9, 9, 9, 9, 1, 2, 3, 4};
  auto data = device->importHostMemory(weights, sizeof(weights), error);
  auto input = device->allocate(0, 3 * 4 * 4, error);
  auto output = device->allocate(0, 3 * 4 * 4, error);
  ASSERT_TRUE(data && input && output) << error.message;
  const float rows[12] = {1, 1, 1, 1, 2, 0, 0, 0, -3, 4, 0, 0};
  std::memcpy(input->hostPointer(), rows, sizeof(rows));
  auto queue = device->createQueue(error);
  ASSERT_TRUE(queue) << error.message;
  const uint32_t one[3] = {1, 1, 1};
  // Two rows of the three: the dynamic sizes are the input's and output's.
  ASSERT_TRUE(queue->dispatch(*executable, 0, one,
                              {data.get(), input.get(), output.get()},
                              sizes({2, 2}), error))
      << error.message;
  ASSERT_TRUE(queue->finish(error)) << error.message;
  const float *result = static_cast<const float *>(output->hostPointer());
  for (int row = 0; row < 2; ++row) {
    double squares = 0;
    for (int i = 0; i < 4; ++i)
      squares += rows[row * 4 + i] * rows[row * 4 + i];
    double scale = 1.0 / std::sqrt(squares / 4 + 1e-5);
    for (int i = 0; i < 4; ++i) {
      float x = rows[row * 4 + i];
      EXPECT_NEAR(result[row * 4 + i], x + x * scale * weights[4 + i], 1e-5)
          << "row " << row << ", column " << i;
    }
  }
}

TEST_F(CpuSegmentTest, RefusesDispatchesTheCodeWouldOverrun) {
  Error error;
  auto executable = device->loadExecutable(
      hetrt::hal::ExecutableFormat::X86SharedObject, *code,
      {{"prefill_seg0", 3, 8}}, error);
  ASSERT_TRUE(executable) << error.message;
  const float weights[8] = {};
  auto data = device->importHostMemory(weights, sizeof(weights), error);
  auto small = device->allocate(0, 16, error);
  auto output = device->allocate(0, 64, error);
  auto queue = device->createQueue(error);
  ASSERT_TRUE(data && small && output && queue);
  const uint32_t one[3] = {1, 1, 1};
  struct Case {
    std::vector<Buffer *> bindings;
    std::string pushConstants;
    const uint32_t *groups;
    const char *message;
  } cases[] = {
      {{data.get(), small.get(), output.get()}, sizes({2, 2}), one,
       "buffer 1 of 16 bytes is smaller than the code's view of it"},
      {{data.get(), output.get()}, sizes({1, 1}), one,
       "takes 3 buffers, not 2"},
      {{data.get(), small.get(), output.get()}, sizes({1}), one,
       "takes 2 dynamic sizes (int64 push constants), not 8 bytes"},
      {{data.get(), data.get(), output.get()}, sizes({1, 1}), one,
       "buffer 1 is read-only host memory"},
  };
  for (const Case &c : cases) {
    Error refused;
    EXPECT_FALSE(queue->dispatch(*executable, 0, c.groups, c.bindings,
                                 c.pushConstants, refused));
    EXPECT_NE(refused.message.find(c.message), std::string::npos)
        << refused.message;
  }
  const uint32_t many[3] = {2, 1, 1};
  Error refused;
  EXPECT_FALSE(queue->dispatch(*executable, 0, many,
                               {data.get(), small.get(), output.get()},
                               sizes({1, 1}), refused));
  EXPECT_NE(refused.message.find("give a grid of [1, 1, 1]"), std::string::npos);
  // The imported model data is never written through the device.
  EXPECT_FALSE(queue->fill(*data, 0, 16, 0, 4, refused));
  EXPECT_NE(refused.message.find("read-only"), std::string::npos);
}

TEST_F(CpuSegmentTest, RefusesKernelsTheCodeDoesNotExport) {
  Error error;
  EXPECT_FALSE(device->loadExecutable(
      hetrt::hal::ExecutableFormat::X86SharedObject, *code,
      {{"decode_seg7", 3, 8}}, error));
  EXPECT_NE(error.message.find("entry point \"decode_seg7\" is missing"),
            std::string::npos)
      << error.message;
  EXPECT_FALSE(device->loadExecutable(
      hetrt::hal::ExecutableFormat::X86SharedObject, *code,
      {{"prefill_seg0", 4, 8}}, error));
  EXPECT_NE(error.message.find("takes 3 buffers, but the program says 4"),
            std::string::npos)
      << error.message;
  EXPECT_FALSE(device->loadExecutable(
      hetrt::hal::ExecutableFormat::X86SharedObject, code->substr(0, 200),
      {{"prefill_seg0", 3, 8}}, error));
  EXPECT_NE(error.message.find("cpu0: the segment code"), std::string::npos)
      << error.message;
}

// A program whose step runs the segment code on cpu0: the runner maps the
// model file for it, binds its buffers and passes the step's token count as
// the dynamic sizes; a program naming a device it was not given is refused.
TEST_F(CpuSegmentTest, TheProgramRunnerDispatchesSegmentCode) {
  using hetc::abi::BufferRole;
  using hetc::abi::ProgramValue;
  std::string message;
  std::unique_ptr<hetrt::format::GgufFile> file = hetrt::format::GgufFile::open(
      std::string(HETC_SHARED_DIR) + "/models/stories260K.gguf", message);
  ASSERT_TRUE(file) << message;
  hetc::abi::Program program;
  program.devices = {{"cpu0", "x86"}};
  program.buffers = {
      {"model-file", BufferRole::WeightFile, ProgramValue::fixed(0), ""},
      // A cache, so the runner clears it: the segment's input is zeros.
      {"kv.0", BufferRole::KvCache, ProgramValue::fixed(16), ""},
      {"logits", BufferRole::Logits, ProgramValue::fixed(16), ""}};
  hetc::abi::ProgramStep step;
  step.kernel = "prefill_seg0";
  step.buffers = {0, 1, 2};
  step.params = {ProgramValue::tokens(), ProgramValue::tokens()};
  program.steps = {step};
  auto runnerFor = [&](const hetc::abi::Program &entry, Error &error) {
    return hetrt::core::ProgramRunner::create(
        {{device.get(), hetrt::hal::ExecutableFormat::X86SharedObject, *code,
          {{"prefill_seg0", 3, 0}}, "x86 test"}},
        {{entry, 1}}, *file, error);
  };
  Error error;
  std::unique_ptr<hetrt::core::ProgramRunner> runner = runnerFor(program, error);
  ASSERT_TRUE(runner) << error.message;
  EXPECT_EQ(runner->vocab(), 4);
  // The input is zeros, and so is its norm: the sum is zero.
  float logits[4] = {1, 1, 1, 1};
  const int32_t token = 5;
  ASSERT_TRUE(runner->run(0, &token, 1, 0, nullptr, logits, error)) << error.message;
  for (float value : logits)
    EXPECT_EQ(value, 0.0f);
  EXPECT_EQ(runner->stats().at(0).dispatches, 1u);

  hetc::abi::Program elsewhere = program;
  elsewhere.devices = {{"cpu7", "x86"}};
  EXPECT_FALSE(runnerFor(elsewhere, error));
  EXPECT_NE(error.message.find("program 0 runs on cpu7, which is not among "
                               "the devices it was given"),
            std::string::npos)
      << error.message;
  hetc::abi::Program spirv = program;
  spirv.devices = {{"cpu0", "spirv"}};
  EXPECT_FALSE(runnerFor(spirv, error));
  EXPECT_NE(error.message.find("cpu0 runs other code than the spirv code the "
                               "program dispatches"),
            std::string::npos)
      << error.message;
}
