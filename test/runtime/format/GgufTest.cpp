// Tests of the GGUF reader and writer: the real stories260K file, a round trip of
// every value type, and malformed files (truncated anywhere, huge counts, bad
// offsets, wrong alignment, unknown types), each of which must give an error
// naming the problem and never read out of bounds.
#include "runtime/format/Gguf.h"
#include "runtime/format/InputFile.h"
#include "runtime/format/GgufWriter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

using namespace hetrt::format;

namespace {

std::vector<uint8_t> f32Bytes(std::initializer_list<float> values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.begin(), bytes.size());
  return bytes;
}

/// A small but complete file: metadata of several types, two tensors.
std::string sampleImage(uint64_t alignment = 32) {
  GgufWriter writer(alignment);
  writer.addString("general.architecture", "llama");
  writer.addU32("llama.block_count", 2);
  writer.addF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  writer.addBool("tokenizer.ggml.add_bos_token", true);
  writer.addStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
  writer.addF32Array("tokenizer.ggml.scores", {0, 0, 0, -1.5f});
  writer.addTensor("a", {4}, BlockFormat::F32, f32Bytes({1, 2, 3, 4}));
  writer.addTensor("b", {2, 3}, BlockFormat::F32,
                   f32Bytes({1, 2, 3, 4, 5, 6}));
  return writer.serialize();
}

std::unique_ptr<GgufFile> openImage(const std::string &image,
                                    std::string &error) {
  return GgufFile::openBuffer(image, "test.gguf", error);
}

/// Overwrites the little-endian `value` at `offset`.
template <typename T> void poke(std::string &image, size_t offset, T value) {
  ASSERT_LE(offset + sizeof(T), image.size());
  std::memcpy(image.data() + offset, &value, sizeof(T));
}

size_t find(const std::string &image, const std::string &needle) {
  size_t at = image.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return at;
}

TEST(GgufTest, ReadsStories260K) {
  std::string path = std::string(HETC_SHARED_DIR) + "/models/stories260K.gguf";
  std::string error;
  std::unique_ptr<GgufFile> file = GgufFile::open(path, error);
  ASSERT_TRUE(file) << error << " (the shared model directory must be beside "
                               "the checkout)";
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->fileSize(), 1185376u);
  EXPECT_EQ(file->tensors().size(), 48u);
  EXPECT_EQ(file->metadata().size(), 19u);
  EXPECT_EQ(file->find("general.architecture")->asString(), "llama");
  EXPECT_EQ(file->find("llama.embedding_length")->asInt(), 64);
  EXPECT_EQ(file->find("llama.context_length")->asInt(), 512);
  EXPECT_EQ(file->find("tokenizer.ggml.tokens")->elements().size(), 512u);
  EXPECT_EQ(file->find("tokenizer.ggml.tokens")->elements()[403].asString(),
            "\xe2\x96\x81Once");
  const GgufTensorInfo *embedding = file->findTensor("token_embd.weight");
  ASSERT_TRUE(embedding);
  EXPECT_EQ(embedding->dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(embedding->format, BlockFormat::F32);
  EXPECT_EQ(embedding->sizeBytes, 64u * 512 * 4);
  EXPECT_EQ(file->tensorData(*embedding) - file->tensorData(file->tensors()[0]),
            static_cast<ptrdiff_t>(embedding->offset - file->tensors()[0].offset));
  EXPECT_EQ(file->findTensor("no.such.tensor"), nullptr);
}

TEST(GgufTest, RoundTripsEveryWrittenValue) {
  std::string error;
  std::unique_ptr<GgufFile> file = openImage(sampleImage(), error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(file->find("llama.block_count")->type(), GgufType::U32);
  EXPECT_EQ(file->find("llama.block_count")->asInt(), 2);
  EXPECT_FLOAT_EQ(
      *file->find("llama.attention.layer_norm_rms_epsilon")->asDouble(), 1e-5f);
  EXPECT_EQ(file->find("tokenizer.ggml.add_bos_token")->asBool(), true);
  EXPECT_EQ(file->find("tokenizer.ggml.scores")->elementType(), GgufType::F32);
  EXPECT_EQ(file->find("tokenizer.ggml.scores")->elements()[3].asDouble(), -1.5);
  const GgufTensorInfo *b = file->findTensor("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->numElements(), 6);
  float values[6];
  std::memcpy(values, file->tensorData(*b), sizeof(values));
  EXPECT_EQ(values[5], 6.0f);
  EXPECT_EQ(file->dataOffset() % 32, 0u);
}

TEST(GgufTest, HonoursACustomAlignment) {
  std::string error;
  std::unique_ptr<GgufFile> file = openImage(sampleImage(64), error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->dataOffset() % 64, 0u);
  float first;
  std::memcpy(&first, file->tensorData(*file->findTensor("b")), 4);
  EXPECT_EQ(first, 1.0f);
}

// Cutting the file at any byte must give an error, never a crash or a read past
// the end (run under ASan to prove the latter).
TEST(GgufTest, TruncatedAnywhereIsAnError) {
  std::string image = sampleImage();
  for (size_t length = 0; length < image.size(); ++length) {
    std::string error;
    std::unique_ptr<GgufFile> file = openImage(image.substr(0, length), error);
    // Only the zero padding after the last tensor may be cut without losing data.
    if (file)
      continue;
    EXPECT_NE(error.find("test.gguf: "), std::string::npos) << error;
    EXPECT_FALSE(error.empty());
  }
  std::string error;
  EXPECT_FALSE(openImage(image.substr(0, 20), error));
  EXPECT_NE(error.find("truncated: metadata_kv_count at offset 16"),
            std::string::npos)
      << error;
  size_t dataStart = image.size() - 32 - 32; // two tensors, one block each
  EXPECT_FALSE(openImage(image.substr(0, dataStart + 10), error));
  EXPECT_NE(error.find("truncated: tensor \"a\""), std::string::npos) << error;
}

TEST(GgufTest, RejectsWrongMagicAndVersion) {
  std::string image = sampleImage();
  std::string error;
  std::string bad = image;
  bad[0] = 'X';
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("not a GGUF file"), std::string::npos) << error;
  bad = image;
  poke<uint32_t>(bad, 4, 1);
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("GGUF version 1 at offset 4 is not supported"),
            std::string::npos)
      << error;
}

TEST(GgufTest, RejectsHugeCounts) {
  std::string error;
  std::string bad = sampleImage();
  poke<uint64_t>(bad, 8, uint64_t{1} << 60);
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("tensor_count (1152921504606846976) at offset 8 exceeds"),
            std::string::npos)
      << error;
  bad = sampleImage();
  poke<uint64_t>(bad, 16, uint64_t{1} << 62);
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("metadata_kv_count"), std::string::npos) << error;
  // The token array's length field follows its element type.
  bad = sampleImage();
  size_t at = find(bad, "tokenizer.ggml.tokens") + 21 + 4 + 4;
  poke<uint64_t>(bad, at, uint64_t{1} << 40);
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("metadata \"tokenizer.ggml.tokens\" at offset " +
                       std::to_string(at) + " claims 1099511627776 string"),
            std::string::npos)
      << error;
  // A string length beyond the file.
  bad = sampleImage();
  poke<uint64_t>(bad, find(bad, "llama") - 8 + 0, uint64_t{1} << 50);
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("claims a string of"), std::string::npos) << error;
}

TEST(GgufTest, RejectsUnknownTypes) {
  std::string error;
  // Metadata value type of llama.block_count.
  std::string bad = sampleImage();
  size_t typeAt = find(bad, "llama.block_count") + 17;
  poke<uint32_t>(bad, typeAt, 13);
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("metadata \"llama.block_count\" at offset " +
                       std::to_string(typeAt) + " has unknown value type 13"),
            std::string::npos)
      << error;
  // Tensor "a": name, n_dims, one dim, then the type.
  bad = sampleImage();
  size_t tensorTypeAt = bad.rfind(std::string("\x01\x00\x00\x00\x00\x00\x00\x00" "a", 9)) + 9 + 4 + 8;
  poke<uint32_t>(bad, tensorTypeAt, 99);
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("tensor \"a\" at offset " + std::to_string(tensorTypeAt) +
                       " has ggml type 99, which hetc does not support"),
            std::string::npos)
      << error;
}

TEST(GgufTest, RejectsBadOffsetsAndAlignment) {
  std::string error;
  std::string image = sampleImage();
  size_t nameAt = image.rfind(std::string("\x01\x00\x00\x00\x00\x00\x00\x00" "b", 9));
  size_t offsetAt = nameAt + 9 + 4 + 16 + 4;
  std::string bad = image;
  poke<uint64_t>(bad, offsetAt, 33); // not a multiple of 32
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("tensor \"b\" offset 33 (at file offset " +
                       std::to_string(offsetAt) +
                       ") is not a multiple of the alignment 32"),
            std::string::npos)
      << error;
  bad = image;
  poke<uint64_t>(bad, offsetAt, uint64_t{1} << 40);
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("truncated: tensor \"b\" occupies bytes"),
            std::string::npos)
      << error;
  bad = image;
  poke<uint64_t>(bad, offsetAt, 0); // on top of tensor "a"
  EXPECT_FALSE(openImage(bad, error));
  EXPECT_NE(error.find("overlaps tensor"), std::string::npos) << error;

  GgufWriter writer;
  writer.addU32("general.alignment", 48); // not a power of two
  EXPECT_FALSE(openImage(writer.serialize(), error));
  EXPECT_NE(error.find("\"general.alignment\" must be a uint32 power of two, "
                       "got uint32 48"),
            std::string::npos)
      << error;
}

TEST(GgufTest, RejectsBadShapes) {
  std::string error;
  GgufWriter rows;
  // A Q4_0 row must be a whole number of 32-element blocks.
  rows.addTensor("w", {48, 2}, BlockFormat::Q4_0, std::vector<uint8_t>(64));
  EXPECT_FALSE(openImage(rows.serialize(), error));
  EXPECT_NE(error.find("tensor \"w\" has a row of 48 elements, not a multiple "
                       "of the q4_0 block size (32)"),
            std::string::npos)
      << error;
  GgufWriter dims;
  dims.addTensor("x", {1, 1, 1, 1, 1}, BlockFormat::F32, f32Bytes({1}));
  EXPECT_FALSE(openImage(dims.serialize(), error));
  EXPECT_NE(error.find("tensor \"x\" at offset"), std::string::npos) << error;
  EXPECT_NE(error.find("has 5 dimensions (must be 1..4)"), std::string::npos)
      << error;
  GgufWriter duplicate;
  duplicate.addU32("k", 1);
  duplicate.addU32("k", 2); // its key starts at 24 + 8 + 1 + 4 + 4 = 41
  EXPECT_FALSE(openImage(duplicate.serialize(), error));
  EXPECT_NE(error.find("metadata key \"k\" at offset 41 appears twice"),
            std::string::npos)
      << error;
}

TEST(GgufTest, ReportsMissingFiles) {
  std::string error;
  EXPECT_FALSE(GgufFile::open("/nonexistent/model.gguf", error));
  EXPECT_NE(error.find("/nonexistent/model.gguf: cannot open"),
            std::string::npos)
      << error;
}

} // namespace

TEST(GgufTest, NamesFromTheFileArePrintedWithoutControlBytes) {
  // A tensor name that would clear the terminal and set its title.
  std::string name = "\x1b[2J\x1b]0;x\x07";
  GgufWriter writer;
  writer.addString("general.architecture", "llama");
  writer.addTensor(name, {4}, BlockFormat::F32, f32Bytes({1, 2, 3, 4}));
  writer.addTensor(name, {4}, BlockFormat::F32, f32Bytes({1, 2, 3, 4}));
  std::string error;
  EXPECT_FALSE(openImage(writer.serialize(), error));
  EXPECT_NE(error.find("tensor name \"\\x1b[2J\\x1b]0;x\\x07\" appears twice"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find('\x1b'), std::string::npos);
}

namespace {

TEST(InputMessages, PrintableEscapesControlBytesAndInvalidUtf8) {
  using hetrt::format::printable;
  EXPECT_EQ(printable("llama"), "llama");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x96\x81x"), "caf\xc3\xa9 \xe2\x96\x81x");
  EXPECT_EQ(printable("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(printable("\xfflama"), "\\xfflama");
  EXPECT_EQ(printable("<0\x87" "32>"), "<0\\x8732>");
  // A sequence cut short at the end is escaped byte by byte.
  EXPECT_EQ(printable("a\xe2\x96"), "a\\xe2\\x96");
}

TEST(InputMessages, EveryMessageEndsWithAFix) {
  using hetrt::format::withFix;
  EXPECT_EQ(withFix("tensor \"x\" has 9 dimensions", "download it again"),
            "tensor \"x\" has 9 dimensions; download it again");
  EXPECT_EQ(withFix("key is 3; fix the metadata", "download it again"),
            "key is 3; fix the metadata");
  // "prefix" is not a fix.
  EXPECT_EQ(withFix("the prefix is wrong", "download it again"),
            "the prefix is wrong; download it again");
}

} // namespace
