// Unit tests of the llm WorkOpInterface (FLOPs and bytes for the cost model) and
// of the block-format storage sizes it is built on.
#include "dialects/llm/LLMDialect.h"
#include "dialects/llm/LLMOps.h"
#include "dialects/llm/LLMShapes.h"
#include "abi/BlockFormats.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace hetc::llm;

namespace {

class WorkInterfaceTest : public ::testing::Test {
protected:
  WorkInterfaceTest() {
    context.loadDialect<LLMDialect, func::FuncDialect, arith::ArithDialect>();
  }

  /// Parses `body` as the body of a function taking `args` (after the
  /// module-level `declarations`), and returns the work of its first op of
  /// type `OpT`.
  template <typename OpT>
  OpWork workOf(const std::string &args, const std::string &body,
                WorkContext workContext, const std::string &declarations = "") {
    std::string source = declarations + "\nfunc.func @f(" + args + ") {\n" +
                         body + "\n  return\n}\n";
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << "failed to parse:\n" << source;
    if (!module)
      return {};
    OpT op;
    module->walk([&](OpT found) {
      if (!op)
        op = found;
    });
    EXPECT_TRUE(op) << "no op of the expected kind in:\n" << source;
    if (!op)
      return {};
    return cast<WorkOpInterface>(op.getOperation()).getWork(workContext);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST(BlockFormatsTest, LayoutsMatchGgml) {
  using hetrt::format::BlockFormat;
  using hetrt::format::blockLayout;
  EXPECT_EQ(blockLayout(BlockFormat::Q8_0).blockSize, 32);
  EXPECT_EQ(blockLayout(BlockFormat::Q8_0).bytesPerBlock, 34);
  EXPECT_EQ(blockLayout(BlockFormat::Q4_0).blockSize, 32);
  EXPECT_EQ(blockLayout(BlockFormat::Q4_0).bytesPerBlock, 18);
  EXPECT_EQ(blockLayout(BlockFormat::Q4_K).blockSize, 256);
  EXPECT_EQ(blockLayout(BlockFormat::Q4_K).bytesPerBlock, 144);
  EXPECT_EQ(blockLayout(BlockFormat::Q6_K).blockSize, 256);
  EXPECT_EQ(blockLayout(BlockFormat::Q6_K).bytesPerBlock, 210);
  EXPECT_EQ(blockLayout(BlockFormat::F16).bytesPerBlock, 2);
  EXPECT_EQ(blockLayout(BlockFormat::BF16).bytesPerBlock, 2);
  EXPECT_EQ(blockLayout(BlockFormat::F32).bytesPerBlock, 4);
  EXPECT_EQ(hetrt::format::storageBytes(BlockFormat::Q4_0, 33), std::nullopt);
  EXPECT_EQ(hetrt::format::blockFormatFromTypeId(3), std::nullopt);
  EXPECT_EQ(hetrt::format::blockFormatFromTypeId(12), BlockFormat::Q4_K);
}

TEST_F(WorkInterfaceTest, QuantTypeKnowsItsBlocks) {
  auto q4k = QuantType::get(&context, QuantFormat::q4_k);
  EXPECT_EQ(q4k.getBlockSize(), 256);
  EXPECT_EQ(q4k.getBytesPerBlock(), 144);
  EXPECT_EQ(getStorageBytes(q4k, 4096), 4096 / 256 * 144);
  EXPECT_EQ(getStorageBytes(q4k, 100), std::nullopt);
}

TEST_F(WorkInterfaceTest, EveryLLMOpReportsWork) {
  Dialect *dialect = context.getLoadedDialect<LLMDialect>();
  int numOps = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (&name.getDialect() != dialect)
      continue;
    ++numOps;
    EXPECT_TRUE(name.hasInterface<WorkOpInterface>())
        << name.getStringRef().str() << " does not implement WorkOpInterface";
  }
  EXPECT_GE(numOps, 20);
}

// The worked example: a 4096×4096 Q4_0 matmul reads exactly
// 4096·4096/32·18 weight bytes.
TEST_F(WorkInterfaceTest, Q4_0MatmulReadsExactWeightBytes) {
  OpWork work = workOf<MatmulOp>(
      "%x: tensor<?x4096xf32>, %w: tensor<4096x4096x!llm.quant<q4_0>>",
      "%y = llm.matmul %x, %w : (tensor<?x4096xf32>, "
      "tensor<4096x4096x!llm.quant<q4_0>>) -> tensor<?x4096xf32>",
      {/*numTokens=*/1, /*contextLength=*/1});
  const int64_t weightBytes = int64_t{4096} * 4096 / 32 * 18;
  EXPECT_EQ(work.weightBytesRead, weightBytes);
  EXPECT_EQ(work.bytesRead, weightBytes + 4096 * 4);
  EXPECT_EQ(work.bytesWritten, 4096 * 4);
  EXPECT_EQ(work.flops, int64_t{2} * 4096 * 4096);
}

TEST_F(WorkInterfaceTest, MatmulScalesWithTokensButReadsWeightsOnce) {
  OpWork work = workOf<MatmulOp>(
      "%x: tensor<?x4096xf32>, %w: tensor<11008x4096x!llm.quant<q6_k>>",
      "%y = llm.matmul %x, %w : (tensor<?x4096xf32>, "
      "tensor<11008x4096x!llm.quant<q6_k>>) -> tensor<?x11008xf32>",
      {/*numTokens=*/128, /*contextLength=*/128});
  EXPECT_EQ(work.weightBytesRead, int64_t{11008} * 4096 / 256 * 210);
  EXPECT_EQ(work.flops, int64_t{2} * 128 * 11008 * 4096);
  EXPECT_EQ(work.bytesWritten, int64_t{128} * 11008 * 4);
}

TEST_F(WorkInterfaceTest, EmbeddingReadsOnlyTheGatheredRows) {
  OpWork work = workOf<EmbeddingOp>(
      "%t: tensor<?xi32>, %table: tensor<32000x4096x!llm.quant<q8_0>>",
      "%x = llm.embedding %t, %table : (tensor<?xi32>, "
      "tensor<32000x4096x!llm.quant<q8_0>>) -> tensor<?x4096xf32>",
      {/*numTokens=*/7, /*contextLength=*/7});
  EXPECT_EQ(work.weightBytesRead, 7 * (4096 / 32 * 34));
  EXPECT_EQ(work.bytesRead, 7 * (4096 / 32 * 34) + 7 * 4);
  EXPECT_EQ(work.bytesWritten, 7 * 4096 * 4);
}

// Decode: one query per head over the whole cache; the cache is read once for
// all query heads of a group.
TEST_F(WorkInterfaceTest, DecodeAttentionReadsTheCacheOnce) {
  OpWork work = workOf<AttentionOp>(
      "%q: tensor<?x32x128xf32>, %c: !llm.kv_cache<capacity = 8192, kvHeads = "
      "8, headDim = 128, elementType = f16>, %p: tensor<?xi32>",
      "%o = llm.attention %q, %c at %p causal : (tensor<?x32x128xf32>, "
      "!llm.kv_cache<capacity = 8192, kvHeads = 8, headDim = 128, elementType "
      "= f16>, tensor<?xi32>) -> tensor<?x32x128xf32>",
      {/*numTokens=*/1, /*contextLength=*/1000});
  EXPECT_EQ(work.flops, int64_t{1000} * 32 * (4 * 128 + 5));
  EXPECT_EQ(work.bytesRead,
            int64_t{2} * 1000 * 8 * 128 * 2 + 32 * 128 * 4 + 4);
  EXPECT_EQ(work.weightBytesRead, 0);
}

// Causal prefill of 4 tokens from an empty cache scores 1+2+3+4 keys per head;
// a sliding window of 2 caps each query at 2 keys.
TEST_F(WorkInterfaceTest, CausalPrefillAndSlidingWindow) {
  const std::string args =
      "%q: tensor<?x2x8xf32>, %c: !llm.kv_cache<capacity = 64, kvHeads = 1, "
      "headDim = 8, elementType = f32>, %p: tensor<?xi32>";
  const std::string types = " : (tensor<?x2x8xf32>, !llm.kv_cache<capacity = "
                            "64, kvHeads = 1, headDim = 8, elementType = f32>, "
                            "tensor<?xi32>) -> tensor<?x2x8xf32>";
  OpWork causal =
      workOf<AttentionOp>(args, "%o = llm.attention %q, %c at %p causal" + types,
                          {/*numTokens=*/4, /*contextLength=*/4});
  EXPECT_EQ(causal.flops, int64_t{10} * 2 * (4 * 8 + 5));
  OpWork windowed = workOf<AttentionOp>(
      args, "%o = llm.attention %q, %c at %p causal window = 2" + types,
      {/*numTokens=*/4, /*contextLength=*/4});
  EXPECT_EQ(windowed.flops, int64_t{1 + 2 + 2 + 2} * 2 * (4 * 8 + 5));
  // Decoding at position 99 with a window of 2 reads only 2 cached positions.
  OpWork decode = workOf<AttentionOp>(
      args, "%o = llm.attention %q, %c at %p causal window = 2" + types,
      {/*numTokens=*/1, /*contextLength=*/100});
  EXPECT_EQ(decode.bytesRead, 2 * 2 * 8 * 4 + 2 * 8 * 4 + 4);
}

TEST_F(WorkInterfaceTest, QuantizedKVAppendWritesBlocks) {
  OpWork work = workOf<KVAppendOp>(
      "%k: tensor<?x8x128xf32>, %c: !llm.kv_cache<capacity = 4096, kvHeads = 8, "
      "headDim = 128, elementType = !llm.quant<q8_0>>, %p: tensor<?xi32>",
      "%c1 = llm.kv_append %k, %k into %c at %p : (tensor<?x8x128xf32>, "
      "tensor<?x8x128xf32>, !llm.kv_cache<capacity = 4096, kvHeads = 8, "
      "headDim = 128, elementType = !llm.quant<q8_0>>, tensor<?xi32>) -> "
      "!llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType "
      "= !llm.quant<q8_0>>",
      {/*numTokens=*/3, /*contextLength=*/3});
  EXPECT_EQ(work.bytesWritten, 2 * 3 * 8 * (128 / 32 * 34));
  EXPECT_EQ(work.bytesRead, 2 * 3 * 8 * 128 * 4 + 3 * 4);
}

// MoE decode reads only the selected experts; a long prefill touches them all.
TEST_F(WorkInterfaceTest, ExpertMatmulReadsOnlySelectedExperts) {
  const std::string args = "%x: tensor<?x4096xf32>, %w: "
                           "tensor<8x14336x4096x!llm.quant<q4_k>>, %i: "
                           "tensor<?x2xi32>";
  const std::string body =
      "%y = llm.expert_matmul %x, %w[%i] : (tensor<?x4096xf32>, "
      "tensor<8x14336x4096x!llm.quant<q4_k>>, tensor<?x2xi32>) -> "
      "tensor<?x2x14336xf32>";
  const int64_t expertBytes = int64_t{14336} * 4096 / 256 * 144;
  OpWork decode = workOf<ExpertMatmulOp>(args, body, {1, 100});
  EXPECT_EQ(decode.weightBytesRead, 2 * expertBytes);
  EXPECT_EQ(decode.flops, int64_t{2} * 2 * 14336 * 4096);
  OpWork prefill = workOf<ExpertMatmulOp>(args, body, {64, 64});
  EXPECT_EQ(prefill.weightBytesRead, 8 * expertBytes);
}

TEST_F(WorkInterfaceTest, LogitsOfLastTokenOnly) {
  OpWork work = workOf<LogitsOp>(
      "%h: tensor<?x2048xf32>, %w: tensor<128256x2048xf16>",
      "%l = llm.logits %h, %w : (tensor<?x2048xf32>, tensor<128256x2048xf16>) "
      "-> tensor<1x128256xf32>",
      {/*numTokens=*/50, /*contextLength=*/50});
  EXPECT_EQ(work.flops, int64_t{2} * 128256 * 2048);
  EXPECT_EQ(work.weightBytesRead, int64_t{128256} * 2048 * 2);
  EXPECT_EQ(work.bytesWritten, 128256 * 4);
}

TEST_F(WorkInterfaceTest, DeclarationsCostNothing) {
  OpWork work = workOf<GetWeightOp>(
      "", "%w = llm.get_weight @w : tensor<64xf32>", {1, 1},
      "llm.weight @w : tensor<64xf32>");
  EXPECT_EQ(work, OpWork{});
}

} // namespace
