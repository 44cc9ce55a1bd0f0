// The interleaved weight layout (abi/WeightLayout.h) and the CPU weights
// built from a code's table: the rewrite puts every byte where the layout
// says, leaves the rest of the file and the file itself alone, and a table
// that does not describe the file is refused with a message naming the
// weight.
#include "runtime/backends/cpu/CpuWeights.h"
#include "runtime/format/GgufWriter.h"
#include "runtime/format/WeightInterleave.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace hetrt;
using format::BlockFormat;
using format::WeightLayoutKind;

namespace {

constexpr int64_t kRows = 32, kBlocks = 3, kRowBytes = kBlocks * 18;

std::vector<uint8_t> randomBytes(size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<uint8_t> bytes(count);
  for (uint8_t &byte : bytes)
    byte = static_cast<uint8_t>(random());
  return bytes;
}

/// Interleaves kRows random rows of `blocks` blocks of `format`, calls
/// `check(source, group, r)` for every block of every row (the block in the
/// file's layout, the same block of its group in the new one, the row's
/// index in its group), then checks that the inverse restores the bytes.
template <typename Check>
void checkLayout(BlockFormat format, int64_t blockBytes, int64_t blocks,
                 unsigned seed, Check check) {
  int64_t rowBytes = blocks * blockBytes;
  std::vector<uint8_t> plain = randomBytes(kRows * rowBytes, seed);
  std::vector<uint8_t> mixed = plain;
  format::interleaveRows(WeightLayoutKind::InterleavedRows16, format,
                         mixed.data(), kRows, rowBytes);
  for (int64_t row = 0; row < kRows; ++row)
    for (int64_t block = 0; block < blocks; ++block) {
      SCOPED_TRACE("row " + std::to_string(row) + ", block " +
                   std::to_string(block));
      check(&plain[row * rowBytes + block * blockBytes],
            &mixed[(row / 16) * 16 * rowBytes + block * 16 * blockBytes],
            row % 16);
    }
  format::deinterleaveRows(WeightLayoutKind::InterleavedRows16, format,
                           mixed.data(), kRows, rowBytes);
  EXPECT_EQ(mixed, plain);
}

TEST(WeightInterleave, PlacesEveryQ4_0ByteAsTheLayoutSays) {
  checkLayout(BlockFormat::Q4_0, 18, kBlocks, 1,
              [](const uint8_t *source, const uint8_t *group, int64_t r) {
                // The f16 scale among the group's 16, then quant bytes
                // 4v..4v+3 in lane r of run v.
                EXPECT_EQ(group[2 * r], source[0]);
                EXPECT_EQ(group[2 * r + 1], source[1]);
                for (int64_t byte = 0; byte < 16; ++byte)
                  EXPECT_EQ(group[32 + (byte / 4) * 64 + 4 * r + byte % 4],
                            source[2 + byte])
                      << "byte " << byte;
              });
}

// F32, F16 and BF16 rows element-major: a "block" is one element, and
// element k of a group's 16 rows sits at k × 16 + r of the group.
TEST(WeightInterleave, PlacesEveryFloatElementAsTheLayoutSays) {
  for (auto [format, elementBytes] :
       {std::pair{BlockFormat::F32, int64_t(4)},
        std::pair{BlockFormat::F16, int64_t(2)},
        std::pair{BlockFormat::BF16, int64_t(2)}}) {
    SCOPED_TRACE("element bytes " + std::to_string(elementBytes));
    checkLayout(format, elementBytes, 40, 7,
                [&](const uint8_t *source, const uint8_t *group, int64_t r) {
                  EXPECT_EQ(std::memcmp(group + r * elementBytes, source,
                                        static_cast<size_t>(elementBytes)),
                            0);
                });
  }
}

TEST(WeightInterleave, PlacesEveryQ4_KByteAsTheLayoutSays) {
  checkLayout(BlockFormat::Q4_K, 144, 2, 4,
              [](const uint8_t *source, const uint8_t *group, int64_t r) {
                // d and dmin among the group's 16 each, scale byte j of all
                // rows together, then per sub-block pair c and run v, bytes
                // 4v..4v+3 of the pair's 32 in lane r.
                for (int64_t half = 0; half < 2; ++half) {
                  EXPECT_EQ(group[2 * r + half], source[half]);
                  EXPECT_EQ(group[32 + 2 * r + half], source[2 + half]);
                }
                for (int64_t j = 0; j < 12; ++j)
                  EXPECT_EQ(group[64 + 16 * j + r], source[4 + j]);
                for (int64_t byte = 0; byte < 128; ++byte)
                  EXPECT_EQ(group[256 + (byte / 32) * 512 +
                                  ((byte % 32) / 4) * 64 + 4 * r + byte % 4],
                            source[16 + byte])
                      << "byte " << byte;
              });
}

TEST(WeightInterleave, PlacesEveryQ6_KCodeAsTheLayoutSays) {
  checkLayout(
      BlockFormat::Q6_K, 210, 2, 5,
      [](const uint8_t *source, const uint8_t *group, int64_t r) {
        EXPECT_EQ(group[2 * r], source[208]);
        EXPECT_EQ(group[2 * r + 1], source[209]);
        for (int64_t e = 0; e < 256; ++e) {
          // ggml's code of element e: a nibble of ql and two bits of qh.
          int64_t half = e / 128, t = (e % 128) / 32, l = e % 32;
          int low = source[64 * half + 32 * (t % 2) + l];
          low = t < 2 ? low & 15 : low >> 4;
          int code =
              low | (((source[128 + 32 * half + l] >> (2 * t)) & 3) << 4);
          const uint8_t *quarter = group + 32 + 416 * (e / 32);
          int64_t k = e % 32, v = (k % 16) / 4;
          int nibbles = quarter[32 + 64 * v + 4 * r + k % 4];
          int mixedLow = k < 16 ? nibbles & 15 : nibbles >> 4;
          int mixedHigh =
              (quarter[288 + 64 * (k / 16) + 4 * r + k % 4] >> (2 * v)) & 3;
          EXPECT_EQ(mixedLow | (mixedHigh << 4), code) << "element " << e;
        }
        for (int64_t j = 0; j < 16; ++j)
          EXPECT_EQ(group[32 + 416 * (j / 2) + 16 * (j % 2) + r],
                    source[192 + j]);
      });
}

TEST(WeightInterleave, LargeTensorsSplitAcrossThreadsAsOneWould) {
  // Past 1 MiB the groups are split among the cores; every group must land
  // exactly where a single pass puts it.
  for (BlockFormat format : {BlockFormat::Q4_0, BlockFormat::Q6_K}) {
    int64_t rowBytes = format == BlockFormat::Q6_K ? 2 * 210 : 16 * 18;
    int64_t rows = 16 * 300;
    std::vector<uint8_t> plain = randomBytes(rows * rowBytes, 6);
    std::vector<uint8_t> whole = plain;
    format::interleaveRows(WeightLayoutKind::InterleavedRows16, format,
                           whole.data(), rows, rowBytes);
    for (int64_t group : {int64_t(0), int64_t(149), int64_t(150),
                          int64_t(299)}) {
      std::vector<uint8_t> one(plain.begin() + group * 16 * rowBytes,
                               plain.begin() + (group + 1) * 16 * rowBytes);
      format::interleaveRows(WeightLayoutKind::InterleavedRows16, format,
                             one.data(), 16, rowBytes);
      EXPECT_TRUE(std::equal(one.begin(), one.end(),
                             whole.begin() + group * 16 * rowBytes))
          << "group " << group;
    }
    format::deinterleaveRows(WeightLayoutKind::InterleavedRows16, format,
                             whole.data(), rows, rowBytes);
    EXPECT_EQ(whole, plain);
  }
}

TEST(WeightInterleave, RefusesWhatTheLayoutCannotHold) {
  std::string error;
  EXPECT_TRUE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                         BlockFormat::Q4_0, 32, 54, error));
  EXPECT_FALSE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                          BlockFormat::Q4_0, 24, 54, error));
  EXPECT_NE(error.find("groups of 16"), std::string::npos) << error;
  EXPECT_TRUE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                         BlockFormat::Q8_0, 32, 68, error));
  EXPECT_FALSE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                          BlockFormat::Q5_K, 32, 176, error));
  EXPECT_NE(error.find("Q4_0, Q8_0, Q4_K and Q6_K"), std::string::npos)
      << error;
  EXPECT_TRUE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                         BlockFormat::Q4_K, 16, 288, error));
  EXPECT_FALSE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                          BlockFormat::Q4_K, 16, 54, error));
  EXPECT_NE(error.find("144-byte blocks"), std::string::npos) << error;
  EXPECT_TRUE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                         BlockFormat::F32, 16, 4 * 768, error));
  EXPECT_FALSE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                          BlockFormat::F32, 16, 4 * 768 + 2,
                                          error));
  EXPECT_NE(error.find("4-byte blocks"), std::string::npos) << error;
  EXPECT_TRUE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                         BlockFormat::BF16, 16, 2 * 768, error));
  EXPECT_FALSE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                          BlockFormat::BF16, 16, 2 * 768 + 1,
                                          error));
  EXPECT_NE(error.find("2-byte blocks"), std::string::npos) << error;
  EXPECT_FALSE(format::checkInterleavable(WeightLayoutKind::InterleavedRows16,
                                          BlockFormat::Q5_K, 16, 176 * 3,
                                          error));
  EXPECT_NE(error.find("F32, F16, BF16"), std::string::npos) << error;
  EXPECT_FALSE(format::checkInterleavable(static_cast<WeightLayoutKind>(9),
                                          BlockFormat::Q4_0, 32, 54, error));
  EXPECT_NE(error.find("unknown"), std::string::npos) << error;
}

class CpuWeightsTest : public testing::Test {
protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("hetc-cpu-weights-" + std::to_string(::getpid()) + ".gguf"))
                .string();
    format::GgufWriter writer;
    writer.addString("general.architecture", "llama");
    norm_ = randomBytes(64 * 4, 2);
    weight_ = randomBytes(kRows * kRowBytes, 3);
    writer.addTensor("norm", {64}, BlockFormat::F32, norm_);
    writer.addTensor("w", {kBlocks * 32, kRows}, BlockFormat::Q4_0, weight_);
    std::string error;
    ASSERT_TRUE(writer.writeFile(path_, error)) << error;
    file_ = format::GgufFile::open(path_, error);
    ASSERT_TRUE(file_) << error;
    weightOffset_ = static_cast<int64_t>(file_->findTensor("w")->offset);
  }
  void TearDown() override {
    file_.reset();
    std::filesystem::remove(path_);
  }
  std::vector<int64_t> entry(int64_t offset, int64_t rows, int64_t rowBytes,
                             int64_t format, int64_t kind) {
    return {offset, rows, rowBytes, format, kind};
  }
  static std::vector<int64_t> concat(std::vector<int64_t> first,
                                     const std::vector<int64_t> &second) {
    first.insert(first.end(), second.begin(), second.end());
    return first;
  }

  std::string path_;
  std::unique_ptr<format::GgufFile> file_;
  std::vector<uint8_t> norm_, weight_;
  int64_t weightOffset_ = 0;
};

TEST_F(CpuWeightsTest, WithoutLayoutsCopiesTheFileWhereMemoryAllows) {
  std::string error;
  uint64_t twice = 2 * file_->fileSize();
  auto weights = cpu::CpuWeights::prepare(*file_, {}, "code", error, twice);
  ASSERT_TRUE(weights) << error;
  EXPECT_TRUE(weights->copied());
  EXPECT_NE(weights->data(), file_->dataSection());
  EXPECT_EQ(weights->rewrittenTensors(), 0);
  ASSERT_EQ(weights->size(), file_->dataSectionSize());
  EXPECT_EQ(0, std::memcmp(weights->data(), file_->dataSection(),
                           weights->size()));
  // The copy is 2 MiB-aligned, so huge pages can back it.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(weights->data() - file_->dataOffset()) %
                (uintptr_t(2) << 20),
            0u);
}

TEST_F(CpuWeightsTest, WithoutLayoutsReadsTheFileInPlaceWhenMemoryIsShort) {
  std::string error;
  uint64_t lessThanTwice = 2 * file_->fileSize() - 1;
  auto weights =
      cpu::CpuWeights::prepare(*file_, {}, "code", error, lessThanTwice);
  ASSERT_TRUE(weights) << error;
  EXPECT_FALSE(weights->copied());
  EXPECT_EQ(weights->data(), file_->dataSection());
}

TEST_F(CpuWeightsTest, RewritesTheListedWeightOnlyAndNeverTheFile) {
  std::string error;
  auto weights = cpu::CpuWeights::prepare(
      *file_, entry(weightOffset_, kRows, kRowBytes, 2, 1), "code", error);
  ASSERT_TRUE(weights) << error;
  EXPECT_NE(weights->data(), file_->dataSection());
  EXPECT_EQ(weights->size(), file_->dataSectionSize());
  EXPECT_EQ(weights->rewrittenTensors(), 1);
  EXPECT_EQ(weights->rewrittenBytes(), uint64_t(kRows * kRowBytes));
  std::vector<uint8_t> expected = weight_;
  format::interleaveRows(WeightLayoutKind::InterleavedRows16,
                         BlockFormat::Q4_0, expected.data(), kRows, kRowBytes);
  EXPECT_EQ(0, std::memcmp(weights->data() + weightOffset_, expected.data(),
                           expected.size()));
  const format::GgufTensorInfo *norm = file_->findTensor("norm");
  EXPECT_EQ(0, std::memcmp(weights->data() + norm->offset, norm_.data(),
                           norm_.size()));
  // The mapped file and the file on disk keep the model's own layout.
  EXPECT_EQ(0, std::memcmp(file_->dataSection() + weightOffset_,
                           weight_.data(), weight_.size()));
  weights.reset();
  std::ifstream disk(path_, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(disk)), {});
  EXPECT_EQ(0, std::memcmp(bytes.data() + file_->dataOffset() + weightOffset_,
                           weight_.data(), weight_.size()));
}

// A weight other code reads too is interleaved into a copy after the data
// section (on a 64-byte boundary), the buffer growing by it, while the
// tensor itself keeps the file's layout.
TEST_F(CpuWeightsTest, CopiesAWeightThatOtherCodeReadsAfterTheDataSection) {
  std::string error;
  auto weights = cpu::CpuWeights::prepare(
      *file_, entry(weightOffset_, kRows, kRowBytes, 2, 2), "code", error);
  ASSERT_TRUE(weights) << error;
  uint64_t copiesStart = (file_->dataSectionSize() + 63) / 64 * 64;
  EXPECT_EQ(weights->size(),
            copiesStart + uint64_t(format::weightCopyBytes(kRows, kRowBytes)));
  EXPECT_EQ(weights->rewrittenTensors(), 1);
  EXPECT_EQ(0, std::memcmp(weights->data() + weightOffset_, weight_.data(),
                           weight_.size()));
  std::vector<uint8_t> expected = weight_;
  format::interleaveRows(WeightLayoutKind::InterleavedRows16,
                         BlockFormat::Q4_0, expected.data(), kRows, kRowBytes);
  EXPECT_EQ(0, std::memcmp(weights->data() + copiesStart, expected.data(),
                           expected.size()));
}

TEST_F(CpuWeightsTest, RefusesATableThatDoesNotDescribeTheFile) {
  struct Bad {
    std::vector<int64_t> table;
    const char *message;
  };
  const Bad cases[] = {
      {entry(weightOffset_ + 18, kRows, kRowBytes, 2, 1), "has no tensor there"},
      {entry(-4, kRows, kRowBytes, 2, 1), "has no tensor there"},
      {entry(weightOffset_, 16, kRowBytes, 2, 1), "another format or shape"},
      {entry(weightOffset_, kRows, kRowBytes, 8, 1), "another format or shape"},
      {entry(weightOffset_, kRows, kRowBytes, 13, 1), "another format or shape"},
      {entry(0, 64, 4, 0, 1), "another format or shape"},
      {entry(weightOffset_, kRows, kRowBytes, 2, 7), "unknown to this runtime"},
      // The copies' places follow from the table's order.
      {concat(entry(weightOffset_, kRows, kRowBytes, 2, 2),
              entry(weightOffset_, kRows, kRowBytes, 2, 1)),
       "increasing data offset"},
  };
  for (const Bad &bad : cases) {
    std::string error;
    EXPECT_FALSE(cpu::CpuWeights::prepare(*file_, bad.table, "PACK: code", error));
    EXPECT_NE(error.find(bad.message), std::string::npos) << error;
    EXPECT_NE(error.find("PACK: code reads the weight at data offset"),
              std::string::npos)
        << error;
  }
}

} // namespace
