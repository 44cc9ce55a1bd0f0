// Tests of the tokenizer: llama.cpp's own test vectors for the Llama 2 SPM,
// Phi-3 and GPT-2 vocabularies, the real stories260K vocabulary against
// llama.cpp's reference token ids and text, SPM byte fallback, an in-memory byte-level BPE
// vocabulary (pre-tokenizer splits, merge ranks, special tokens, byte round
// trips), the synthetic vocabulary writer, and malformed metadata, each of
// which must give an error naming the key.
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/GgufWriter.h"
#include "runtime/tokenizer/SyntheticVocab.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

using namespace hetrt::format;
using namespace hetrt::tokenizer;

namespace {

using Ids = std::vector<int32_t>;
using Words = std::vector<std::string>;

using Json = nlohmann::json;

Ids idsOf(const Json &array) { return array.get<Ids>(); }

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string sharedPath(const std::string &relative) {
  return std::string(HETC_SHARED_DIR) + "/" + relative;
}

std::unique_ptr<Tokenizer> fromImage(const std::string &image,
                                     std::string &error) {
  std::unique_ptr<GgufFile> file =
      GgufFile::openBuffer(image, "test.gguf", error);
  if (!file)
    return nullptr;
  return Tokenizer::fromGguf(*file, error);
}

/// GPT-2's bytes_to_unicode, written independently of the implementation:
/// printable Latin-1 bytes stand for themselves, the rest map to U+0100 on.
std::vector<std::string> gpt2ByteStrings() {
  std::vector<std::string> strings(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
                     (b >= 0xAE && b <= 0xFF);
    int cpt = printable ? b : next++;
    if (cpt < 0x80)
      strings[b] = std::string(1, char(cpt));
    else
      strings[b] = {char(0xC0 | (cpt >> 6)), char(0x80 | (cpt & 0x3F))};
  }
  return strings;
}

/// A byte-level BPE vocabulary: the 256 byte characters (ids 0..255), then
/// `pieces` in order, then the special tokens.
struct BpeVocab {
  std::string pre = "llama-bpe";
  std::vector<std::string> pieces;
  std::vector<std::string> merges;
  bool writeBos = true;
  std::function<void(GgufWriter &)> extra;
};

constexpr const char *kBeginOfText = "<|begin_of_text|>";
constexpr const char *kEndOfText = "<|end_of_text|>";
constexpr const char *kEotId = "<|eot_id|>";
constexpr const char *kTool = "<tool>";

/// Token texts of `vocab` in id order.
std::vector<std::string> bpeTokens(const BpeVocab &vocab) {
  std::vector<std::string> tokens = gpt2ByteStrings();
  tokens.insert(tokens.end(), vocab.pieces.begin(), vocab.pieces.end());
  for (const char *special : {kBeginOfText, kEndOfText, kEotId, kTool})
    tokens.push_back(special);
  return tokens;
}

std::string bpeImage(const BpeVocab &vocab) {
  std::vector<std::string> tokens = bpeTokens(vocab);
  std::vector<int32_t> types(tokens.size(), 1);
  types[tokens.size() - 4] = 3; // <|begin_of_text|>
  types[tokens.size() - 3] = 3; // <|end_of_text|>
  types[tokens.size() - 2] = 3; // <|eot_id|>
  types[tokens.size() - 1] = 4; // <tool>, user-defined
  GgufWriter writer;
  writer.addString("tokenizer.ggml.model", "gpt2");
  if (!vocab.pre.empty())
    writer.addString("tokenizer.ggml.pre", vocab.pre);
  writer.addStringArray("tokenizer.ggml.tokens", tokens);
  writer.addI32Array("tokenizer.ggml.token_type", types);
  writer.addStringArray("tokenizer.ggml.merges", vocab.merges);
  if (vocab.writeBos)
    writer.addU32("tokenizer.ggml.bos_token_id",
                  static_cast<uint32_t>(tokens.size() - 4));
  writer.addU32("tokenizer.ggml.eos_token_id",
                static_cast<uint32_t>(tokens.size() - 3));
  if (vocab.extra)
    vocab.extra(writer);
  return writer.serialize();
}

/// The hello/world vocabulary used by most BPE tests.
BpeVocab helloWorldVocab(const std::string &pre = "llama-bpe") {
  BpeVocab vocab;
  vocab.pre = pre;
  // Ids 256.. in this order.
  vocab.pieces = {"he", "ll",          "hell", "hello",         "\xc4\xa0w",
                  "or", "\xc4\xa0wor", "ld",   "\xc4\xa0world", "\xc4\xa0xyz"};
  vocab.merges = {"h e", "l l",          "he ll", "hell o",        "\xc4\xa0 w",
                  "o r", "\xc4\xa0w or", "l d",   "\xc4\xa0wor ld"};
  return vocab;
}

std::unique_ptr<Tokenizer> loadBpe(const BpeVocab &vocab) {
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = fromImage(bpeImage(vocab), error);
  EXPECT_TRUE(tokenizer) << error;
  return tokenizer;
}

class Stories260KTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    std::string error;
    file_ =
        GgufFile::open(sharedPath("models/stories260K.gguf"), error).release();
    ASSERT_TRUE(file_) << error
                       << " (the shared model directory must be "
                          "beside the checkout)";
    tokenizer_ = Tokenizer::fromGguf(*file_, error).release();
    ASSERT_TRUE(tokenizer_) << error;
    std::ifstream in(sharedPath("models/stories260K.reference.json"));
    std::stringstream text;
    text << in.rdbuf();
    reference_ = new Json(Json::parse(text.str(), nullptr, false));
    ASSERT_FALSE(reference_->is_discarded())
        << "cannot parse stories260K.reference.json";
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete file_;
    delete reference_;
  }
  void SetUp() override {
    ASSERT_TRUE(tokenizer_);
    ASSERT_TRUE(reference_);
  }

  static GgufFile *file_;
  static Tokenizer *tokenizer_;
  static Json *reference_;
};

GgufFile *Stories260KTest::file_ = nullptr;
Tokenizer *Stories260KTest::tokenizer_ = nullptr;
Json *Stories260KTest::reference_ = nullptr;

//===----------------------------------------------------------------------===//
// llama.cpp's own tokenizer test vectors (test-tokenizer-0): each input of
// VOCAB.gguf.inp, encoded without special tokens, gives the ids on the same
// line of VOCAB.gguf.out.
//===----------------------------------------------------------------------===//

class LlamaCppVocabTest : public ::testing::TestWithParam<const char *> {};

std::string readWhole(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_P(LlamaCppVocabTest, EncodesLikeLlamaCpp) {
  std::string path = sharedPath(std::string("vocab/") + GetParam());
  std::string error;
  std::unique_ptr<GgufFile> file = GgufFile::open(path, error);
  ASSERT_TRUE(file) << error;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::fromGguf(*file, error);
  ASSERT_TRUE(tokenizer) << error;

  static constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
  std::string inputs = readWhole(path + ".inp");
  std::vector<std::string> texts;
  for (size_t at = 0;;) {
    size_t end = inputs.find(kSeparator, at);
    if (end == std::string::npos)
      break;
    texts.push_back(inputs.substr(at, end - at));
    at = end + kSeparator.size();
  }
  std::istringstream outputs(readWhole(path + ".out"));
  std::vector<Ids> expected;
  for (std::string line; std::getline(outputs, line);) {
    std::istringstream numbers(line);
    Ids ids;
    for (int32_t id; numbers >> id;)
      ids.push_back(id);
    expected.push_back(ids);
  }
  ASSERT_GT(texts.size(), 40u) << path << ".inp";
  ASSERT_EQ(texts.size(), expected.size()) << path << ".out";
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(tokenizer->encode(texts[i], /*addSpecial=*/false), expected[i])
        << "input " << i << ": \"" << texts[i] << "\"";
}

INSTANTIATE_TEST_SUITE_P(SharedVocabularies, LlamaCppVocabTest,
                         ::testing::Values("ggml-vocab-llama-spm.gguf",
                                           "ggml-vocab-phi-3.gguf",
                                           "ggml-vocab-gpt-2.gguf"));

//===----------------------------------------------------------------------===//
// stories260K (SPM, the real model)
//===----------------------------------------------------------------------===//

TEST_F(Stories260KTest, ReadsTheVocabularyAndLlamaCppDefaults) {
  const Tokenizer &tok = *tokenizer_;
  EXPECT_EQ(tok.kind(), VocabKind::Spm);
  EXPECT_EQ(tok.vocabSize(), 512);
  EXPECT_EQ(tok.bos(), 1);
  EXPECT_EQ(tok.eos(), 2);
  EXPECT_EQ(tok.unk(), 0);
  // The file stores 0xFFFFFFFF, the converters' "unset".
  EXPECT_EQ(tok.pad(), -1);
  // add_bos_token / add_eos_token / add_space_prefix are absent: defaults.
  EXPECT_TRUE(tok.addsBos());
  EXPECT_FALSE(tok.addsEos());
  EXPECT_TRUE(tok.addsSpacePrefix());
  EXPECT_EQ(tok.tokenType(0), TokenType::Unknown);
  EXPECT_EQ(tok.tokenType(1), TokenType::Control);
  EXPECT_EQ(tok.tokenType(3), TokenType::Byte);
  EXPECT_EQ(tok.tokenType(403), TokenType::Normal);
  EXPECT_EQ(tok.tokenType(512), TokenType::Undefined);
  EXPECT_EQ(tok.tokenPiece(403), "\xe2\x96\x81Once");
  EXPECT_EQ(tok.tokenPiece(-1), "");
  EXPECT_EQ(tok.findToken("\xe2\x96\x81Once"), 403);
  EXPECT_EQ(tok.findToken("no such piece"), -1);
  EXPECT_TRUE(tok.isEndOfGeneration(2));
  EXPECT_FALSE(tok.isEndOfGeneration(1));
  EXPECT_FALSE(tok.isEndOfGeneration(403));
  EXPECT_FALSE(tok.isEndOfGeneration(512));
  EXPECT_FALSE(tok.isEndOfGeneration(-1));
}

TEST_F(Stories260KTest, EncodesTheReferencePromptsLikeLlamaCpp) {
  const Json &prompts = reference_->at("prompts");
  ASSERT_EQ(prompts.size(), 3u);
  for (const Json &prompt : prompts) {
    std::string text = prompt.at("prompt");
    Ids ids = tokenizer_->encode(text, /*addSpecial=*/true);
    EXPECT_EQ(ids, idsOf(prompt.at("prompt_token_ids"))) << text;
    const Json &pieces = prompt.at("prompt_token_pieces");
    ASSERT_EQ(pieces.size(), ids.size()) << text;
    for (size_t i = 0; i < ids.size(); ++i)
      EXPECT_EQ(tokenizer_->tokenPiece(ids[i]), pieces[i].get<std::string>());
  }
  // Literal expectations, independent of the reference file.
  EXPECT_EQ(tokenizer_->encode("Once upon a time", true),
            (Ids{1, 403, 407, 261, 378}));
  EXPECT_EQ(tokenizer_->encode("The little dog", true),
            (Ids{1, 291, 376, 400, 428}));
  EXPECT_EQ(tokenizer_->encode("Lily wanted to", true),
            (Ids{1, 317, 391, 266, 267}));
  EXPECT_EQ(tokenizer_->encode("Once upon a time", false),
            (Ids{403, 407, 261, 378}));
}

TEST_F(Stories260KTest, DecodesTheReferenceGenerations) {
  for (const Json &prompt : reference_->at("prompts")) {
    Ids prompted = idsOf(prompt.at("prompt_token_ids"));
    Ids generated = idsOf(prompt.at("generated_token_ids"));
    ASSERT_EQ(generated.size(), 48u);
    std::string text = prompt.at("generated_text");
    std::string promptText = prompt.at("prompt");
    EXPECT_EQ(tokenizer_->decode(generated), text);
    // Streaming the pieces prints the same text.
    std::string streamed;
    for (int32_t id : generated)
      streamed += tokenizer_->decodeToken(id);
    EXPECT_EQ(streamed, text);
    // The prompt decodes without the space the encoder added after BOS, and
    // prompt plus continuation read as one text.
    EXPECT_EQ(tokenizer_->decode(prompted), promptText);
    Ids all = prompted;
    all.insert(all.end(), generated.begin(), generated.end());
    EXPECT_EQ(tokenizer_->decode(all), promptText + text);
  }
}

TEST_F(Stories260KTest, DetokenizeFollowsLlamaCppExactly) {
  Ids prompt = {1, 403, 407, 261, 378};
  // llama_detokenize strips the first token's space only; a leading BOS
  // takes that place, so the space after it stays.
  EXPECT_EQ(tokenizer_->detokenize(prompt, false, false), " Once upon a time");
  EXPECT_EQ(tokenizer_->detokenize(prompt, true, false), " Once upon a time");
  EXPECT_EQ(tokenizer_->detokenize(prompt, false, true),
            "<s> Once upon a time");
  EXPECT_EQ(tokenizer_->detokenize({286, 261}, false, false), "was a");
  EXPECT_EQ(tokenizer_->decode({286, 261}), " was a");
  EXPECT_EQ(tokenizer_->detokenize({}, false, false), "");
}

TEST_F(Stories260KTest, RendersSpecialAndByteTokens) {
  EXPECT_EQ(tokenizer_->decodeToken(1), "");
  EXPECT_EQ(tokenizer_->decodeToken(1, /*renderSpecial=*/true), "<s>");
  EXPECT_EQ(tokenizer_->decodeToken(0), "");
  EXPECT_EQ(tokenizer_->decodeToken(0, true), "<unk>");
  EXPECT_EQ(tokenizer_->decodeToken(3 + '\n'), "\n");
  EXPECT_EQ(tokenizer_->decodeToken(403), " Once");
  EXPECT_EQ(tokenizer_->decodeToken(9999), "");
  EXPECT_EQ(tokenizer_->decode({1, 403, 9999, -5}), "Once");
}

TEST_F(Stories260KTest, FallsBackToByteTokens) {
  // "ü" (C3 BC) and the emoji (F0 9F 98 80) are not in the 512-token
  // vocabulary, so they become <0xNN> = id NN + 3; "é" is a token of its own.
  int32_t space = tokenizer_->findToken("\xe2\x96\x81");
  ASSERT_GE(space, 0);
  EXPECT_EQ(tokenizer_->encode("\xc3\xbc", true),
            (Ids{1, space, 0xC3 + 3, 0xBC + 3}));
  EXPECT_EQ(tokenizer_->encode("\xf0\x9f\x98\x80", false),
            (Ids{space, 0xF0 + 3, 0x9F + 3, 0x98 + 3, 0x80 + 3}));
  EXPECT_EQ(tokenizer_->encode("\xc3\xa9", false),
            (Ids{space, tokenizer_->findToken("\xc3\xa9")}));
  for (const std::string &text :
       std::vector<std::string>{"\xc3\xbc", "Lily \xf0\x9f\x98\x80 smiled",
                                "caf\xc3\xa9 \xc3\xbc!"}) {
    Ids ids = tokenizer_->encode(text, true);
    EXPECT_EQ(tokenizer_->decode(ids), text);
  }
  // The pieces of a split character join back into it.
  std::string streamed;
  for (int32_t id : tokenizer_->encode("\xf0\x9f\x98\x80", false))
    streamed += tokenizer_->decodeToken(id);
  EXPECT_EQ(streamed, " \xf0\x9f\x98\x80");
}

TEST_F(Stories260KTest, RoundTripsAnyBytes) {
  // SPM works on raw bytes, so even invalid UTF-8 survives.
  for (const std::string &text :
       {std::string("\xff\xfe"), std::string("a\x80z"),
        std::string("\xe2\x82", 2), std::string("nul\0byte", 8),
        std::string("  two  spaces \n\ttab "), std::string("")}) {
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text, true)), text);
  }
  // llama.cpp cuts a character by its lead byte alone: 0xFF claims four
  // bytes and so swallows the first byte of the following space marker,
  // which then decodes as raw bytes.
  EXPECT_EQ(tokenizer_->decode(tokenizer_->encode("\xff a", true)),
            "\xff\xe2\x96\x81"
            "a");
  EXPECT_EQ(tokenizer_->encode("\xff", true),
            (Ids{1, tokenizer_->findToken("\xe2\x96\x81"), 0xFF + 3}));
  EXPECT_EQ(tokenizer_->encode("", true), (Ids{1}));
  EXPECT_EQ(tokenizer_->encode("", false), (Ids{}));
}

TEST_F(Stories260KTest, ParsesSpecialTokensOnlyWhenAsked) {
  // After a special token the text gets the space prefix again.
  EXPECT_EQ(tokenizer_->encode("<s>Once", false, /*parseSpecial=*/true),
            (Ids{1, 403}));
  EXPECT_EQ(tokenizer_->encode("Once</s>", true, true), (Ids{1, 403, 2}));
  Ids literal = tokenizer_->encode("<s>", false, false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), 1), 0);
  EXPECT_EQ(tokenizer_->decode(literal), " <s>");
}

//===----------------------------------------------------------------------===//
// Synthetic SPM vocabulary
//===----------------------------------------------------------------------===//

TEST(SyntheticVocabTest, BuildsAWorkingSpmTokenizer) {
  for (int32_t size : {260, 512, 1000}) {
    GgufWriter writer;
    std::string error;
    ASSERT_TRUE(writeSyntheticSpmVocab(writer, size, error)) << error;
    std::unique_ptr<Tokenizer> tok = fromImage(writer.serialize(), error);
    ASSERT_TRUE(tok) << error;
    EXPECT_EQ(tok->vocabSize(), size);
    EXPECT_EQ(tok->bos(), 1);
    EXPECT_EQ(tok->eos(), 2);
    EXPECT_EQ(tok->tokenPiece(3 + 0x41), "<0x41>");
    for (const std::string &text : std::vector<std::string>{
             "Once upon a time, there was a little girl named Lily.",
             "The dog said \"hello\" to 42 cats!", "naïve café — 日本語 😀",
             std::string("raw \xff\x00\x80", 8), "line one\nline two\n"}) {
      Ids ids = tok->encode(text, true);
      EXPECT_EQ(ids.front(), 1);
      EXPECT_EQ(tok->decode(ids), text) << size;
    }
  }
  // The word pieces shorten encodings in the larger vocabularies.
  GgufWriter writer;
  std::string error;
  ASSERT_TRUE(writeSyntheticSpmVocab(writer, 1000, error));
  std::unique_ptr<Tokenizer> tok = fromImage(writer.serialize(), error);
  ASSERT_TRUE(tok) << error;
  EXPECT_EQ(tok->encode("the little", false),
            (Ids{tok->findToken("\xe2\x96\x81the"),
                 tok->findToken("\xe2\x96\x81little")}));
  EXPECT_EQ(tok->tokenType(999), TokenType::Normal);
}

TEST(SyntheticVocabTest, RejectsTooSmallASize) {
  GgufWriter writer;
  std::string error;
  EXPECT_FALSE(writeSyntheticSpmVocab(writer, 100, error));
  EXPECT_EQ(error, "a synthetic SPM vocabulary needs at least 260 tokens (3 "
                   "special, 256 byte tokens and the space marker), not 100");
}

//===----------------------------------------------------------------------===//
// Byte-level BPE (in-memory vocabularies)
//===----------------------------------------------------------------------===//

TEST(BpeTokenizerTest, SplitsLikeTheLlama3Regex) {
  std::unique_ptr<Tokenizer> tok = loadBpe(helloWorldVocab("llama-bpe"));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->kind(), VocabKind::Bpe);
  EXPECT_EQ(tok->preTokenizerName(), "llama-bpe");
  // Expected splits come from the Python `regex` module running the
  // tokenizer.json pattern.
  EXPECT_EQ(tok->preTokenize("Hello world's 12345 foo!!\n\n  bar"),
            (Words{"Hello", " world", "'s", " ", "123", "45", " foo", "!!\n\n",
                   " ", " bar"}));
  EXPECT_EQ(tok->preTokenize("I'M here\tnow  "),
            (Words{"I", "'M", " here", "\tnow", "  "}));
  EXPECT_EQ(tok->preTokenize("price: $1,234.56 (approx.)"),
            (Words{"price", ":", " $", "1", ",", "234", ".", "56", " (",
                   "approx", ".)"}));
  EXPECT_EQ(tok->preTokenize("na\xc3\xafve caf\xc3\xa9 \xe2\x80\x94 "
                             "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e "
                             "\xf0\x9f\x98\x80\r\nok"),
            (Words{"na\xc3\xafve", " caf\xc3\xa9", " \xe2\x80\x94",
                   " \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
                   " \xf0\x9f\x98\x80\r\n", "ok"}));
  EXPECT_EQ(tok->preTokenize("a+b=c <tag> x^2 ~y|z 1234567"),
            (Words{"a", "+b", "=c", " <", "tag", ">", " x", "^", "2", " ~", "y",
                   "|z", " ", "123", "456", "7"}));
}

TEST(BpeTokenizerTest, SplitsLikeTheQwen2AndGpt2Regexes) {
  std::unique_ptr<Tokenizer> qwen = loadBpe(helloWorldVocab("qwen2"));
  ASSERT_TRUE(qwen);
  EXPECT_EQ(
      qwen->preTokenize("price: $1,234.56"),
      (Words{"price", ":", " $", "1", ",", "2", "3", "4", ".", "5", "6"}));
  EXPECT_FALSE(qwen->addsBos()); // qwen2's default

  std::unique_ptr<Tokenizer> gpt2 = loadBpe(helloWorldVocab("gpt-2"));
  ASSERT_TRUE(gpt2);
  EXPECT_EQ(gpt2->preTokenize("Hello world's 12345 foo!!\n\n  bar"),
            (Words{"Hello", " world", "'s", " 12345", " foo", "!!", "\n\n ",
                   " bar"}));
  EXPECT_EQ(gpt2->preTokenize("I'M here\tnow  "),
            (Words{"I", "'", "M", " here", "\t", "now", "  "}));
  EXPECT_EQ(gpt2->preTokenize("\xf0\x9f\x98\x80\r\nok"),
            (Words{"\xf0\x9f\x98\x80", "\r", "\n", "ok"}));

  // Without tokenizer.ggml.pre llama.cpp uses its "default" cascade.
  BpeVocab vocab = helloWorldVocab("");
  vocab.writeBos = false;
  std::unique_ptr<Tokenizer> fallback = loadBpe(vocab);
  ASSERT_TRUE(fallback);
  EXPECT_EQ(fallback->preTokenizerName(), "default");
  EXPECT_EQ(fallback->preTokenize("a+b=c <tag> x^2 ~y|z 1234567"),
            (Words{"a", "+", "b", "=", "c", " ", "<", "tag", ">",   " x", "^",
                   "2", " ", "~", "y", "|", "z", " ", "123", "456", "7"}));
  EXPECT_EQ(fallback->preTokenize("price: $1,234.56 (approx.)"),
            (Words{"price", ":", " ", "$", "1", ",", "234", ".", "56", " ", "(",
                   "approx", ".)"}));
  // gpt2's default special tokens are both id 11; no UNK.
  EXPECT_EQ(fallback->bos(), 11);
  EXPECT_EQ(fallback->eos(), static_cast<int32_t>(bpeTokens(vocab).size()) - 3);
  EXPECT_EQ(fallback->unk(), -1);
  EXPECT_FALSE(fallback->addsBos());
  EXPECT_FALSE(fallback->addsSpacePrefix());
}

TEST(BpeTokenizerTest, MergesByRank) {
  BpeVocab vocab = helloWorldVocab("llama-bpe");
  std::unique_ptr<Tokenizer> tok = loadBpe(vocab);
  ASSERT_TRUE(tok);
  int32_t hello = tok->findToken("hello");
  int32_t world = tok->findToken("\xc4\xa0world");
  int32_t bos = tok->findToken(kBeginOfText);
  EXPECT_EQ(tok->bos(), bos);
  EXPECT_TRUE(tok->addsBos()); // llama-bpe's default
  EXPECT_EQ(tok->encode("hello world", true), (Ids{bos, hello, world}));
  EXPECT_EQ(tok->encode("hello world", false), (Ids{hello, world}));
  // "hellx": h+e and l+l merge, then he+ll; x stays a byte character.
  EXPECT_EQ(tok->encode("hellx", false), (Ids{tok->findToken("hell"), 'x'}));

  // Two vocabularies with the same tokens and opposite merge ranks.
  BpeVocab bcFirst;
  bcFirst.pre = "gpt-2";
  bcFirst.pieces = {"ab", "bc", "aa"};
  bcFirst.merges = {"b c", "a b", "a a"};
  std::unique_ptr<Tokenizer> first = loadBpe(bcFirst);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->encode("abc", false), (Ids{'a', first->findToken("bc")}));
  BpeVocab abFirst = bcFirst;
  abFirst.merges = {"a b", "b c"};
  std::unique_ptr<Tokenizer> second = loadBpe(abFirst);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->encode("abc", false), (Ids{second->findToken("ab"), 'c'}));
  // Overlapping pairs of equal rank merge leftmost first.
  EXPECT_EQ(first->encode("aaa", false), (Ids{first->findToken("aa"), 'a'}));
}

TEST(BpeTokenizerTest, Llama3UsesWholeWordsBeforeMerges) {
  // "Ġxyz" is a token that no merge builds: llama3's ignore_merges finds it,
  // GPT-2 spells it out in byte characters.
  std::unique_ptr<Tokenizer> llama3 = loadBpe(helloWorldVocab("llama-bpe"));
  std::unique_ptr<Tokenizer> gpt2 = loadBpe(helloWorldVocab("gpt-2"));
  ASSERT_TRUE(llama3 && gpt2);
  EXPECT_EQ(llama3->encode(" xyz", false),
            (Ids{llama3->findToken("\xc4\xa0xyz")}));
  EXPECT_EQ(gpt2->encode(" xyz", false),
            (Ids{gpt2->findToken("\xc4\xa0"), 'x', 'y', 'z'}));
}

TEST(BpeTokenizerTest, MatchesSpecialTokens) {
  std::unique_ptr<Tokenizer> tok = loadBpe(helloWorldVocab("llama-bpe"));
  ASSERT_TRUE(tok);
  int32_t bos = tok->findToken(kBeginOfText);
  int32_t eot = tok->findToken(kEotId);
  int32_t tool = tok->findToken(kTool);
  int32_t hello = tok->findToken("hello");
  std::string text = std::string(kBeginOfText) + "hello" + kEotId;
  EXPECT_EQ(tok->encode(text, false, /*parseSpecial=*/true),
            (Ids{bos, hello, eot}));
  // Without parseSpecial the control tokens are plain text...
  Ids plain = tok->encode(text, false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), bos), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
  EXPECT_EQ(tok->decode(plain), text);
  // ...but user-defined tokens are always whole.
  EXPECT_EQ(tok->encode(std::string("hello") + kTool, false, false),
            (Ids{hello, tool}));
  EXPECT_EQ(tok->decodeToken(tool), kTool);
  EXPECT_EQ(tok->decodeToken(eot), "");
  EXPECT_EQ(tok->decodeToken(eot, true), kEotId);
  EXPECT_EQ(tok->decode({bos, hello, eot}), "hello");
  EXPECT_TRUE(tok->isEndOfGeneration(eot));
  EXPECT_TRUE(tok->isEndOfGeneration(tok->findToken(kEndOfText)));
  EXPECT_TRUE(tok->isEndOfGeneration(tok->eos()));
  EXPECT_FALSE(tok->isEndOfGeneration(bos));
}

TEST(BpeTokenizerTest, TreatsEndOfTurnTokensAsControlByTheirText) {
  // Qwen-style end-of-turn and fill-in-middle tokens stored as normal tokens:
  // llama.cpp recognises them by their string, makes them control tokens
  // and ends generation on them.
  BpeVocab vocab = helloWorldVocab("qwen2");
  vocab.pieces.push_back("<|im_end|>");
  vocab.pieces.push_back("<|fim_pad|>");
  vocab.pieces.push_back("<|fim_prefix|>");
  std::unique_ptr<Tokenizer> tok = loadBpe(vocab);
  ASSERT_TRUE(tok);
  int32_t imEnd = tok->findToken("<|im_end|>");
  int32_t fimPad = tok->findToken("<|fim_pad|>");
  int32_t fimPrefix = tok->findToken("<|fim_prefix|>");
  EXPECT_EQ(tok->tokenType(imEnd), TokenType::Control);
  EXPECT_EQ(tok->tokenType(fimPrefix), TokenType::Control);
  EXPECT_TRUE(tok->isEndOfGeneration(imEnd));
  EXPECT_TRUE(tok->isEndOfGeneration(fimPad));
  EXPECT_FALSE(tok->isEndOfGeneration(fimPrefix));
  EXPECT_EQ(tok->decodeToken(imEnd), "");
  EXPECT_EQ(tok->encode("hello<|im_end|>", false, true),
            (Ids{tok->findToken("hello"), imEnd}));
}

TEST(BpeTokenizerTest, RoundTripsArbitraryUtf8) {
  std::unique_ptr<Tokenizer> tok = loadBpe(helloWorldVocab("llama-bpe"));
  ASSERT_TRUE(tok);
  std::vector<std::string> texts = {
      "hello world", std::string("\0\x01\x1f\x7f", 4), "tab\tnew\nline\r\n",
      "na\xc3\xafve caf\xc3\xa9 \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac "
      "\xf0\x9f\x98\x80",
      "   leading and trailing   "};
  // Every Unicode scalar value, in steps, in one string.
  std::string all;
  for (uint32_t cpt = 1; cpt <= 0x10FFFF; cpt += 251) {
    if (cpt >= 0xD800 && cpt <= 0xDFFF)
      continue;
    if (cpt < 0x80) {
      all += char(cpt);
    } else if (cpt < 0x800) {
      all += {char(0xC0 | (cpt >> 6)), char(0x80 | (cpt & 0x3F))};
    } else if (cpt < 0x10000) {
      all += {char(0xE0 | (cpt >> 12)), char(0x80 | ((cpt >> 6) & 0x3F)),
              char(0x80 | (cpt & 0x3F))};
    } else {
      all += {char(0xF0 | (cpt >> 18)), char(0x80 | ((cpt >> 12) & 0x3F)),
              char(0x80 | ((cpt >> 6) & 0x3F)), char(0x80 | (cpt & 0x3F))};
    }
  }
  texts.push_back(all);
  for (const std::string &text : texts) {
    Ids ids = tok->encode(text, false);
    EXPECT_EQ(tok->decode(ids), text);
    std::string streamed;
    for (int32_t id : ids)
      streamed += tok->decodeToken(id);
    EXPECT_EQ(streamed, text);
  }
}

TEST(BpeTokenizerTest, ReplacesInvalidUtf8LikeLlamaCpp) {
  // llama.cpp decodes each malformed byte to U+FFFD before byte mapping, so
  // invalid input comes back as replacement characters, one per bad byte.
  std::unique_ptr<Tokenizer> tok = loadBpe(helloWorldVocab("llama-bpe"));
  ASSERT_TRUE(tok);
  const std::string replacement = "\xef\xbf\xbd";
  EXPECT_EQ(tok->decode(tok->encode("a\xff"
                                    "b",
                                    false)),
            "a" + replacement + "b");
  EXPECT_EQ(tok->decode(tok->encode(std::string("\xe2\x82", 2), false)),
            replacement + replacement);
  EXPECT_EQ(tok->decode(tok->encode("\xc0\x80x", false)),
            std::string("\0x", 2)); // an overlong NUL decodes as NUL
}

TEST(BpeTokenizerTest, DetokenizeCleansSpacesWhereLlamaCppDoes) {
  std::unique_ptr<Tokenizer> gpt2 = loadBpe(helloWorldVocab("gpt-2"));
  std::unique_ptr<Tokenizer> qwen = loadBpe(helloWorldVocab("qwen2"));
  ASSERT_TRUE(gpt2 && qwen);
  const std::string text = "hello , world . it 's ' ok ' x";
  EXPECT_EQ(gpt2->detokenize(gpt2->encode(text, false), false, false),
            "hello, world. it's'ok'x");
  EXPECT_EQ(gpt2->decode(gpt2->encode(text, false)), text);
  EXPECT_EQ(qwen->detokenize(qwen->encode(text, false), false, false), text);
}

//===----------------------------------------------------------------------===//
// Malformed metadata
//===----------------------------------------------------------------------===//

/// An SPM file whose keys the caller writes.
std::string spmImage(const std::function<void(GgufWriter &)> &write) {
  GgufWriter writer;
  write(writer);
  return writer.serialize();
}

void writeSmallSpm(GgufWriter &writer) {
  writer.addString("tokenizer.ggml.model", "llama");
  writer.addStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
}

std::string errorOf(const std::string &image) {
  std::string error;
  std::unique_ptr<Tokenizer> tok = fromImage(image, error);
  EXPECT_FALSE(tok) << "expected an error";
  return error;
}

TEST(TokenizerMetadataTest, AcceptsAMinimalSpmVocabulary) {
  std::string error;
  std::unique_ptr<Tokenizer> tok = fromImage(spmImage(writeSmallSpm), error);
  ASSERT_TRUE(tok) << error;
  EXPECT_EQ(tok->vocabSize(), 4);
  // No byte tokens (not even for the space marker): unknown characters
  // become UNK, one per byte.
  EXPECT_EQ(tok->encode("a", true), (Ids{1, 0, 0, 0, 3}));
  EXPECT_EQ(tok->encode("\xc3\xbc", false), (Ids{0, 0, 0, 0, 0}));
}

TEST(TokenizerMetadataTest, ReportsEachBadKey) {
  struct Case {
    const char *name;
    std::function<void(GgufWriter &)> write;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"no model",
       [](GgufWriter &w) { w.addStringArray("tokenizer.ggml.tokens", {"a"}); },
       "test.gguf: metadata \"tokenizer.ggml.model\" is missing, so the file "
       "has no tokenizer; re-convert the model with llama.cpp's "
       "convert_hf_to_gguf.py, which writes the tokenizer.ggml.* keys"},
      {"unsupported model",
       [](GgufWriter &w) { w.addString("tokenizer.ggml.model", "bert"); },
       "test.gguf: metadata \"tokenizer.ggml.model\" is \"bert\"; hetc "
       "supports \"llama\" (SentencePiece BPE) and \"gpt2\" (byte-level BPE)"},
      {"model of the wrong type",
       [](GgufWriter &w) { w.addU32("tokenizer.ggml.model", 1); },
       "test.gguf: metadata \"tokenizer.ggml.model\" is a uint32 but must be a "
       "string (\"llama\" or \"gpt2\")"},
      {"no tokens",
       [](GgufWriter &w) { w.addString("tokenizer.ggml.model", "llama"); },
       "test.gguf: metadata \"tokenizer.ggml.tokens\" is missing; the "
       "vocabulary is required (re-convert the model together with its "
       "tokenizer files)"},
      {"tokens of the wrong type",
       [](GgufWriter &w) {
         w.addString("tokenizer.ggml.model", "llama");
         w.addI32Array("tokenizer.ggml.tokens", {1, 2});
       },
       "test.gguf: metadata \"tokenizer.ggml.tokens\" is an array of int32 "
       "but must be an array of string"},
      {"empty tokens",
       [](GgufWriter &w) {
         w.addString("tokenizer.ggml.model", "llama");
         w.addStringArray("tokenizer.ggml.tokens", {});
       },
       "test.gguf: metadata \"tokenizer.ggml.tokens\" has 0 entries; a "
       "vocabulary needs 1 to 2^31-1 tokens"},
      {"too few scores",
       [](GgufWriter &w) {
         writeSmallSpm(w);
         w.addF32Array("tokenizer.ggml.scores", {0, 0, 0});
       },
       "test.gguf: metadata \"tokenizer.ggml.scores\" has 3 entries but "
       "metadata \"tokenizer.ggml.tokens\" has 4; it needs one entry per token "
       "(re-convert the model)"},
      {"scores of the wrong type",
       [](GgufWriter &w) {
         writeSmallSpm(w);
         w.addString("tokenizer.ggml.scores", "high");
       },
       "test.gguf: metadata \"tokenizer.ggml.scores\" is a string but must be "
       "an array of float32 (or int32), one score per token"},
      {"token types of the wrong type",
       [](GgufWriter &w) {
         writeSmallSpm(w);
         w.addF32Array("tokenizer.ggml.token_type", {1, 1, 1, 1});
       },
       "test.gguf: metadata \"tokenizer.ggml.token_type\" is an array of "
       "float32 but must be an array of int32, one token type per token"},
      {"too few token types",
       [](GgufWriter &w) {
         writeSmallSpm(w);
         w.addI32Array("tokenizer.ggml.token_type", {2, 3});
       },
       "test.gguf: metadata \"tokenizer.ggml.token_type\" has 2 entries but "
       "metadata \"tokenizer.ggml.tokens\" has 4; it needs one entry per token "
       "(re-convert the model)"},
      {"duplicate token",
       [](GgufWriter &w) {
         w.addString("tokenizer.ggml.model", "llama");
         w.addStringArray("tokenizer.ggml.tokens",
                          {"<unk>", "<s>", "</s>", "a", "a"});
       },
       "test.gguf: metadata \"tokenizer.ggml.tokens\" holds \"a\" at id 3 and "
       "again at id 4; token strings must be unique (re-convert the model)"},
      {"badly spelled byte token",
       [](GgufWriter &w) {
         writeSmallSpm(w);
         w.addI32Array("tokenizer.ggml.token_type", {2, 3, 3, 6});
       },
       "test.gguf: metadata \"tokenizer.ggml.token_type\" makes token 3 "
       "(\"a\") a byte token (type 6), but byte tokens are spelled <0xNN>; "
       "correct its type or its string"},
      {"BOS id out of range",
       [](GgufWriter &w) {
         writeSmallSpm(w);
         w.addU32("tokenizer.ggml.bos_token_id", 600);
       },
       "test.gguf: metadata \"tokenizer.ggml.bos_token_id\" is 600 but the "
       "vocabulary has 4 tokens (ids 0..3); correct the id, or remove the key "
       "to use the default, 1"},
      {"EOT id out of range",
       [](GgufWriter &w) {
         writeSmallSpm(w);
         w.addU32("tokenizer.ggml.eot_token_id", 4);
       },
       "test.gguf: metadata \"tokenizer.ggml.eot_token_id\" is 4 but the "
       "vocabulary has 4 tokens (ids 0..3); correct the id, or remove the key "
       "if the vocabulary has no such token"},
      {"EOS id of the wrong type",
       [](GgufWriter &w) {
         writeSmallSpm(w);
         w.addString("tokenizer.ggml.eos_token_id", "2");
       },
       "test.gguf: metadata \"tokenizer.ggml.eos_token_id\" is a string but "
       "must be an unsigned integer token id"},
      {"flag of the wrong type",
       [](GgufWriter &w) {
         writeSmallSpm(w);
         w.addU32("tokenizer.ggml.add_bos_token", 1);
       },
       "test.gguf: metadata \"tokenizer.ggml.add_bos_token\" is a uint32 but "
       "must be a bool"},
      {"EOS added but absent",
       [](GgufWriter &w) {
         w.addString("tokenizer.ggml.model", "llama");
         w.addStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>"});
         w.addBool("tokenizer.ggml.add_eos_token", true);
       },
       "test.gguf: metadata \"tokenizer.ggml.add_eos_token\" is true but "
       "there is no EOS token; set \"tokenizer.ggml.eos_token_id\" or set the "
       "flag to false"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(errorOf(spmImage(c.write)), c.expected) << c.name;
}

TEST(TokenizerMetadataTest, ReportsBadBpeKeys) {
  BpeVocab noMerges = helloWorldVocab();
  noMerges.extra = nullptr;
  {
    // A file without merges: write the keys by hand.
    GgufWriter writer;
    writer.addString("tokenizer.ggml.model", "gpt2");
    writer.addString("tokenizer.ggml.pre", "llama-bpe");
    writer.addStringArray("tokenizer.ggml.tokens", bpeTokens(noMerges));
    EXPECT_EQ(errorOf(writer.serialize()),
              "test.gguf: metadata \"tokenizer.ggml.merges\" is missing; a "
              "\"gpt2\" tokenizer needs its BPE merges (re-convert the model "
              "with its tokenizer files)");
  }
  BpeVocab unknownPre = helloWorldVocab("klingon");
  EXPECT_EQ(errorOf(bpeImage(unknownPre)),
            "test.gguf: metadata \"tokenizer.ggml.pre\" is \"klingon\", a "
            "pre-tokenizer hetc does not implement (it has: default, gpt-2, "
            "phi-2, mpt, olmo, llama3, llama-v3, llama-bpe, dbrx, smaug-bpe, "
            "qwen2, deepseek-r1-qwen, megrez, stablelm2); add it to "
            "runtime/tokenizer/BpeTokenizer.cpp with llama.cpp's regexes for "
            "it");
  BpeVocab mergesAsNumbers = helloWorldVocab();
  mergesAsNumbers.merges.clear();
  {
    GgufWriter writer;
    writer.addString("tokenizer.ggml.model", "gpt2");
    writer.addStringArray("tokenizer.ggml.tokens", bpeTokens(mergesAsNumbers));
    writer.addI32Array("tokenizer.ggml.merges", {1});
    EXPECT_EQ(errorOf(writer.serialize()),
              "test.gguf: metadata \"tokenizer.ggml.merges\" is an array of "
              "int32 but must be an array of string (\"left right\" pairs)");
  }
  {
    // llama-bpe adds BOS by default, and a 4-token vocabulary has no id 11.
    GgufWriter writer;
    writer.addString("tokenizer.ggml.model", "gpt2");
    writer.addString("tokenizer.ggml.pre", "llama-bpe");
    writer.addStringArray("tokenizer.ggml.tokens", {"a", "b", "c", "ab"});
    writer.addStringArray("tokenizer.ggml.merges", {"a b"});
    EXPECT_EQ(errorOf(writer.serialize()),
              "test.gguf: metadata \"tokenizer.ggml.add_bos_token\" is true "
              "(or defaults to true) but there is no BOS token; set "
              "\"tokenizer.ggml.bos_token_id\" or set the flag to false");
  }
  // A merge must be two non-empty tokens split by a space; llama.cpp keeps a
  // malformed line as an unusable pair, which hides a damaged file.
  for (const char *merge : {"hello", "h ", " "}) {
    BpeVocab badMerge = helloWorldVocab();
    badMerge.merges[2] = merge;
    EXPECT_EQ(errorOf(bpeImage(badMerge)),
              std::string("test.gguf: metadata \"tokenizer.ggml.merges\" "
                          "entry 2 (\"") +
                  merge +
                  "\") is not a \"left right\" pair of two non-empty "
                  "tokens; re-convert the model with its tokenizer files")
        << merge;
  }
}

TEST(TokenizerMetadataTest, RefusesUnknownTokenTypes) {
  for (int32_t type : {7, 99, -1}) {
    GgufWriter writer;
    writeSmallSpm(writer);
    writer.addI32Array("tokenizer.ggml.token_type", {2, 3, 3, type});
    EXPECT_EQ(errorOf(writer.serialize()),
              "test.gguf: metadata \"tokenizer.ggml.token_type\" gives token "
              "3 (\"a\") type " +
                  std::to_string(type) +
                  ", but token types are 0 to 6 (undefined, normal, unknown, "
                  "control, user-defined, unused, byte); fix the type or "
                  "re-convert the model");
  }
}

} // namespace
