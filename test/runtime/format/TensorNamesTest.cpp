// The tensor-name grammar (abi/TensorNames.h): every name of the llama family
// parses to its layer, role and part; anything else, including the names
// that once crashed a reader (a layer that is not a number, or past 32 bits),
// is refused without throwing.
#include "abi/TensorNames.h"

#include <gtest/gtest.h>

#include <string>

using namespace hetrt::format;

namespace {

TEST(TensorNamesTest, ParsesGlobalAndLayerTensors) {
  struct Case {
    const char *name;
    int64_t layer;
    TensorRole role;
    const char *part;
    bool bias;
  };
  const Case cases[] = {
      {"token_embd.weight", -1, TensorRole::Embedding, "token_embd", false},
      {"output.weight", -1, TensorRole::Output, "output", false},
      {"output_norm.weight", -1, TensorRole::OutputNorm, "output_norm", false},
      {"rope_freqs.weight", -1, TensorRole::RopeFactors, "rope_freqs", false},
      {"blk.0.attn_norm.weight", 0, TensorRole::Norm, "attn_norm", false},
      {"blk.12.attn_q.weight", 12, TensorRole::Attention, "attn_q", false},
      {"blk.3.attn_k.bias", 3, TensorRole::Attention, "attn_k", true},
      {"blk.79.ffn_down.weight", 79, TensorRole::Ffn, "ffn_down", false},
      {"blk.1.ffn_gate_inp.weight", 1, TensorRole::Router, "ffn_gate_inp", false},
      {"blk.31.ffn_up_exps.weight", 31, TensorRole::Experts, "ffn_up_exps", false},
      {"blk.2.attn_rot_embd.weight", 2, TensorRole::Unused, "attn_rot_embd", false},
      {"blk.2147483647.ffn_norm.weight", 2147483647, TensorRole::Norm, "ffn_norm", false},
  };
  for (const Case &c : cases) {
    std::optional<TensorName> parsed = parseTensorName(c.name);
    ASSERT_TRUE(parsed) << c.name;
    EXPECT_EQ(parsed->layer, c.layer) << c.name;
    EXPECT_EQ(parsed->role, c.role) << c.name;
    EXPECT_EQ(parsed->part, c.part) << c.name;
    EXPECT_EQ(parsed->bias, c.bias) << c.name;
  }
}

TEST(TensorNamesTest, RefusesNamesOutsideTheGrammar) {
  for (const char *name :
       {"", "blk.", "blk.a.weight_", "blk.a.attn_q.weight", "blk..attn_q.weight",
        "blk.01.attn_q.weight", "blk.2147483648.attn_q.weight",
        "blk.99999999999999999999999.attn_q.weight", "blk.0.attn_q",
        "blk.0.attn_qq.weight", "blk.0.attn_norm.bias", "blk.0.weight",
        "token_embd.bias", "output.weight.weight", "tok_embeddings.weight",
        "blk.0.attn_q.weight\n", "BLK.0.attn_q.weight", "blk.-1.attn_q.weight"})
    EXPECT_FALSE(parseTensorName(name)) << '"' << name << '"';
}

} // namespace
