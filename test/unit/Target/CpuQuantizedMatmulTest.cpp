// The x86 target's matmuls of block-quantized weights, run on the CPU device
// and checked against an exact model of their arithmetic: with int8 dot
// products (the avx512-vnni variant) the activations are rounded to int8
// blocks of 32 exactly as the kernels do it, so every integer product is the
// same and only the f32 summation order differs; the float variant decodes
// the weights and multiplies the activations as they are. Both the prefill
// blocking (several rows, a partial last block of rows) and the decode form
// (one row) are run for Q8_0, Q4_0, Q4_K, Q5_K and Q6_K; Q2_K and Q3_K, decoded
// in registers with float activations, on the float variants. F16 and F32
// weights 8192 wide check the decode form that shares an L1-filling
// activation row among eight weight rows.
#include "hetc/InitAll.h"
#include "hetc/Target/Target.h"
#include "hetc/Target/X86.h"
#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/core/CpuFeatures.h"
#include "runtime/format/WeightInterleave.h"
#include "runtime/format/Quantize.h"
#include "runtime/hal/Device.h"

#include "abi/BlockFormats.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace hetc;
using hetrt::format::BlockFormat;
using hetrt::hal::Error;

namespace {

struct Case {
  BlockFormat format;
  const char *quantName;
  const char *variant;
  bool int8;
  /// Weight rows: 48 makes three groups of 16, which Q4_0, Q8_0, Q4_K and Q6_K with
  /// int8 dot products read interleaved; 24 keeps every format in the
  /// file's layout.
  int64_t out = 48;
  /// Weight columns (the activation row's width).
  int64_t in = 512;
};

std::string caseName(const testing::TestParamInfo<Case> &info) {
  std::string name = std::string(info.param.quantName) + "_" +
                     info.param.variant + "_" +
                     std::to_string(info.param.out) + "x" +
                     std::to_string(info.param.in);
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

/// A module with a prefill entry (any number of rows) and a decode entry (one
/// row) of `x · wᵀ` for a [kOut, kIn] weight of `quant` (or "f16", "f32")
/// at offset 0.
std::string moduleText(const char *quant, int64_t kOut, int64_t kIn) {
  std::string element = std::string(quant) == "f16" || std::string(quant) == "f32"
                            ? std::string(quant)
                            : "!llm.quant<" + std::string(quant) + ">";
  std::string w = "tensor<" + std::to_string(kOut) + "x" +
                  std::to_string(kIn) + "x" + element + ">";
  std::string in = std::to_string(kIn), out = std::to_string(kOut);
  return "module {\n"
         "  llm.weight @w {data_offset = 0 : i64} : " + w + "\n"
         "  func.func @prefill_seg0(%x: tensor<?x" + in + "xf32>) -> tensor<?x" +
         out + "xf32> attributes {hetc.segment_entry} {\n"
         "    %w = llm.get_weight @w : " + w + "\n"
         "    %y = llm.matmul %x, %w : (tensor<?x" + in + "xf32>, " + w +
         ") -> tensor<?x" + out + "xf32>\n"
         "    return %y : tensor<?x" + out + "xf32>\n"
         "  }\n"
         "  func.func @decode_seg0(%x: tensor<1x" + in + "xf32>) -> tensor<1x" +
         out + "xf32> attributes {hetc.segment_entry} {\n"
         "    %w = llm.get_weight @w : " + w + "\n"
         "    %y = llm.matmul %x, %w : (tensor<1x" + in + "xf32>, " + w +
         ") -> tensor<1x" + out + "xf32>\n"
         "    return %y : tensor<1x" + out + "xf32>\n"
         "  }\n"
         "}\n";
}

/// `x` as the int8 kernels see it: per block of 32, d = max|x| / 127 and
/// codes roundeven(x · (1/d)), all in f32; returns d · code.
std::vector<double> roundedActivations(const std::vector<float> &x) {
  std::vector<double> rounded(x.size());
  for (size_t block = 0; block < x.size(); block += 32) {
    float largest = 0;
    for (size_t i = 0; i < 32; ++i)
      largest = std::max(largest, std::fabs(x[block + i]));
    float scale = largest / 127.0f;
    float inverse = scale == 0 ? 0.0f : 1.0f / scale;
    for (size_t i = 0; i < 32; ++i)
      rounded[block + i] =
          double(std::nearbyint(x[block + i] * inverse)) * double(scale);
  }
  return rounded;
}

struct CpuQuantizedMatmulTest : testing::TestWithParam<Case> {};

} // namespace

TEST_P(CpuQuantizedMatmulTest, MatchesTheExactArithmetic) {
  const Case &c = GetParam();
  std::vector<target::x86::CpuVariant> variants;
  std::string error;
  ASSERT_TRUE(target::x86::selectVariants({c.variant}, variants, error));
  ASSERT_EQ(variants.front().int8Dot, c.int8);
  if (!hetrt::core::hostSupports(variants.front().requiredFeatures))
    GTEST_SKIP() << "this CPU cannot run the " << c.variant << " variant";

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(
          moduleText(c.quantName, c.out, c.in), &context);
  ASSERT_TRUE(module);
  target::CompileRequest request;
  request.cpuVariants = {c.variant};
  std::vector<target::Executable> executables;
  ASSERT_TRUE(target::x86::x86Target().compile(
      *module, target::x86::hostDevice(&context), request, executables, error))
      << error;
  ASSERT_EQ(executables.size(), 1u);
  std::string code(executables[0].code.begin(), executables[0].code.end());
  const int64_t kOut = c.out, kIn = c.in;

  // Weights around a non-zero center (so Q4_K's mins matter), with a few
  // large values per row (so block scales differ).
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> weights(kOut * kIn);
  for (float &w : weights)
    w = 0.3f + normal(random);
  for (int64_t row = 0; row < kOut; ++row)
    weights[row * kIn + (row * 37) % kIn] = 6.0f;
  int64_t rowBytes = *hetrt::format::storageBytes(c.format, kIn);
  std::vector<uint8_t> bytes(kOut * rowBytes);
  std::vector<float> decoded(kOut * kIn);
  for (int64_t row = 0; row < kOut; ++row) {
    ASSERT_TRUE(hetrt::format::quantizeRow(
        c.format, weights.data() + row * kIn, kIn, bytes.data() + row * rowBytes));
    ASSERT_TRUE(hetrt::format::dequantizeRow(
        c.format, bytes.data() + row * rowBytes, kIn,
        decoded.data() + row * kIn));
  }

  auto device = hetrt::hal::enumerateDevices().front();
  Error failure;
  auto executable = device->loadExecutable(
      hetrt::hal::ExecutableFormat::X86SharedObject, code,
      {{"prefill_seg0", 3, 16}, {"decode_seg0", 3, 0}}, failure);
  ASSERT_TRUE(executable) << failure.message;
  // The weights in the layout the code reads them in, as the runtime gives
  // them to it.
  const std::vector<int64_t> *layouts =
      hetrt::cpu::segmentWeightLayouts(*executable);
  ASSERT_TRUE(layouts);
  // Float weights multiply the activations as they are, on every variant.
  bool floatWeights =
      c.format == BlockFormat::F16 || c.format == BlockFormat::F32;
  bool interleaved =
      c.format != BlockFormat::Q5_K && c.format != BlockFormat::Q2_K &&
      c.format != BlockFormat::Q3_K && !floatWeights && c.int8 &&
      kOut % 16 == 0;
  ASSERT_EQ(layouts->size(),
            interleaved ? size_t(hetrt::format::kWeightLayoutFields) : 0u);
  if (interleaved) {
    const int64_t *entry = layouts->data();
    EXPECT_EQ(entry[hetrt::format::WeightLayoutDataOffset], 0);
    EXPECT_EQ(entry[hetrt::format::WeightLayoutRows], kOut);
    EXPECT_EQ(entry[hetrt::format::WeightLayoutRowBytes], rowBytes);
    hetrt::format::interleaveRows(
        static_cast<hetrt::format::WeightLayoutKind>(
            entry[hetrt::format::WeightLayoutId]),
        c.format, bytes.data(), kOut, rowBytes);
    EXPECT_EQ(entry[hetrt::format::WeightLayoutFormat],
              static_cast<int64_t>(c.format));
  }
  auto data = device->importHostMemory(bytes.data(), bytes.size(), failure);
  ASSERT_TRUE(data) << failure.message;
  auto queue = device->createQueue(failure);
  ASSERT_TRUE(queue) << failure.message;

  // 7 rows: one whole block of 4 and a partial one; then the decode entry.
  for (auto [entry, rows] : {std::pair<uint32_t, int64_t>{0, 7}, {1, 1}}) {
    std::vector<float> x(rows * kIn);
    for (float &value : x)
      value = normal(random);
    x[3] = 40.0f; // an outlier sets its block's scale
    auto input = device->allocate(0, x.size() * 4, failure);
    auto output = device->allocate(0, rows * kOut * 4, failure);
    ASSERT_TRUE(input && output) << failure.message;
    std::memcpy(input->hostPointer(), x.data(), x.size() * 4);
    std::string sizes;
    if (entry == 0) {
      int64_t dynamic[2] = {rows, rows};
      sizes.assign(reinterpret_cast<const char *>(dynamic), sizeof(dynamic));
    }
    const uint32_t one[3] = {1, 1, 1};
    ASSERT_TRUE(queue->dispatch(*executable, entry, one,
                                {data.get(), input.get(), output.get()}, sizes,
                                failure))
        << failure.message;
    ASSERT_TRUE(queue->finish(failure)) << failure.message;
    const float *y = static_cast<const float *>(output->hostPointer());
    for (int64_t row = 0; row < rows; ++row) {
      std::vector<float> xRow(x.begin() + row * kIn,
                              x.begin() + (row + 1) * kIn);
      std::vector<double> a =
          c.int8 && !floatWeights ? roundedActivations(xRow)
                 : std::vector<double>(xRow.begin(), xRow.end());
      for (int64_t column = 0; column < kOut; ++column) {
        double sum = 0, magnitude = 0;
        for (int64_t k = 0; k < kIn; ++k) {
          double term = a[k] * decoded[column * kIn + k];
          sum += term;
          magnitude += std::fabs(term);
        }
        // Only the f32 summation order (and Q4_K's fused decode) differs.
        EXPECT_NEAR(y[row * kOut + column], sum, 2e-6 * magnitude)
            << "entry " << entry << ", row " << row << ", column " << column;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, CpuQuantizedMatmulTest,
    testing::Values(Case{BlockFormat::Q8_0, "q8_0", "avx512-vnni", true},
                    Case{BlockFormat::Q8_0, "q8_0", "avx512-vnni", true, 24},
                    Case{BlockFormat::Q4_0, "q4_0", "avx512-vnni", true},
                    Case{BlockFormat::Q4_0, "q4_0", "avx512-vnni", true, 24},
                    Case{BlockFormat::Q4_K, "q4_k", "avx512-vnni", true},
                    Case{BlockFormat::Q4_K, "q4_k", "avx512-vnni", true, 24},
                    Case{BlockFormat::Q6_K, "q6_k", "avx512-vnni", true},
                    Case{BlockFormat::Q6_K, "q6_k", "avx512-vnni", true, 24},
                    Case{BlockFormat::Q8_0, "q8_0", "x86-64-v4", false},
                    Case{BlockFormat::Q4_0, "q4_0", "x86-64-v4", false},
                    Case{BlockFormat::Q4_K, "q4_k", "x86-64-v4", false},
                    Case{BlockFormat::Q6_K, "q6_k", "x86-64-v4", false},
                    Case{BlockFormat::Q4_K, "q4_k", "x86-64-v3", false},
                    Case{BlockFormat::Q5_K, "q5_k", "avx512-vnni", true},
                    Case{BlockFormat::Q5_K, "q5_k", "x86-64-v4", false},
                    Case{BlockFormat::Q5_K, "q5_k", "x86-64-v3", false},
                    Case{BlockFormat::Q2_K, "q2_k", "x86-64-v4", false},
                    Case{BlockFormat::Q3_K, "q3_k", "x86-64-v4", false},
                    Case{BlockFormat::Q2_K, "q2_k", "x86-64-v3", false},
                    Case{BlockFormat::Q3_K, "q3_k", "x86-64-v3", false},
                    Case{BlockFormat::F16, "f16", "avx512-vnni", true, 24, 8192},
                    Case{BlockFormat::F32, "f32", "avx512-vnni", true, 24, 8192},
                    Case{BlockFormat::F16, "f16", "x86-64-v3", false, 24, 8192}),
    caseName);
