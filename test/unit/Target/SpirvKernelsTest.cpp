// The SPIR-V kernel library (lib/Target/SPIRV/kernels/Kernels.mlir): it
// compiles through hetc's SPIR-V pipeline into one module that SPIRV-Tools
// validates for Vulkan 1.2, and every kernel computes, on every device that
// runs SPIR-V, what the CPU computes: shapes that are not multiples of the
// workgroup sizes, Q8_0 weights quantized by the runtime's own encoder, and
// f16 scales across the whole range (subnormal, negative, largest).
#include "hetc/Target/SPIRV.h"
#include "SpirvTestSupport.h"
#include "hetrt/hetrt.hpp"
#include "runtime/core/ProgramSession.h"
#include "runtime/format/Quantize.h"
#include "runtime/hal/Device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>

namespace {

using namespace hetc::target::spirv;

/// Whether `device` runs `compiled`, as the runtime decides it.
bool runsVariant(const hetrt::hal::Device &device,
                 const SpirvExecutable &compiled, std::string &why) {
  hetrt::format::SpirvCode code;
  hetrt::format::SpirvLibrary library;
  library.version = compiled.requirements.version;
  library.capabilities = compiled.requirements.capabilities;
  library.extensions = compiled.requirements.extensions;
  code.libraries = {library};
  return hetrt::core::chooseSpirvLibrary(code, device.info().spirv, why);
}

class SpirvLibraryVariant : public ::testing::TestWithParam<const char *> {};

TEST_P(SpirvLibraryVariant, IsValidVulkanSpirvWithEveryKernel) {
  const SpirvExecutable &compiled = hetc::test::kernelLibrary(GetParam());
  std::map<std::string, int> bindings;
  for (const SpirvKernel &kernel : compiled.kernels)
    bindings[kernel.entryPoint] = kernel.bindings;
  EXPECT_EQ(bindings, (std::map<std::string, int>{{"add_f32", 4},
                                                  {"add_rms_norm_f32", 6},
                                                  {"attention_combine_f32", 3},
                                                  {"attention_f32", 6},
                                                  {"get_rows_bytes", 4},
                                                  {"get_rows_f32", 4},
                                                  {"get_rows_q8_0", 4},
                                                  {"kv_append_f32", 6},
                                                  {"matmul_bf16", 4},
                                                  {"matmul_f16", 4},
                                                  {"matmul_f32", 4},
                                                  {"matmul3_bytes", 8},
                                                  {"matmul3_f32", 8},
                                                  {"matmul_glu_bytes", 5},
                                                  {"matmul_glu_f32", 5},
                                                  {"matmul_k_quant", 4},
                                                  {"matmul_mfma_bytes", 4},
                                                  {"matmul_mma_bytes", 4},
                                                  {"matmul_q4_0", 4},
                                                  {"matmul_q8_0", 4},
                                                  {"matmul_tiled_bytes", 4},
                                                  {"matmul_tiled_f32", 4},
                                                  {"rms_norm_f32", 4},
                                                  {"rope_f32", 4},
                                                  {"rope_kv_append_f32", 7},
                                                  {"silu_mul_f32", 4}}));
  std::string messages;
  EXPECT_TRUE(hetc::test::validatesForVulkan12(compiled.binary, messages))
      << messages;
  // What the module declares it needs: the portable variant nothing past
  // Shader; the subgroup variant subgroup arithmetic, which the runtime
  // checks against the device.
  const std::vector<std::string> &capabilities =
      compiled.requirements.capabilities;
  bool subgroup = std::string(GetParam()) == "subgroup";
  EXPECT_EQ(std::count(capabilities.begin(), capabilities.end(),
                       "GroupNonUniformArithmetic"),
            subgroup ? 1 : 0);
  EXPECT_EQ(std::count(capabilities.begin(), capabilities.end(), "Shader"), 1);
  EXPECT_EQ(compiled.requirements.version, subgroup ? "1.3" : "1.0");
}

INSTANTIATE_TEST_SUITE_P(Variants, SpirvLibraryVariant,
                         ::testing::Values("portable", "subgroup"));

/// Runs the library's kernels on one device.
class KernelRunner {
public:
  KernelRunner(hetrt::hal::Device &device, const SpirvExecutable &compiled)
      : device_(device) {
    std::vector<hetrt::hal::KernelSignature> signatures;
    for (const SpirvKernel &kernel : compiled.kernels) {
      index_[kernel.entryPoint] = static_cast<int>(signatures.size());
      signatures.push_back({kernel.entryPoint, kernel.bindings, 0});
    }
    executable_ = device.loadExecutable(hetrt::hal::ExecutableFormat::SpirV,
                                        compiled.binary, signatures, error_);
    queue_ = device.createQueue(error_);
  }

  bool ready() const { return executable_ && queue_; }
  const std::string &error() const { return error_.message; }

  /// A buffer holding `bytes`, padded to whole 32-bit words (narrower
  /// elements are read as words on devices without 8-bit storage).
  std::shared_ptr<hetrt::hal::Buffer> upload(const void *bytes, size_t size) {
    size_t padded = (size + 3) / 4 * 4;
    std::shared_ptr<hetrt::hal::Buffer> buffer =
        device_.allocate(0, padded, error_);
    EXPECT_TRUE(buffer) << error_.message;
    if (!buffer)
      return nullptr;
    std::vector<char> staged(padded, 0);
    std::memcpy(staged.data(), bytes, size);
    // The queue reads `staged` when the write runs: wait for it.
    EXPECT_TRUE(queue_->write(staged.data(), *buffer, 0, padded, error_) &&
                queue_->finish(error_))
        << error_.message;
    return buffer;
  }
  template <typename T>
  std::shared_ptr<hetrt::hal::Buffer> upload(const std::vector<T> &values) {
    return upload(values.data(), values.size() * sizeof(T));
  }

  /// Dispatches `kernel` over `groups` and returns `outputCount` floats of
  /// its buffer `output` (the third by default).
  std::vector<float> run(const std::string &kernel,
                         std::array<uint32_t, 3> groups,
                         std::vector<hetrt::hal::Buffer *> buffers,
                         size_t outputCount, size_t output = 2) {
    std::vector<float> out(outputCount, std::nanf(""));
    EXPECT_TRUE(queue_->dispatch(*executable_, index_.at(kernel), groups.data(),
                                 buffers, "", error_))
        << kernel << ": " << error_.message;
    EXPECT_TRUE(queue_->read(*buffers[output], 0, out.data(), outputCount * 4,
                             error_));
    EXPECT_TRUE(queue_->finish(error_)) << kernel << ": " << error_.message;
    return out;
  }

private:
  hetrt::hal::Device &device_;
  hetrt::hal::Error error_;
  std::shared_ptr<hetrt::hal::Executable> executable_;
  std::unique_ptr<hetrt::hal::Queue> queue_;
  std::map<std::string, int> index_;
};

std::vector<float> randomValues(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &value : values)
    value = distribution(generator);
  return values;
}

int32_t floatBits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

/// Runs `body` on every device that runs SPIR-V; skips with the reasons
/// when there is none.
template <typename Body> void onEveryDevice(Body body) {
  hetc::test::onEverySpirvDevice([&](hetrt::hal::Device &device) {
    // Each variant of the library the device runs; every device runs the
    // portable one.
    for (llvm::StringRef variant : kernelLibraryVariants()) {
      const SpirvExecutable &compiled = hetc::test::kernelLibrary(variant);
      std::string why;
      if (!runsVariant(device, compiled, why)) {
        EXPECT_NE(variant, "portable") << why;
        continue;
      }
      SCOPED_TRACE(variant.str() + " variant");
      KernelRunner runner(device, compiled);
      ASSERT_TRUE(runner.ready()) << runner.error();
      body(runner);
    }
  });
}

/// `actual` within `relative` of `expected`, measured against `scale` (the
/// magnitude of the terms summed, so cancellation does not demand more
/// precision than f32 accumulation has).
void expectClose(const std::vector<float> &actual,
                 const std::vector<double> &expected,
                 const std::vector<double> &scale, double relative,
                 const char *what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], relative * std::max(1e-30, scale[i]))
        << what << " element " << i;
}

// 200 columns, and 24: fewer than the workgroup's 64 threads, so most
// threads add nothing to the row's sum. (The empty loops' initial values are
// checked where lavapipe shows them lost: matmul_f16 with K = 8, and the
// SPIR-V conversion's lit test.)
class RmsNorm : public ::testing::TestWithParam<int> {};

TEST_P(RmsNorm, MatchesTheCpu) {
  constexpr int rows = 3;
  const int cols = GetParam();
  constexpr float eps = 1e-5f;
  std::vector<float> x = randomValues(rows * cols, 1);
  std::vector<float> w = randomValues(cols, 2);
  std::vector<double> expected(rows * cols), scale(rows * cols);
  for (int r = 0; r < rows; ++r) {
    double squares = 0;
    for (int c = 0; c < cols; ++c)
      squares += double(x[r * cols + c]) * x[r * cols + c];
    double factor = 1.0 / std::sqrt(squares / cols + eps);
    for (int c = 0; c < cols; ++c) {
      expected[r * cols + c] = x[r * cols + c] * factor * w[c];
      scale[r * cols + c] = std::abs(expected[r * cols + c]);
    }
  }
  onEveryDevice([&](KernelRunner &runner) {
    auto bx = runner.upload(x), bw = runner.upload(w);
    auto by = runner.upload(std::vector<float>(rows * cols, 0.0f));
    auto params = runner.upload(std::vector<int32_t>{cols, floatBits(eps)});
    std::vector<float> y = runner.run("rms_norm_f32", {rows, 1, 1},
                                      {bx.get(), bw.get(), by.get(),
                                       params.get()},
                                      rows * cols);
    expectClose(y, expected, scale, 1e-5, "rms_norm_f32");
  });
}

INSTANTIATE_TEST_SUITE_P(Columns, RmsNorm, ::testing::Values(200, 24));

// The residual add fused with the RMSNorm of its sum writes the sum as
// add_f32 does and the normalized rows as rms_norm_f32 does on that sum,
// bit for bit: the fusion changes no token.
TEST_P(RmsNorm, FusedWithItsResidualAddMatchesTheTwoKernels) {
  constexpr int rows = 3;
  const int cols = GetParam();
  constexpr float eps = 1e-5f;
  std::vector<float> a = randomValues(rows * cols, 3),
                     b = randomValues(rows * cols, 4),
                     w = randomValues(cols, 5);
  onEveryDevice([&](KernelRunner &runner) {
    auto ba = runner.upload(a), bb = runner.upload(b), bw = runner.upload(w);
    auto bs = runner.upload(std::vector<float>(rows * cols, 0.0f));
    auto by = runner.upload(std::vector<float>(rows * cols, 0.0f));
    auto params = runner.upload(std::vector<int32_t>{cols, floatBits(eps)});
    std::vector<hetrt::hal::Buffer *> fused = {ba.get(), bb.get(), bw.get(),
                                               bs.get(), by.get(),
                                               params.get()};
    std::vector<float> sums =
        runner.run("add_rms_norm_f32", {rows, 1, 1}, fused, rows * cols, 3);
    std::vector<float> normed =
        runner.run("add_rms_norm_f32", {rows, 1, 1}, fused, rows * cols, 4);
    auto count = runner.upload(std::vector<int32_t>{rows * cols});
    auto separateSums = runner.upload(std::vector<float>(rows * cols, 0.0f));
    const uint32_t groups = (rows * cols + 255) / 256;
    EXPECT_EQ(sums, runner.run("add_f32", {groups, 1, 1},
                               {ba.get(), bb.get(), separateSums.get(),
                                count.get()},
                               rows * cols));
    auto separateNormed = runner.upload(std::vector<float>(rows * cols, 0.0f));
    EXPECT_EQ(normed, runner.run("rms_norm_f32", {rows, 1, 1},
                                 {separateSums.get(), bw.get(),
                                  separateNormed.get(), params.get()},
                                 rows * cols));
  });
}

TEST(SpirvKernels, ElementwiseKernelsMatchTheCpu) {
  constexpr int count = 1000;
  std::vector<float> a = randomValues(count, 3), b = randomValues(count, 4);
  for (float &value : a)
    value *= 12.0f; // SiLU over its curved range and its tails
  std::vector<double> sum(count), gated(count), sumScale(count),
      gatedScale(count);
  for (int i = 0; i < count; ++i) {
    sum[i] = double(a[i]) + b[i];
    sumScale[i] = std::abs(a[i]) + std::abs(b[i]);
    gated[i] = a[i] / (1.0 + std::exp(-double(a[i]))) * b[i];
    gatedScale[i] = std::abs(gated[i]);
  }
  onEveryDevice([&](KernelRunner &runner) {
    auto ba = runner.upload(a), bb = runner.upload(b);
    auto by = runner.upload(std::vector<float>(count, 0.0f));
    auto params = runner.upload(std::vector<int32_t>{count});
    std::array<uint32_t, 3> groups = {(count + 255) / 256, 1, 1};
    expectClose(runner.run("add_f32", groups,
                           {ba.get(), bb.get(), by.get(), params.get()}, count),
                sum, sumScale, 1e-7, "add_f32");
    expectClose(runner.run("silu_mul_f32", groups,
                           {ba.get(), bb.get(), by.get(), params.get()}, count),
                gated, gatedScale, 1e-5, "silu_mul_f32");
  });
}

/// y = x · wᵀ in double, and the sum of |terms| of each element.
void referenceMatmul(const std::vector<float> &x, const std::vector<float> &w,
                     int n, int k, int m, std::vector<double> &y,
                     std::vector<double> &scale) {
  y.assign(n * m, 0.0);
  scale.assign(n * m, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j)
      for (int l = 0; l < k; ++l) {
        double term = double(x[i * k + l]) * w[j * k + l];
        y[i * m + j] += term;
        scale[i * m + j] += std::abs(term);
      }
}

/// matmul_f32 over x (n by k) and w (m by k) of seeded random values, with
/// the CPU's result to check it against.
struct F32Product {
  int n, k, m;
  std::vector<float> x, w;
  std::vector<double> expected, scale;

  F32Product(int n, int k, int m, uint32_t seed)
      : n(n), k(k), m(m), x(randomValues(n * k, seed)),
        w(randomValues(m * k, seed + 1)) {
    referenceMatmul(x, w, n, k, m, expected, scale);
  }

  /// Runs the product over `groups` and checks every output; leaves its
  /// buffers in `buffers` (x, w, y) for more runs.
  void check(KernelRunner &runner, std::array<uint32_t, 3> groups,
             std::vector<std::shared_ptr<hetrt::hal::Buffer>> &buffers) const {
    buffers = {runner.upload(x), runner.upload(w),
               runner.upload(std::vector<float>(n * m, 0.0f))};
    auto params = runner.upload(std::vector<int32_t>{n, k, m, 0});
    expectClose(runner.run("matmul_f32", groups,
                           {buffers[0].get(), buffers[1].get(),
                            buffers[2].get(), params.get()},
                           n * m),
                expected, scale, 1e-5, "matmul_f32");
  }
};

TEST(SpirvKernels, MatmulF32MatchesTheCpu) {
  constexpr int n = 3, k = 200, m = 37;
  const F32Product product(n, k, m, 5);
  onEveryDevice([&](KernelRunner &runner) {
    std::vector<std::shared_ptr<hetrt::hal::Buffer>> buffers;
    product.check(runner, {m, n, 1}, buffers);
    // The last row alone, as the logits read it.
    auto lastRow = runner.upload(std::vector<int32_t>{1, k, m, n - 1});
    expectClose(runner.run("matmul_f32", {m, 1, 1},
                           {buffers[0].get(), buffers[1].get(),
                            buffers[2].get(), lastRow.get()},
                           m),
                std::vector<double>(product.expected.end() - m,
                                    product.expected.end()),
                std::vector<double>(product.scale.end() - m,
                                    product.scale.end()),
                1e-5, "matmul_f32 of the last row");
  });
}

TEST(SpirvKernels, TiledMatmulMatchesTheCpuOnRaggedTiles) {
  // Sizes that fill no 16x16 tile or 16-wide slice of K exactly, and rows
  // read from past the start of x (x_row).
  constexpr int n = 37, k = 70, m = 45, skipped = 2;
  std::vector<float> x = randomValues((n + skipped) * k, 7),
                     w = randomValues(m * k, 8);
  std::vector<float> rows(x.begin() + skipped * k, x.end());
  std::vector<double> expected, scale;
  referenceMatmul(rows, w, n, k, m, expected, scale);
  onEveryDevice([&](KernelRunner &runner) {
    auto bx = runner.upload(x), bw = runner.upload(w);
    auto by = runner.upload(std::vector<float>(n * m, 0.0f));
    auto params = runner.upload(std::vector<int32_t>{n, k, m, skipped});
    expectClose(runner.run("matmul_tiled_f32", {(m + 15) / 16, (n + 15) / 16, 1},
                           {bx.get(), bw.get(), by.get(), params.get()}, n * m),
                expected, scale, 1e-5, "matmul_tiled_f32");
  });
}

TEST(SpirvKernels, MatmulQ8_0MatchesTheCpu) {
  using hetrt::format::BlockFormat;
  constexpr int n = 2, k = 256, m = 19;
  std::vector<float> x = randomValues(n * k, 7), original = randomValues(m * k, 8);
  std::optional<std::vector<uint8_t>> quantized =
      hetrt::format::quantizeMatrix(BlockFormat::Q8_0, original.data(), m, k);
  ASSERT_TRUE(quantized);
  // The reference reads the weights as the CPU back end does: dequantized
  // bit-identically to ggml.
  std::vector<float> w(m * k);
  size_t rowBytes = quantized->size() / m;
  for (int j = 0; j < m; ++j)
    ASSERT_TRUE(hetrt::format::dequantizeRow(
        BlockFormat::Q8_0, quantized->data() + j * rowBytes, k, &w[j * k]));
  std::vector<double> expected, scale;
  referenceMatmul(x, w, n, k, m, expected, scale);
  onEveryDevice([&](KernelRunner &runner) {
    auto bx = runner.upload(x), bw = runner.upload(*quantized);
    auto by = runner.upload(std::vector<float>(n * m, 0.0f));
    auto params = runner.upload(std::vector<int32_t>{n, k, m, 0});
    expectClose(runner.run("matmul_q8_0", {m, n, 1},
                           {bx.get(), bw.get(), by.get(), params.get()}, n * m),
                expected, scale, 1e-5, "matmul_q8_0");
  });
}

TEST(SpirvKernels, Q8_0ScalesWidenExactlyAcrossTheF16Range) {
  // One row per scale: 32 quants of 1 (and one of -128 at the end), times
  // x = 1, so each output is 31 * scale - 128 * scale = -97 * scale exactly.
  const uint16_t scales[] = {0x3c00, 0x0001, 0x03ff, 0x0400, 0x8400,
                             0x7bff, 0xfbff, 0x0000, 0x3555};
  constexpr int k = 32;
  const int m = static_cast<int>(std::size(scales));
  std::vector<uint8_t> w;
  std::vector<double> expected, scale;
  for (uint16_t bits : scales) {
    w.push_back(static_cast<uint8_t>(bits & 0xff));
    w.push_back(static_cast<uint8_t>(bits >> 8));
    for (int i = 0; i < 31; ++i)
      w.push_back(1);
    w.push_back(0x80);
    double value = hetrt::format::fp16ToFp32(bits);
    expected.push_back(-97.0 * value);
    scale.push_back(std::abs(159.0 * value));
  }
  std::vector<float> x(k, 1.0f);
  onEveryDevice([&](KernelRunner &runner) {
    auto bx = runner.upload(x), bw = runner.upload(w);
    auto by = runner.upload(std::vector<float>(m, 0.0f));
    auto params = runner.upload(std::vector<int32_t>{1, k, m, 0});
    std::vector<float> y = runner.run(
        "matmul_q8_0", {static_cast<uint32_t>(m), 1, 1},
        {bx.get(), bw.get(), by.get(), params.get()}, m);
    for (int j = 0; j < m; ++j)
      EXPECT_EQ(y[j], static_cast<float>(expected[j]))
          << "scale bits 0x" << std::hex << scales[j];
  });
}

TEST(SpirvKernels, GetRowsCopyAndDequantizeTheTable) {
  using hetrt::format::BlockFormat;
  constexpr int vocab = 10, cols = 96;
  std::vector<float> table = randomValues(vocab * cols, 9);
  std::vector<int32_t> ids = {3, 0, 9, 3};
  const int tokens = static_cast<int>(ids.size());
  std::optional<std::vector<uint8_t>> quantized =
      hetrt::format::quantizeMatrix(BlockFormat::Q8_0, table.data(), vocab, cols);
  ASSERT_TRUE(quantized);
  size_t rowBytes = quantized->size() / vocab;
  std::vector<float> exact, dequantized(tokens * cols);
  for (int t = 0; t < tokens; ++t) {
    exact.insert(exact.end(), table.begin() + ids[t] * cols,
                 table.begin() + (ids[t] + 1) * cols);
    ASSERT_TRUE(hetrt::format::dequantizeRow(
        BlockFormat::Q8_0, quantized->data() + ids[t] * rowBytes, cols,
        &dequantized[t * cols]));
  }
  onEveryDevice([&](KernelRunner &runner) {
    auto bt = runner.upload(table), bq = runner.upload(*quantized);
    auto bi = runner.upload(ids);
    auto by = runner.upload(std::vector<float>(tokens * cols, 0.0f));
    auto params = runner.upload(std::vector<int32_t>{cols});
    std::array<uint32_t, 3> groups = {static_cast<uint32_t>(tokens), 1, 1};
    EXPECT_EQ(runner.run("get_rows_f32", groups,
                         {bt.get(), bi.get(), by.get(), params.get()},
                         tokens * cols),
              exact);
    EXPECT_EQ(runner.run("get_rows_q8_0", groups,
                         {bq.get(), bi.get(), by.get(), params.get()},
                         tokens * cols),
              dequantized);
  });
}

TEST(SpirvKernels, RopeRotatesPairsAsTheCpuDoes) {
  // Partial rotary dimensions (12 of 16) in both pairings; the angles come
  // from the host's table, so only the rotation itself is compared.
  constexpr int tokens = 3, heads = 2, dim = 16, rotary = 12, half = rotary / 2;
  std::vector<float> x = randomValues(tokens * heads * dim, 10);
  std::vector<float> table(tokens * (dim / 2) * 2);
  for (int t = 0; t < tokens; ++t)
    for (int j = 0; j < dim / 2; ++j) {
      float angle = (t + 5) * std::pow(10000.0f, -2.0f * j / rotary);
      table[(t * (dim / 2) + j) * 2] = std::cos(angle);
      table[(t * (dim / 2) + j) * 2 + 1] = std::sin(angle);
    }
  for (int mode : {0, 1}) {
    SCOPED_TRACE(mode ? "neox" : "normal");
    std::vector<double> expected(x.size()), scale(x.size());
    for (int t = 0; t < tokens; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < dim; ++i) {
          size_t at = (t * heads + h) * dim + i;
          if (i >= rotary) {
            expected[at] = x[at];
            scale[at] = std::abs(x[at]);
            continue;
          }
          bool first = mode ? i < half : i % 2 == 0;
          int partner = mode ? (first ? i + half : i - half) : (i ^ 1);
          int pair = mode ? i % half : i / 2;
          double c = table[(t * (dim / 2) + pair) * 2];
          double sn = table[(t * (dim / 2) + pair) * 2 + 1];
          double other = x[(t * heads + h) * dim + partner];
          expected[at] = x[at] * c + (first ? -other : other) * sn;
          scale[at] = std::abs(x[at] * c) + std::abs(other * sn);
        }
    onEveryDevice([&](KernelRunner &runner) {
      auto bx = runner.upload(x), bt = runner.upload(table);
      auto by = runner.upload(std::vector<float>(x.size(), 0.0f));
      auto params =
          runner.upload(std::vector<int32_t>{heads, dim, rotary, mode});
      expectClose(runner.run("rope_f32", {tokens, heads, 1},
                             {bx.get(), bt.get(), by.get(), params.get()},
                             x.size()),
                  expected, scale, 1e-6, "rope_f32");
    });
  }
}

// The fused append rotates the keys as it writes them: the cache holds
// exactly what rope_f32 then kv_append_f32 write (the same arithmetic), in
// both pairings, with partial rotary dimensions, two heads and tokens
// written out of order into swapped blocks.
TEST(SpirvKernels, RopeKvAppendWritesWhatRopeThenAppendWrite) {
  constexpr int context = 8, heads = 2, dim = 16, rotary = 12,
                row = heads * dim, blockSize = 4;
  std::vector<int32_t> positions = {5, 2, 7};
  std::vector<int32_t> blocks = {1, 0};
  const int tokens = static_cast<int>(positions.size());
  std::vector<float> keys = randomValues(tokens * row, 13);
  std::vector<float> values = randomValues(tokens * row, 14);
  std::vector<float> table(tokens * (dim / 2) * 2);
  for (int t = 0; t < tokens; ++t)
    for (int j = 0; j < dim / 2; ++j) {
      float angle = (positions[t] + 1) * std::pow(10000.0f, -2.0f * j / rotary);
      table[(t * (dim / 2) + j) * 2] = std::cos(angle);
      table[(t * (dim / 2) + j) * 2 + 1] = std::sin(angle);
    }
  for (int mode : {0, 1})
    for (int format : {0, 1}) {
      SCOPED_TRACE(std::string(mode ? "neox" : "normal") +
                   (format ? ", f16 cache" : ", f32 cache"));
      onEveryDevice([&](KernelRunner &runner) {
        auto bk = runner.upload(keys), bv = runner.upload(values);
        auto bt = runner.upload(table), bp = runner.upload(positions);
        auto rotated = runner.upload(std::vector<float>(keys.size(), 0.0f));
        auto ropeParams =
            runner.upload(std::vector<int32_t>{heads, dim, rotary, mode});
        std::vector<float> rotatedKeys = runner.run(
            "rope_f32", {static_cast<uint32_t>(tokens), heads, 1},
            {bk.get(), bt.get(), rotated.get(), ropeParams.get()}, keys.size());
        auto separate =
            runner.upload(std::vector<float>(2 * context * row, -1.0f));
        auto appendParams = runner.upload(
            std::vector<int32_t>{row, context, blockSize, 0, format});
        auto rk = runner.upload(rotatedKeys);
        auto bb = runner.upload(blocks);
        std::vector<float> expected =
            runner.run("kv_append_f32", {static_cast<uint32_t>(tokens), 1, 1},
                       {rk.get(), bv.get(), bp.get(), bb.get(), separate.get(),
                        appendParams.get()},
                       2 * context * row, 4);
        auto fused =
            runner.upload(std::vector<float>(2 * context * row, -1.0f));
        auto fusedParams = runner.upload(std::vector<int32_t>{
            row, context, dim, rotary, mode, blockSize, 0, format});
        std::vector<float> written = runner.run(
            "rope_kv_append_f32", {static_cast<uint32_t>(tokens), 1, 1},
            {bk.get(), bt.get(), bv.get(), bp.get(), bb.get(), fused.get(),
             fusedParams.get()},
            2 * context * row, 5);
        // As bits: a word of two halves may read as a NaN float.
        std::vector<uint32_t> writtenBits(written.size()),
            expectedBits(expected.size());
        std::memcpy(writtenBits.data(), written.data(), written.size() * 4);
        std::memcpy(expectedBits.data(), expected.data(), expected.size() * 4);
        EXPECT_EQ(writtenBits, expectedBits);
      });
    }
}

/// The slot of logical position `p` in a cache paged in blocks of
/// `blockSize` through `table` (the kernels' layout).
int pagedSlot(const std::vector<int32_t> &table, int blockSize, int p) {
  return table[p / blockSize] * blockSize + p % blockSize;
}

/// A permutation of `blocks` block ids that moves every block: logical
/// block b is pool block (b * step + 1) mod blocks, `step` coprime with it.
std::vector<int32_t> scrambledTable(int blocks, int step) {
  std::vector<int32_t> table(blocks);
  for (int b = 0; b < blocks; ++b)
    table[b] = (b * step + 1) % blocks;
  return table;
}

/// `dense` ([2, context, row], positions in order) laid out as a paged
/// cache of the same slots, through `table`.
std::vector<float> pageCache(const std::vector<float> &dense, int context,
                             int row, int blockSize,
                             const std::vector<int32_t> &table) {
  std::vector<float> paged(dense.size());
  for (int part = 0; part < 2; ++part)
    for (int p = 0; p < context; ++p)
      std::copy_n(&dense[(part * context + p) * row], row,
                  &paged[(part * context + pagedSlot(table, blockSize, p)) *
                         row]);
  return paged;
}

TEST(SpirvKernels, KvAppendWritesEachTokenAtItsPositionsSlot) {
  // Blocks of 2 slots in a scrambled order, and a batch whose tokens have
  // block tables of their own (a row each, table_stride 4).
  constexpr int context = 8, row = 70, blockSize = 2;
  std::vector<int32_t> positions = {5, 2, 7};
  const int tokens = static_cast<int>(positions.size());
  std::vector<float> keys = randomValues(tokens * row, 11);
  std::vector<float> values = randomValues(tokens * row, 12);
  std::vector<int32_t> shared = scrambledTable(context / blockSize, 3);
  std::vector<int32_t> rows = {0, 1, 2, 3, 3, 2, 1, 0, 2, 0, 3, 1};
  for (bool perToken : {false, true}) {
    SCOPED_TRACE(perToken ? "a table per token" : "one table");
    std::vector<float> expected(2 * context * row, -1.0f);
    for (int t = 0; t < tokens; ++t) {
      std::vector<int32_t> table =
          perToken ? std::vector<int32_t>(rows.begin() + 4 * t,
                                          rows.begin() + 4 * t + 4)
                   : shared;
      int slot = pagedSlot(table, blockSize, positions[t]);
      for (int i = 0; i < row; ++i) {
        expected[slot * row + i] = keys[t * row + i];
        expected[(context + slot) * row + i] = values[t * row + i];
      }
    }
    onEveryDevice([&](KernelRunner &runner) {
      auto bk = runner.upload(keys), bv = runner.upload(values);
      auto bp = runner.upload(positions);
      auto bb = runner.upload(perToken ? rows : shared);
      auto cache = runner.upload(std::vector<float>(2 * context * row, -1.0f));
      auto params = runner.upload(
          std::vector<int32_t>{row, context, blockSize, perToken ? 4 : 0, 0});
      EXPECT_EQ(runner.run("kv_append_f32",
                           {static_cast<uint32_t>(tokens), 1, 1},
                           {bk.get(), bv.get(), bp.get(), bb.get(), cache.get(),
                            params.get()},
                           expected.size(), 4),
                expected);
    });
  }
}

/// The IEEE half nearest `value`, ties to even (the compiler's conversion).
uint16_t halfBits(float value) {
  _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, 2);
  return bits;
}

float widenHalf(uint16_t bits) {
  _Float16 half;
  std::memcpy(&half, &bits, 2);
  return static_cast<float>(half);
}

/// The bfloat16 nearest `value`, ties to even (ggml's conversion); a NaN is
/// the quiet 0x7fc0 the CPU's code writes.
uint16_t bfloatBits(float value) {
  return std::isnan(value) ? 0x7fc0 : hetrt::format::fp32ToBf16(value);
}

float widenBfloat(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

/// The kernels' 16-bit cache formats (@cache_element): 1 IEEE halves, 2
/// bfloat16.
uint16_t sixteenBits(int format, float value) {
  return format == 2 ? bfloatBits(value) : halfBits(value);
}

float widenSixteen(int format, uint16_t bits) {
  return format == 2 ? widenBfloat(bits) : widenHalf(bits);
}

/// `values` as a 16-bit cache's words: two halves each, the lower first.
std::vector<uint32_t> packHalves(const std::vector<float> &values,
                                 int format = 1) {
  std::vector<uint32_t> words(values.size() / 2);
  for (size_t w = 0; w < words.size(); ++w)
    words[w] = sixteenBits(format, values[2 * w]) |
               (static_cast<uint32_t>(sixteenBits(format, values[2 * w + 1]))
                << 16);
  return words;
}

/// Appends into a 16-bit cache of `format` write the compiler's rounding
/// of every value (`specials` among them).
void expectSixteenBitAppends(int format, const std::vector<float> &specials) {
  constexpr int context = 8, heads = 2, dim = 16, row = heads * dim,
                blockSize = 4;
  std::vector<int32_t> positions = {5, 2, 7};
  const int tokens = static_cast<int>(positions.size());
  std::vector<float> keys = randomValues(tokens * row, 21);
  std::vector<float> values = randomValues(tokens * row, 22);
  for (size_t i = 0; i < specials.size(); ++i)
    values[3 + i] = specials[i];
  std::vector<int32_t> blocks = {1, 0};
  std::vector<uint32_t> expected(context * row, 0xdeadbeef);
  for (int t = 0; t < tokens; ++t) {
    int slot = (blocks[positions[t] / blockSize] * blockSize +
                positions[t] % blockSize);
    std::vector<float> k(keys.begin() + t * row, keys.begin() + (t + 1) * row);
    std::vector<float> v(values.begin() + t * row,
                         values.begin() + (t + 1) * row);
    std::vector<uint32_t> kw = packHalves(k, format),
                          vw = packHalves(v, format);
    std::copy(kw.begin(), kw.end(), expected.begin() + slot * row / 2);
    std::copy(vw.begin(), vw.end(),
              expected.begin() + (context + slot) * row / 2);
  }
  onEveryDevice([&](KernelRunner &runner) {
    auto bk = runner.upload(keys), bv = runner.upload(values);
    auto bp = runner.upload(positions), bb = runner.upload(blocks);
    auto cache =
        runner.upload(std::vector<uint32_t>(context * row, 0xdeadbeef));
    auto params = runner.upload(
        std::vector<int32_t>{row, context, blockSize, 0, format});
    std::vector<float> written = runner.run(
        "kv_append_f32", {static_cast<uint32_t>(tokens), 1, 1},
        {bk.get(), bv.get(), bp.get(), bb.get(), cache.get(), params.get()},
        expected.size(), 4);
    std::vector<uint32_t> words(written.size());
    std::memcpy(words.data(), written.data(), words.size() * 4);
    EXPECT_EQ(words, expected);
  });
}

TEST(SpirvKernels, KvAppendIntoAnF16CacheRoundsAsTheCpuDoes) {
  // Values that round up, down and to even, past the largest half (to
  // infinity), into its subnormals and below them (to zero), a NaN and
  // both zeros.
  expectSixteenBitAppends(
      1, {65504.0f, 65520.0f, 70000.0f, -1e9f, 6.0e-8f, 2.9e-8f, 1e-12f,
          -0.0f, 0.0f, 1.0009765625f, 1.00048828125f, 1.00146484375f,
          std::nanf(""), 3e-5f});
}

TEST(SpirvKernels, KvAppendIntoABf16CacheRoundsAsTheCpuDoes) {
  // Values that round up, down and to even (ties at 1 + 2^-8 and 1 + 3 *
  // 2^-8), past the largest bfloat16 (to infinity), subnormals kept (not
  // flushed), a NaN of either sign and both zeros.
  EXPECT_EQ(bfloatBits(1.00390625f), 0x3f80); // a tie, to the even below
  EXPECT_EQ(bfloatBits(1.01171875f), 0x3f82); // a tie, to the even above
  EXPECT_EQ(bfloatBits(3.4e38f), 0x7f80);     // past the largest: infinity
  EXPECT_EQ(bfloatBits(1e-39f), 0x000b);      // a subnormal, kept
  expectSixteenBitAppends(
      2, {1.00390625f, 1.01171875f, 1.005f, 3.3961e38f, 3.4e38f, -3.4e38f,
          1e-39f, -1e-40f, 1.4e-45f, -0.0f, 0.0f, std::nanf(""),
          -std::nanf(""), 65520.0f});
}

/// attention_f32 over a paged cache (`cache`: its words) for `tokens`
/// queries of `heads` heads, one workgroup per (token, head), with
/// `params`; the output, as many floats as `q`.
template <typename Word>
std::vector<float> runAttention(KernelRunner &runner,
                                const std::vector<float> &q,
                                const std::vector<Word> &cache,
                                const std::vector<int32_t> &positions,
                                const std::vector<int32_t> &table,
                                uint32_t tokens, uint32_t heads,
                                const std::vector<int32_t> &params) {
  auto bq = runner.upload(q), bc = runner.upload(cache);
  auto bp = runner.upload(positions), bb = runner.upload(table);
  auto bo = runner.upload(std::vector<float>(q.size(), 0.0f));
  auto bparams = runner.upload(params);
  return runner.run("attention_f32", {tokens, heads, 1},
                    {bq.get(), bc.get(), bp.get(), bb.get(), bo.get(),
                     bparams.get()},
                    q.size(), 4);
}

/// Grouped attention in double: each query over the keys its position may
/// see, with the sum of |terms| of each output for the tolerance.
void referenceAttention(const std::vector<float> &q,
                        const std::vector<float> &cache,
                        const std::vector<int32_t> &positions, int heads,
                        int kvHeads, int dim, int context, int keyCount,
                        bool causal, std::vector<double> &out,
                        std::vector<double> &scale) {
  int tokens = static_cast<int>(positions.size());
  int row = kvHeads * dim, group = heads / kvHeads;
  out.assign(q.size(), 0.0);
  scale.assign(q.size(), 0.0);
  for (int t = 0; t < tokens; ++t)
    for (int h = 0; h < heads; ++h) {
      int limit = causal ? std::min(positions[t] + 1, keyCount) : keyCount;
      const float *query = &q[(t * heads + h) * dim];
      std::vector<double> scores(limit);
      double largest = -INFINITY;
      for (int p = 0; p < limit; ++p) {
        double dot = 0;
        for (int d = 0; d < dim; ++d)
          dot += double(query[d]) * cache[p * row + (h / group) * dim + d];
        scores[p] = dot / std::sqrt(double(dim));
        largest = std::max(largest, scores[p]);
      }
      double sum = 0;
      for (double &score : scores)
        sum += (score = std::exp(score - largest));
      for (int d = 0; d < dim; ++d)
        for (int p = 0; p < limit; ++p) {
          double term = scores[p] / sum *
                        cache[(context + p) * row + (h / group) * dim + d];
          out[(t * heads + h) * dim + d] += term;
          scale[(t * heads + h) * dim + d] += std::abs(term);
        }
    }
}

TEST(SpirvKernels, AttentionMatchesTheCpuOverManyChunks) {
  // 150 keys (three chunks of 64, the last partial), two query heads per
  // key head, head sizes below and above the workgroup's 64 threads; causal
  // queries at the end of the prefix and one attending to everything.
  constexpr int heads = 4, kvHeads = 2, context = 200, keyCount = 150;
  std::vector<int32_t> positions = {147, 148, 149, 3};
  const int tokens = static_cast<int>(positions.size());
  for (int dim : {40, 96}) {
    for (bool causal : {true, false}) {
      SCOPED_TRACE("head_dim " + std::to_string(dim) +
                   (causal ? ", causal" : ", full"));
      std::vector<float> q = randomValues(tokens * heads * dim, 13);
      for (float &value : q)
        value *= 4.0f; // peaked softmax rows, as trained models have
      std::vector<float> cache = randomValues(2 * context * kvHeads * dim, 14);
      std::vector<double> expected, scale;
      referenceAttention(q, cache, positions, heads, kvHeads, dim, context,
                         keyCount, causal, expected, scale);
      float attentionScale = 1.0f / std::sqrt(static_cast<float>(dim));
      // Blocks of 8 slots (so a chunk of 64 keys spans several) in a
      // scrambled order.
      std::vector<int32_t> table = scrambledTable(context / 8, 7);
      std::vector<float> paged =
          pageCache(cache, context, kvHeads * dim, 8, table);
      onEveryDevice([&](KernelRunner &runner) {
        expectClose(
            runAttention(runner, q, paged, positions, table,
                         static_cast<uint32_t>(tokens), heads,
                         {heads, kvHeads, dim, context, keyCount,
                          floatBits(attentionScale), causal ? 1 : 0, 0, 8, 0,
                          0}),
            expected, scale, 1e-5, "attention_f32");
      });
    }
  }
}

TEST(SpirvKernels, AttentionOfABatchReadsEachTokensOwnBlockTable) {
  // Two sequences in one pool of 2 x 8 blocks of 8 slots, each token of the
  // batch (one per sequence, as a batched decode step has) attending over
  // its own sequence through its own table row (table_stride 8).
  constexpr int heads = 4, kvHeads = 2, dim = 40, perSequence = 64,
                slots = 2 * perSequence, blockSize = 8;
  constexpr int row = kvHeads * dim;
  std::vector<int32_t> positions = {40, 61};
  std::vector<float> q = randomValues(2 * heads * dim, 25);
  for (float &value : q)
    value *= 4.0f;
  std::vector<std::vector<float>> dense = {
      randomValues(2 * perSequence * row, 26),
      randomValues(2 * perSequence * row, 27)};
  // Sequence 0 takes the even blocks in reverse, sequence 1 the odd ones.
  std::vector<int32_t> tables(2 * 8);
  for (int b = 0; b < 8; ++b) {
    tables[b] = 2 * (7 - b);
    tables[8 + b] = 2 * b + 1;
  }
  std::vector<float> pool(2 * slots * row, 0.0f);
  for (int s = 0; s < 2; ++s)
    for (int part = 0; part < 2; ++part)
      for (int p = 0; p < perSequence; ++p) {
        int slot = tables[s * 8 + p / blockSize] * blockSize + p % blockSize;
        std::copy_n(&dense[s][(part * perSequence + p) * row], row,
                    &pool[(part * slots + slot) * row]);
      }
  std::vector<double> expected, scale;
  for (int s = 0; s < 2; ++s) {
    std::vector<float> query(q.begin() + s * heads * dim,
                             q.begin() + (s + 1) * heads * dim);
    std::vector<double> out, bound;
    referenceAttention(query, dense[s], {positions[s]}, heads, kvHeads, dim,
                       perSequence, positions[s] + 1, /*causal=*/true, out,
                       bound);
    expected.insert(expected.end(), out.begin(), out.end());
    scale.insert(scale.end(), bound.begin(), bound.end());
  }
  float attentionScale = 1.0f / std::sqrt(static_cast<float>(dim));
  onEveryDevice([&](KernelRunner &runner) {
    expectClose(runAttention(runner, q, pool, positions, tables, 2, heads,
                             {heads, kvHeads, dim, slots, perSequence,
                              floatBits(attentionScale), 1, 0, blockSize, 8,
                              0}),
                expected, scale, 1e-5, "batched attention");
  });
}

/// Attention over a 16-bit cache of `format`: the reference attends over
/// the same rounded values.
void expectSixteenBitAttention(int format) {
  constexpr int heads = 4, kvHeads = 2, context = 200, keyCount = 150,
                dim = 40;
  std::vector<int32_t> positions = {147, 3};
  const int tokens = static_cast<int>(positions.size());
  std::vector<float> q = randomValues(tokens * heads * dim, 23);
  for (float &value : q)
    value *= 4.0f;
  std::vector<float> cache = randomValues(2 * context * kvHeads * dim, 24);
  for (float &value : cache)
    value = widenSixteen(format, sixteenBits(format, value));
  std::vector<double> expected, scale;
  referenceAttention(q, cache, positions, heads, kvHeads, dim, context,
                     keyCount, /*causal=*/true, expected, scale);
  std::vector<int32_t> table = scrambledTable(context / 8, 7);
  std::vector<uint32_t> paged =
      packHalves(pageCache(cache, context, kvHeads * dim, 8, table), format);
  float attentionScale = 1.0f / std::sqrt(static_cast<float>(dim));
  onEveryDevice([&](KernelRunner &runner) {
    expectClose(runAttention(runner, q, paged, positions, table,
                             static_cast<uint32_t>(tokens), heads,
                             {heads, kvHeads, dim, context, keyCount,
                              floatBits(attentionScale), 1, 0, 8, 0, format}),
                expected, scale, 1e-5,
                format == 2 ? "attention_f32 over bf16"
                            : "attention_f32 over f16");
  });
}

TEST(SpirvKernels, AttentionOverAnF16CacheMatchesTheCpu) {
  expectSixteenBitAttention(1);
}

TEST(SpirvKernels, AttentionOverABf16CacheMatchesTheCpu) {
  expectSixteenBitAttention(2);
}

TEST(SpirvKernels, DecodeAttentionSplitOverTheContextMatchesTheCpu) {
  // One token over 150 keys in splits of 64 (three, the last partial) and
  // of 128 (two), merged by the combine kernel; and a position before most
  // keys, so the later splits hold no key at all.
  constexpr int heads = 4, kvHeads = 2, context = 200, keyCount = 150,
                dim = 40;
  float attentionScale = 1.0f / std::sqrt(static_cast<float>(dim));
  for (int position : {149, 20}) {
    for (int perSplit : {64, 128}) {
      SCOPED_TRACE("position " + std::to_string(position) + ", splits of " +
                   std::to_string(perSplit));
      std::vector<int32_t> positions = {position};
      std::vector<float> q = randomValues(heads * dim, 19);
      for (float &value : q)
        value *= 4.0f;
      std::vector<float> cache = randomValues(2 * context * kvHeads * dim, 20);
      std::vector<double> expected, scale;
      referenceAttention(q, cache, positions, heads, kvHeads, dim, context,
                         keyCount, /*causal=*/true, expected, scale);
      const int splits = (keyCount + perSplit - 1) / perSplit;
      // Blocks of 100 slots, more than a split takes, swapped.
      std::vector<int32_t> table = {1, 0};
      std::vector<float> paged =
          pageCache(cache, context, kvHeads * dim, 100, table);
      onEveryDevice([&](KernelRunner &runner) {
        auto bq = runner.upload(q), bc = runner.upload(paged);
        auto bp = runner.upload(positions), bb = runner.upload(table);
        auto partial = runner.upload(
            std::vector<float>(heads * splits * (dim + 2), 0.0f));
        auto bo = runner.upload(std::vector<float>(q.size(), 0.0f));
        auto params = runner.upload(std::vector<int32_t>{
            heads, kvHeads, dim, context, keyCount, floatBits(attentionScale),
            1, perSplit, 100, 0, 0});
        runner.run("attention_f32",
                   {1, heads, static_cast<uint32_t>(splits)},
                   {bq.get(), bc.get(), bp.get(), bb.get(), partial.get(),
                    params.get()},
                   1, 4);
        auto combine = runner.upload(std::vector<int32_t>{heads, dim, splits});
        expectClose(runner.run("attention_combine_f32", {1, heads, 1},
                               {partial.get(), bo.get(), combine.get()},
                               q.size(), 1),
                    expected, scale, 1e-5, "split attention");
      });
    }
  }
}

/// Weights of `format` as the file stores them, and as the CPU reads them.
struct EncodedWeights {
  std::vector<uint8_t> bytes;
  std::vector<float> decoded;
};

EncodedWeights encodeWeights(hetrt::format::BlockFormat format,
                             const std::vector<float> &values, int rows,
                             int cols) {
  EncodedWeights encoded;
  std::optional<std::vector<uint8_t>> bytes =
      hetrt::format::quantizeMatrix(format, values.data(), rows, cols);
  EXPECT_TRUE(bytes);
  if (!bytes)
    return encoded;
  encoded.bytes = std::move(*bytes);
  encoded.decoded.resize(values.size());
  size_t rowBytes = encoded.bytes.size() / rows;
  for (int r = 0; r < rows; ++r)
    EXPECT_TRUE(hetrt::format::dequantizeRow(
        format, encoded.bytes.data() + r * rowBytes, cols,
        &encoded.decoded[r * cols]));
  return encoded;
}

TEST(SpirvKernels, MatmulsOfEveryWeightFormatMatchTheCpu) {
  using hetrt::format::BlockFormat;
  // K = 512: whole blocks of every format, K-quants' 256 included.
  constexpr int n = 2, k = 512, m = 13;
  std::vector<float> x = randomValues(n * k, 15), original = randomValues(m * k, 16);
  struct Case {
    BlockFormat format;
    const char *kernel;
    /// The K-quant kernel's format parameter, else 0 (none).
    int code;
  };
  for (Case c : {Case{BlockFormat::F16, "matmul_f16", 0},
                 Case{BlockFormat::BF16, "matmul_bf16", 0},
                 Case{BlockFormat::Q4_0, "matmul_q4_0", 0},
                 Case{BlockFormat::Q4_K, "matmul_k_quant", 4},
                 Case{BlockFormat::Q6_K, "matmul_k_quant", 5}}) {
    SCOPED_TRACE(std::string(c.kernel) + " " + std::to_string(c.code));
    EncodedWeights w = encodeWeights(c.format, original, m, k);
    std::vector<double> expected, scale;
    referenceMatmul(x, w.decoded, n, k, m, expected, scale);
    std::vector<int32_t> values = {n, k, m, 0};
    if (c.code)
      values.push_back(c.code);
    onEveryDevice([&](KernelRunner &runner) {
      auto bx = runner.upload(x), bw = runner.upload(w.bytes);
      auto by = runner.upload(std::vector<float>(n * m, 0.0f));
      auto params = runner.upload(values);
      expectClose(runner.run(c.kernel, {m, n, 1},
                             {bx.get(), bw.get(), by.get(), params.get()},
                             n * m),
                  expected, scale, 1e-5, c.kernel);
    });
  }
}

// The f16 and bf16 kernels take eight weights at a time when K is a
// multiple of 8 (one 128-bit load on NVIDIA and AMD GPUs) and one at a time
// otherwise: rows shorter than a pass of the workgroup, ragged passes and
// other K.
TEST(SpirvKernels, HalfWordMatmulsMatchTheCpuForEveryRowLength) {
  using hetrt::format::BlockFormat;
  for (auto [format, kernel] : {std::pair{BlockFormat::F16, "matmul_f16"},
                                std::pair{BlockFormat::BF16, "matmul_bf16"}})
    for (int k : {8, 100, 520, 1032}) {
      SCOPED_TRACE(std::string(kernel) + " K = " + std::to_string(k));
      constexpr int n = 3, m = 5;
      std::vector<float> x = randomValues(n * k, 21),
                         original = randomValues(m * k, 22);
      EncodedWeights w = encodeWeights(format, original, m, k);
      std::vector<double> expected, scale;
      referenceMatmul(x, w.decoded, n, k, m, expected, scale);
      std::vector<int32_t> values = {n, k, m, 0};
      const char *name = kernel;
      onEveryDevice([&](KernelRunner &runner) {
        auto bx = runner.upload(x), bw = runner.upload(w.bytes);
        auto by = runner.upload(std::vector<float>(n * m, 0.0f));
        auto params = runner.upload(values);
        expectClose(runner.run(name, {m, n, 1},
                               {bx.get(), bw.get(), by.get(), params.get()},
                               n * m),
                    expected, scale, 1e-5, name);
      });
    }
}

/// A decode product kernel and the weight format it reads (none: f32), with
/// the format's code where a kernel takes one.
struct DecodeProduct {
  const char *kernel;
  std::optional<hetrt::format::BlockFormat> format;
  int code;

  /// `values` (rows by k) as this product's kernel reads them.
  std::vector<uint8_t> weights(const std::vector<float> &values, int rows,
                               int k) const {
    if (format)
      return encodeWeights(*format, values, rows, k).bytes;
    std::vector<uint8_t> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  /// The kernel's parameters for one product of `rows` outputs.
  std::vector<int32_t> params(int n, int k, int rows) const {
    std::vector<int32_t> values = {n, k, rows, 0};
    if (code == 4 || code == 5)
      values.push_back(code);
    return values;
  }
};

const DecodeProduct kDecodeProducts[] = {
    {"matmul_f32", std::nullopt, 0},
    {"matmul_f16", hetrt::format::BlockFormat::F16, 1},
    {"matmul_bf16", hetrt::format::BlockFormat::BF16, 2},
    {"matmul_q4_0", hetrt::format::BlockFormat::Q4_0, 3},
    {"matmul_k_quant", hetrt::format::BlockFormat::Q4_K, 4},
    {"matmul_k_quant", hetrt::format::BlockFormat::Q6_K, 5},
    {"matmul_q8_0", hetrt::format::BlockFormat::Q8_0, 6}};

// The gated feed-forward's decode step in one dispatch gives what its two
// products and silu_mul_f32 give, bit for bit, for f32 weights and every
// byte format (the fusion changes no token).
TEST(SpirvKernels, FusedGatedProductsMatchTheProductsThenSiluMul) {
  constexpr int n = 1, k = 512, m = 13;
  std::vector<float> x = randomValues(n * k, 51);
  for (const DecodeProduct &c : kDecodeProducts) {
    SCOPED_TRACE(std::string(c.kernel) + " " + std::to_string(c.code));
    std::vector<uint8_t> gateBytes = c.weights(randomValues(m * k, 52), m, k),
                         upBytes = c.weights(randomValues(m * k, 53), m, k);
    std::vector<int32_t> fusedParams = {n, k, m, 0};
    if (c.format)
      fusedParams.push_back(c.code);
    const char *fused = c.format ? "matmul_glu_bytes" : "matmul_glu_f32";
    onEveryDevice([&](KernelRunner &runner) {
      auto bx = runner.upload(x), bg = runner.upload(gateBytes),
           bu = runner.upload(upBytes);
      auto gateOut = runner.upload(std::vector<float>(n * m, 0.0f));
      auto upOut = runner.upload(std::vector<float>(n * m, 0.0f));
      auto y = runner.upload(std::vector<float>(n * m, 0.0f));
      auto products = runner.upload(c.params(n, k, m));
      auto fusedParamBuffer = runner.upload(fusedParams);
      auto count = runner.upload(std::vector<int32_t>{n * m});
      runner.run(c.kernel, {m, n, 1},
                 {bx.get(), bg.get(), gateOut.get(), products.get()}, n * m);
      runner.run(c.kernel, {m, n, 1},
                 {bx.get(), bu.get(), upOut.get(), products.get()}, n * m);
      std::vector<float> separate =
          runner.run("silu_mul_f32", {1, 1, 1},
                     {gateOut.get(), upOut.get(), y.get(), count.get()}, n * m);
      auto fusedOut = runner.upload(std::vector<float>(n * m, 0.0f));
      std::vector<float> together =
          runner.run(fused, {m, n, 1},
                     {bx.get(), bg.get(), bu.get(), fusedOut.get(),
                      fusedParamBuffer.get()},
                     n * m, 3);
      EXPECT_EQ(together, separate);
    });
  }
}

// Three decode products of one input in one dispatch give what the three
// product kernels give, bit for bit: rows of different lengths (a query
// projection and smaller key and value ones), f32 and every byte format.
TEST(SpirvKernels, ThreeProductsInOneDispatchMatchTheProductKernels) {
  constexpr int n = 1, k = 512;
  const int rows[3] = {12, 4, 5};
  std::vector<float> x = randomValues(n * k, 61);
  for (const DecodeProduct &c : kDecodeProducts) {
    SCOPED_TRACE(std::string(c.kernel) + " " + std::to_string(c.code));
    std::vector<std::vector<uint8_t>> weights;
    for (int i = 0; i < 3; ++i)
      weights.push_back(
          c.weights(randomValues(rows[i] * k, 62 + i), rows[i], k));
    const int total = rows[0] + rows[1] + rows[2];
    std::vector<int32_t> tripleParams = {n, k, total, 0, rows[0], rows[1]};
    if (c.format)
      tripleParams.push_back(c.code);
    const char *triple = c.format ? "matmul3_bytes" : "matmul3_f32";
    onEveryDevice([&](KernelRunner &runner) {
      auto bx = runner.upload(x);
      std::shared_ptr<hetrt::hal::Buffer> bw[3], separate[3], together[3];
      for (int i = 0; i < 3; ++i) {
        bw[i] = runner.upload(weights[i]);
        separate[i] = runner.upload(std::vector<float>(n * rows[i], 0.0f));
        together[i] = runner.upload(std::vector<float>(n * rows[i], 0.0f));
      }
      auto params = runner.upload(tripleParams);
      for (int i = 0; i < 3; ++i) {
        auto single = runner.upload(c.params(n, k, rows[i]));
        const uint32_t outputs = rows[i], all = total;
        std::vector<float> expected = runner.run(
            c.kernel, {outputs, n, 1},
            {bx.get(), bw[i].get(), separate[i].get(), single.get()},
            n * rows[i]);
        std::vector<float> actual = runner.run(
            triple, {all, n, 1},
            {bx.get(), bw[0].get(), bw[1].get(), bw[2].get(),
             together[0].get(), together[1].get(), together[2].get(),
             params.get()},
            n * rows[i], 4 + i);
        EXPECT_EQ(actual, expected) << "output " << i;
      }
    });
  }
}

// A vocabulary of 128256 rows is more workgroups than one grid axis takes:
// the rows go on along z, and the last slice's extra workgroups repeat the
// last row (writing the same value).
TEST(SpirvKernels, DecodeProductsPastOneGridAxisMatchTheCpu) {
  const F32Product product(1, 8, 70000, 31);
  onEveryDevice([&](KernelRunner &runner) {
    std::vector<std::shared_ptr<hetrt::hal::Buffer>> buffers;
    product.check(runner, {65535, 1, 2}, buffers);
  });
}

/// Every byte format the tiled and matrix-unit products read, with the
/// code their parameters give it.
const std::pair<hetrt::format::BlockFormat, int> kByteFormats[] = {
    {hetrt::format::BlockFormat::F16, 1},  {hetrt::format::BlockFormat::BF16, 2},
    {hetrt::format::BlockFormat::Q4_0, 3}, {hetrt::format::BlockFormat::Q4_K, 4},
    {hetrt::format::BlockFormat::Q6_K, 5}, {hetrt::format::BlockFormat::Q8_0, 6}};

TEST(SpirvKernels, TiledMatmulsOfEveryByteFormatMatchTheCpu) {
  using hetrt::format::BlockFormat;
  // Rows and outputs that fill no 16x16 tile; K = 512 holds whole blocks of
  // every format, the K-quants' 256 included.
  constexpr int n = 21, k = 512, m = 19;
  std::vector<float> x = randomValues(n * k, 17), original = randomValues(m * k, 18);
  for (auto [format, formatCode] : kByteFormats) {
    const int code = formatCode;
    SCOPED_TRACE("format " + std::to_string(code));
    EncodedWeights w = encodeWeights(format, original, m, k);
    std::vector<double> expected, scale;
    referenceMatmul(x, w.decoded, n, k, m, expected, scale);
    onEveryDevice([&](KernelRunner &runner) {
      auto bx = runner.upload(x), bw = runner.upload(w.bytes);
      auto by = runner.upload(std::vector<float>(n * m, 0.0f));
      auto params = runner.upload(std::vector<int32_t>{n, k, m, 0, code});
      expectClose(runner.run("matmul_tiled_bytes",
                             {(m + 15) / 16, (n + 15) / 16, 1},
                             {bx.get(), bw.get(), by.get(), params.get()},
                             n * m),
                  expected, scale, 1e-5, "matmul_tiled_bytes");
    });
  }
}

/// `values` rounded to f16 (to nearest even) and back.
std::vector<float> roundedToHalf(const std::vector<float> &values) {
  std::vector<float> rounded(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    rounded[i] = static_cast<float>(static_cast<_Float16>(values[i]));
  return rounded;
}

// The matrix-unit products, NVIDIA's (16x8x16 fragments of 32 lanes) and
// AMD's (16x16x16 of 64 lanes), with their products emulated through
// workgroup memory (the helpers' portable forms, each layout's definition):
// x and w are rounded to f16 as they are staged, so the reference rounds
// them too, and the sums are f32. Tiles of 64x64 left ragged on both sides,
// rows read from past the start of x, and every byte format (f16 through
// its 128-bit path, the others dequantized).
TEST(SpirvKernels, MatrixUnitMatmulsMatchTheCpuOnHalfRoundedInputs) {
  using hetrt::format::BlockFormat;
  constexpr int n = 70, k = 256, m = 75, skipped = 1;
  std::vector<float> x = randomValues((n + skipped) * k, 41),
                     original = randomValues(m * k, 42);
  std::vector<float> rows(x.begin() + skipped * k, x.end());
  for (auto [format, formatCode] : kByteFormats) {
    const int code = formatCode;
    EncodedWeights w = encodeWeights(format, original, m, k);
    std::vector<double> expected, scale;
    referenceMatmul(roundedToHalf(rows), roundedToHalf(w.decoded), n, k, m,
                    expected, scale);
    for (const char *kernel : {"matmul_mma_bytes", "matmul_mfma_bytes"}) {
      SCOPED_TRACE(std::string(kernel) + " format " + std::to_string(code));
      onEveryDevice([&](KernelRunner &runner) {
        auto bx = runner.upload(x), bw = runner.upload(w.bytes);
        auto by = runner.upload(std::vector<float>(n * m, 0.0f));
        auto params =
            runner.upload(std::vector<int32_t>{n, k, m, skipped, code});
        expectClose(runner.run(kernel, {(m + 63) / 64, (n + 63) / 64, 1},
                               {bx.get(), bw.get(), by.get(), params.get()},
                               n * m),
                    expected, scale, 1e-5, kernel);
      });
    }
  }
}

TEST(SpirvKernels, GetRowsDequantizeEveryByteFormat) {
  using hetrt::format::BlockFormat;
  constexpr int vocab = 7, cols = 512;
  std::vector<float> table = randomValues(vocab * cols, 17);
  std::vector<int32_t> ids = {6, 0, 3};
  const int tokens = static_cast<int>(ids.size());
  for (auto [format, formatCode] : {std::pair<BlockFormat, int>{BlockFormat::F16, 1},
                              {BlockFormat::BF16, 2},
                              {BlockFormat::Q4_0, 3},
                              {BlockFormat::Q4_K, 4},
                              {BlockFormat::Q6_K, 5}}) {
    const int code = formatCode;
    SCOPED_TRACE(code);
    EncodedWeights w = encodeWeights(format, table, vocab, cols);
    std::vector<float> expected;
    for (int32_t id : ids)
      expected.insert(expected.end(), w.decoded.begin() + id * cols,
                      w.decoded.begin() + (id + 1) * cols);
    onEveryDevice([&](KernelRunner &runner) {
      auto bt = runner.upload(w.bytes), bi = runner.upload(ids);
      auto by = runner.upload(std::vector<float>(tokens * cols, 0.0f));
      auto params = runner.upload(std::vector<int32_t>{cols, code});
      EXPECT_EQ(runner.run("get_rows_bytes",
                           {static_cast<uint32_t>(tokens), 1, 1},
                           {bt.get(), bi.get(), by.get(), params.get()},
                           tokens * cols),
                expected);
    });
  }
}

} // namespace

// The public C API's executables and dispatch (through its C++ wrapper), as
// an embedder uses them: the library loaded on each Vulkan device, a kernel
// dispatched over buffers it wrote, and misuse refused with the reason.
TEST(SpirvKernelsThroughTheCApi, ALoadedKernelRunsAndMisuseIsRefused) {
  using namespace hetrt::api;
  Status status;
  std::vector<DeviceInfo> devices;
  ASSERT_TRUE(listDevices(devices, status)) << status.message;
  const SpirvExecutable &compiled = hetc::test::kernelLibrary("portable");
  std::vector<KernelSignature> kernels;
  for (const SpirvKernel &kernel : compiled.kernels)
    kernels.push_back({kernel.entryPoint, kernel.bindings, 0});
  // The CPU runs no SPIR-V.
  EXPECT_FALSE(Executable::load(0, HETRT_EXECUTABLE_SPIRV, compiled.binary,
                                kernels, status));
  EXPECT_EQ(status.code, HETRT_UNSUPPORTED) << status.message;
  EXPECT_FALSE(Executable::load(0, static_cast<hetrt_executable_format_t>(9),
                                compiled.binary, kernels, status));
  EXPECT_NE(status.message.find("format 9"), std::string::npos)
      << status.message;
  int ran = 0;
  for (const DeviceInfo &device : devices) {
    if (device.kind != "vulkan")
      continue;
    SCOPED_TRACE(device.name);
    std::unique_ptr<Executable> executable = Executable::load(
        device.index, HETRT_EXECUTABLE_SPIRV, compiled.binary, kernels, status);
    ASSERT_TRUE(executable) << status.message;
    std::unique_ptr<Queue> queue = Queue::create(device.index, status);
    ASSERT_TRUE(queue) << status.message;
    constexpr int count = 300;
    std::vector<float> a = randomValues(count, 5), b = randomValues(count, 6);
    std::vector<std::unique_ptr<Buffer>> buffers;
    for (uint64_t bytes : {4 * count, 4 * count, 4 * count, 4})
      buffers.push_back(Buffer::create(device.index, 0, bytes, status));
    for (const auto &buffer : buffers)
      ASSERT_TRUE(buffer) << status.message;
    const int32_t params[1] = {count};
    ASSERT_TRUE(queue->write(a.data(), *buffers[0], 0, 4 * count, status));
    ASSERT_TRUE(queue->write(b.data(), *buffers[1], 0, 4 * count, status));
    ASSERT_TRUE(queue->write(params, *buffers[3], 0, 4, status));
    const uint32_t groups[3] = {(count + 255) / 256, 1, 1};
    std::vector<Buffer *> bindings = {buffers[0].get(), buffers[1].get(),
                                      buffers[2].get(), buffers[3].get()};
    int32_t add = executable->kernelIndex("add_f32");
    ASSERT_GE(add, 0);
    ASSERT_TRUE(queue->dispatch(*executable, add, groups, bindings, "", status))
        << status.message;
    std::vector<float> sum(count);
    ASSERT_TRUE(queue->read(*buffers[2], 0, sum.data(), 4 * count, status));
    ASSERT_TRUE(queue->finish(status)) << status.message;
    for (int i = 0; i < count; ++i)
      ASSERT_EQ(sum[i], a[i] + b[i]) << i;
    // A kernel the executable lacks, and a queue of another device.
    EXPECT_FALSE(queue->dispatch(*executable, 1000, groups, bindings, "",
                                 status));
    EXPECT_NE(status.message.find("kernel 1000 is outside"), std::string::npos)
        << status.message;
    std::unique_ptr<Queue> cpuQueue = Queue::create(0, status);
    ASSERT_TRUE(cpuQueue) << status.message;
    EXPECT_FALSE(cpuQueue->dispatch(*executable, add, groups, bindings, "",
                                    status));
    EXPECT_NE(status.message.find("load it on the queue's device"),
              std::string::npos)
        << status.message;
    ++ran;
  }
  if (ran == 0)
    GTEST_SKIP() << "no Vulkan device on this machine";
}
