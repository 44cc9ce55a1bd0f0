// The text tokenizer of the runtime and the CLI: SentencePiece-style BPE
// ("llama") and byte-level BPE ("gpt2"), built from a GGUF file's tokenizer
// metadata and producing the same token ids and text as llama.cpp.
#ifndef HETRT_TOKENIZER_TOKENIZER_H
#define HETRT_TOKENIZER_TOKENIZER_H

#include "runtime/format/Gguf.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hetrt::tokenizer {

/// The vocabulary family, from `tokenizer.ggml.model`.
enum class VocabKind {
  /// "llama": SentencePiece-style BPE over UTF-8 characters with `▁` for
  /// spaces, merged by token score, with `<0xNN>` byte fallback.
  Spm,
  /// "gpt2": byte-level BPE (GPT-2, Llama 3, Qwen2): a regex pre-tokenizer,
  /// bytes mapped to printable characters, merges applied by rank.
  Bpe,
};

/// GGUF token types (`tokenizer.ggml.token_type`), with the file's values.
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

/// A loaded tokenizer. Immutable after `fromGguf`, so every const member may
/// be called from several threads at once. Token ids are `int32_t` in
/// [0, vocabSize()); -1 stands for "no such token" wherever an id is returned.
class Tokenizer {
public:
  /// Builds the tokenizer described by `file`'s `tokenizer.ggml.*` metadata,
  /// applying llama.cpp's defaults for absent keys (listed at the top of
  /// Tokenizer.cpp). The result does not refer to `file` afterwards. On bad
  /// or unsupported metadata returns null and sets `error` to a message that
  /// starts with the file's path, names the key, and says how to fix it.
  static std::unique_ptr<Tokenizer> fromGguf(const format::GgufFile &file,
                                             std::string &error);

  /// fromGguf, and the vocabulary checked against the `modelVocab` outputs
  /// of the model's weights: what every command checks before it compiles,
  /// imports or caches a model, so a model that cannot run is refused at
  /// once.
  static std::unique_ptr<Tokenizer> forModel(const format::GgufFile &file,
                                             int64_t modelVocab,
                                             std::string &error);

  ~Tokenizer();
  Tokenizer(const Tokenizer &) = delete;
  Tokenizer &operator=(const Tokenizer &) = delete;

  VocabKind kind() const;
  /// The `tokenizer.ggml.pre` name in effect for BPE ("default" when the key
  /// is absent); empty for SPM.
  const std::string &preTokenizerName() const;
  int32_t vocabSize() const;

  /// The most prompt bytes `tokens` tokens can stand for, with room to
  /// spare: twice the longest token text (a token never stands for more
  /// bytes than its text has) per token, plus 1 KiB. A longer text cannot
  /// fit, and is refused before the (per-byte costly) encoding.
  uint64_t maxTextBytesFor(uint64_t tokens) const;
  /// Special token ids, or -1 when the vocabulary has none.
  int32_t bos() const;
  int32_t eos() const;
  int32_t unk() const;
  int32_t pad() const;
  /// Whether `encode(..., addSpecial=true)` prepends BOS / appends EOS.
  bool addsBos() const;
  bool addsEos() const;
  /// Whether SPM encoding puts a space before the text (and after each
  /// special token), as `tokenizer.ggml.add_space_prefix` says.
  bool addsSpacePrefix() const;

  /// True for the tokens that end generation: EOS, EOT and EOM (from the
  /// metadata), and the end-of-turn and fill-in-middle tokens llama.cpp
  /// recognises by their text ("<|eot_id|>", "<|im_end|>", "</s>", ...).
  /// False for ids out of range.
  bool isEndOfGeneration(int32_t id) const;

  /// The token's type after llama.cpp's fix-ups (an end-of-turn token stored
  /// as normal is treated as control). Undefined for ids out of range.
  TokenType tokenType(int32_t id) const;
  /// The token's string as stored in the vocabulary ("▁Once", "<0x0A>",
  /// "Ġworld"); empty for ids out of range. The view lives as long as the
  /// tokenizer.
  std::string_view tokenPiece(int32_t id) const;
  /// The id of the token whose vocabulary string is exactly `piece`, or -1.
  int32_t findToken(std::string_view piece) const;

  /// Tokenizes `text` exactly as llama.cpp's `llama_tokenize(vocab, text,
  /// addSpecial, parseSpecial)`. `addSpecial` adds BOS and EOS as the
  /// metadata says (addsBos/addsEos). With `parseSpecial`, control and
  /// unknown tokens written in the text ("<s>", "<|begin_of_text|>") become
  /// those tokens; user-defined tokens are always matched whole. Any byte
  /// string is accepted: SPM falls back to `<0xNN>` byte tokens (to one UNK
  /// per byte when the vocabulary lacks them, where llama.cpp aborts), and
  /// BPE replaces each byte that is not valid UTF-8 by U+FFFD first, as
  /// llama.cpp does, so such bytes do not survive a BPE round trip.
  std::vector<int32_t> encode(std::string_view text, bool addSpecial,
                              bool parseSpecial = false) const;

  /// BPE only: the words the pre-tokenizer regexes split `text` into, before
  /// byte mapping and merges (for SPM: `text` as one word). For tests and
  /// diagnostics; special tokens are not looked for.
  std::vector<std::string> preTokenize(std::string_view text) const;

  /// The text of one token for streaming output: `▁` becomes a space, byte
  /// tokens become their raw byte, BPE tokens are mapped back through the byte
  /// table, user-defined tokens are their string, and control, unknown,
  /// unused and undefined tokens are empty unless `renderSpecial` (control and
  /// unknown then give their string). This is llama.cpp's
  /// `llama_token_to_piece(..., lstrip=0, special=renderSpecial)`. A byte
  /// token may be part of a multi-byte character: callers that print pieces
  /// one at a time must hold incomplete UTF-8 until the rest arrives. Empty
  /// for ids out of range.
  std::string decodeToken(int32_t id, bool renderSpecial = false) const;

  /// The text of a whole sequence: the pieces of `decodeToken` joined, except
  /// that when the sequence starts with BOS and the vocabulary adds a space
  /// prefix, the one space the encoder put before the text is removed again.
  /// So `decode(encode(t, true)) == t` for SPM text without special tokens
  /// or U+2581, and a sequence without BOS (a continuation) decodes to
  /// exactly what streaming its pieces prints. Invalid UTF-8 survives SPM
  /// unless a space follows an invalid lead byte within its claimed length
  /// (llama.cpp cuts characters by the lead byte, so the `▁` is split and
  /// comes back as raw bytes); BPE returns U+FFFD for it. Ids out of range
  /// render empty.
  std::string decode(const std::vector<int32_t> &ids) const;

  /// llama.cpp's `llama_detokenize(vocab, ids, removeSpecial,
  /// unparseSpecial)`, for comparing with llama.cpp output: with a space
  /// prefix it strips the leading space of the *first* token (even when that
  /// token is not BOS; a leading BOS keeps the space), `removeSpecial` drops
  /// a leading BOS / trailing EOS when the vocabulary adds them, and BPE
  /// vocabularies whose pre-tokenizer asks for it clean up spaces before
  /// ".,!?" and in contractions. Ids out of range render empty.
  std::string detokenize(const std::vector<int32_t> &ids, bool removeSpecial,
                         bool unparseSpecial) const;

  /// The loaded state, defined in Tokenizer.cpp.
  struct Impl;

private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace hetrt::tokenizer

#endif // HETRT_TOKENIZER_TOKENIZER_H
