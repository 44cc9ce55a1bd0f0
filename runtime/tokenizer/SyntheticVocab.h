// Writes a small but complete SentencePiece-style tokenizer into a GGUF file
// being built, for `hetc synth` models and tests that need a vocabulary.
#ifndef HETRT_TOKENIZER_SYNTHETICVOCAB_H
#define HETRT_TOKENIZER_SYNTHETICVOCAB_H

#include "runtime/format/GgufWriter.h"

#include <cstdint>
#include <string>

namespace hetrt::tokenizer {

/// Adds the `tokenizer.ggml.*` keys of a "llama" (SPM) vocabulary of exactly
/// `vocabSize` tokens to `writer`: <unk> 0, <s> 1, </s> 2, the byte tokens
/// <0x00>..<0xFF> at 3..258, then "▁", the printable ASCII characters and
/// common English pieces with decreasing scores, padded with unused tokens.
/// UTF-8 text without U+2581 (which SPM decodes as a space) round-trips
/// through `Tokenizer::encode` and `decode` (see `decode` for invalid
/// bytes). The result is the
/// same on every call. Returns false and sets `error` when `vocabSize` is
/// below 260: the special and byte tokens and "▁".
/// The smallest synthetic vocabulary: 3 special tokens, 256 byte tokens and
/// the space marker.
inline constexpr int32_t kMinimumSyntheticVocab = 3 + 256 + 1;

bool writeSyntheticSpmVocab(format::GgufWriter &writer, int32_t vocabSize,
                            std::string &error);

} // namespace hetrt::tokenizer

#endif // HETRT_TOKENIZER_SYNTHETICVOCAB_H
