// A deterministic synthetic SPM vocabulary: byte fallback makes it complete,
// the word pieces make encodings short enough to be realistic.
#include "runtime/tokenizer/SyntheticVocab.h"

#include <set>
#include <vector>

namespace hetrt::tokenizer {

namespace {
// Special tokens, byte tokens and the space marker, without which spaces
// would decode as "▁".
constexpr int32_t kMinimumSize = kMinimumSyntheticVocab;
constexpr const char *kSpace = "\xe2\x96\x81";

/// Words whose prefix chains ("▁t", "▁th", "▁the") become pieces; every
/// chain step is a token, so SPM merging can reach the whole word.
constexpr const char *kWords[] = {
    "the",  "and",  "a",     "to",    "was",    "he",    "she",   "it",
    "of",   "in",   "that",  "is",    "for",    "on",    "with",  "as",
    "his",  "her",  "they",  "at",    "be",     "this",  "had",   "not",
    "but",  "you",  "one",   "day",   "said",   "so",    "very",  "little",
    "big",  "time", "once",  "upon",  "there",  "play",  "happy", "friend",
    "saw",  "went", "could", "would", "wanted", "named", "girl",  "boy",
    "dog",  "cat",  "ball",  "park",  "sun",    "tree",  "home",  "mom",
    "dad",  "Lily", "Tom",   "The",   "She",    "He",    "It",    "One",
    "Once",
};
constexpr const char *kSuffixes[] = {"ed", "ing", "er", "ly", "es"};
} // namespace

bool writeSyntheticSpmVocab(format::GgufWriter &writer, int32_t vocabSize,
                            std::string &error) {
  if (vocabSize < kMinimumSize) {
    error = "a synthetic SPM vocabulary needs at least " +
            std::to_string(kMinimumSize) +
            " tokens (3 special, 256 byte tokens and the space marker), not " +
            std::to_string(vocabSize);
    return false;
  }
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    types.push_back(6);
  }

  std::vector<std::string> pieces = {kSpace};
  for (char c = 0x21; c < 0x7F; ++c)
    pieces.emplace_back(1, c);
  for (const char *suffix : kSuffixes)
    for (size_t k = 2; suffix[k - 1] != '\0'; ++k)
      pieces.emplace_back(suffix, k);
  for (const char *word : kWords)
    for (size_t k = 1; word[k - 1] != '\0'; ++k)
      pieces.push_back(kSpace + std::string(word, k));
  for (char first = 'a'; first <= 'z'; ++first)
    for (char second = 'a'; second <= 'z'; ++second)
      pieces.push_back(std::string{first, second});

  std::set<std::string> seen(tokens.begin(), tokens.end());
  std::vector<float> scores(tokens.size(), 0.0f);
  float score = 0.0f;
  for (const std::string &piece : pieces) {
    if (static_cast<int32_t>(tokens.size()) == vocabSize)
      break;
    if (!seen.insert(piece).second)
      continue;
    tokens.push_back(piece);
    types.push_back(1);
    scores.push_back(score);
    score -= 1.0f;
  }
  while (static_cast<int32_t>(tokens.size()) < vocabSize) {
    tokens.push_back("<unused_" + std::to_string(tokens.size()) + ">");
    types.push_back(5);
    scores.push_back(0.0f);
  }

  writer.addString("tokenizer.ggml.model", "llama");
  writer.addStringArray("tokenizer.ggml.tokens", tokens);
  writer.addF32Array("tokenizer.ggml.scores", scores);
  writer.addI32Array("tokenizer.ggml.token_type", types);
  writer.addU32("tokenizer.ggml.unknown_token_id", 0);
  writer.addU32("tokenizer.ggml.bos_token_id", 1);
  writer.addU32("tokenizer.ggml.eos_token_id", 2);
  writer.addBool("tokenizer.ggml.add_bos_token", true);
  writer.addBool("tokenizer.ggml.add_eos_token", false);
  return true;
}

} // namespace hetrt::tokenizer
