// Internals shared by the tokenizer's source files: the loaded vocabulary,
// UTF-8 helpers that reproduce llama.cpp's lenient decoding, the GPT-2 byte
// table, and the SPM and BPE encoders. Not installed; include only from
// runtime/tokenizer/*.cpp.
#ifndef HETRT_TOKENIZER_TOKENIZERIMPL_H
#define HETRT_TOKENIZER_TOKENIZERIMPL_H

#include "runtime/tokenizer/Tokenizer.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hetrt::tokenizer::detail {

/// Token attributes as bit flags, with llama.cpp's `llama_token_attr` values,
/// so that its fix-ups (adding CONTROL to end-of-turn tokens) read the same.
enum TokenAttr : uint32_t {
  AttrUndefined = 0,
  AttrUnknown = 1u << 0,
  AttrUnused = 1u << 1,
  AttrNormal = 1u << 2,
  AttrControl = 1u << 3,
  AttrUserDefined = 1u << 4,
  AttrByte = 1u << 5,
};

/// The token table.
struct Vocab {
  std::vector<std::string> texts;
  std::vector<float> scores;
  std::vector<uint32_t> attrs;
  std::unordered_map<std::string, int32_t> idsByText;

  int32_t size() const { return static_cast<int32_t>(texts.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < size(); }
  /// The id whose text is exactly `text`, or -1.
  int32_t find(const std::string &text) const {
    auto it = idsByText.find(text);
    return it == idsByText.end() ? -1 : it->second;
  }
};

/// Length of the UTF-8 sequence that `lead` starts, from its high nibble only
/// (1 for continuation bytes), as llama.cpp's `unicode_len_utf8`.
size_t utf8SequenceLength(char lead);

/// Decodes `text` into code points the way llama.cpp's
/// `unicode_cpts_from_utf8` does: a sequence whose continuation bytes are
/// missing or malformed yields U+FFFD and consumes one byte; overlong forms
/// and surrogates are accepted as they decode.
std::vector<uint32_t> decodeUtf8Lenient(std::string_view text);

/// Appends the UTF-8 encoding of `cpt`; code points above U+10FFFF (which
/// llama.cpp cannot encode) become U+FFFD.
void appendUtf8(std::string &out, uint32_t cpt);

/// GPT-2's byte-to-unicode table: the UTF-8 string of the printable
/// character that stands for each byte in byte-level BPE tokens.
const std::array<std::string, 256> &byteToUnicode();
/// The byte that code point `cpt` stands for in byte-level BPE, or -1.
int unicodeToByte(uint32_t cpt);

/// SentencePiece-style encoding of one text fragment whose spaces are
/// already `▁`: llama.cpp's `llm_tokenizer_spm_session::tokenize`.
/// `byteTokens[b]` is the id for byte b (-1 when missing) and `unk` the
/// fallback for a byte without a token.
void encodeSpmFragment(const Vocab &vocab, const std::string &text,
                       const std::array<int32_t, 256> &byteTokens, int32_t unk,
                       std::vector<int32_t> &out);

/// The pre-tokenizer families hetc implements, named after llama.cpp's
/// LLAMA_VOCAB_PRE_TYPE_*.
enum class PreTokenizerKind { Default, Gpt2, Llama3, Qwen2 };

/// Settings that llama.cpp attaches to a `tokenizer.ggml.pre` name.
struct PreTokenizerSpec {
  const char *name;
  PreTokenizerKind kind;
  bool cleanSpaces;
  bool ignoreMerges;
  bool addBos;
};

/// The spec of `name`, or null when hetc does not implement it.
const PreTokenizerSpec *findPreTokenizer(std::string_view name);
/// The implemented names, comma-separated, for error messages.
std::string preTokenizerNames();

/// Byte-level BPE: compiled pre-tokenizer regexes and merge ranks.
class BpeModel {
public:
  /// Compiles the regexes of `kind` and indexes `merges` ("left right", rank
  /// = position; the first of duplicate pairs wins). Returns null and sets
  /// `error` if PCRE2 rejects a pattern.
  static std::unique_ptr<BpeModel>
  create(PreTokenizerKind kind, bool ignoreMerges,
         const std::vector<std::string> &merges, std::string &error);
  ~BpeModel();

  /// Splits `text` into words (UTF-8, before byte mapping), as llama.cpp's
  /// `unicode_regex_split` does before byte encoding.
  std::vector<std::string> split(std::string_view text) const;

  /// Encodes one raw-text fragment: llama.cpp's
  /// `llm_tokenizer_bpe_session::tokenize`.
  void encodeFragment(const Vocab &vocab, std::string_view text,
                      std::vector<int32_t> &out) const;

  class Regex;

private:
  BpeModel() = default;
  /// The rank of merging `left` and `right`, or -1.
  int32_t rank(const std::string &left, const std::string &right) const;

  struct PairHash {
    size_t operator()(const std::pair<std::string, std::string> &p) const;
  };

  std::vector<std::unique_ptr<Regex>> regexes_;
  std::unordered_map<std::pair<std::string, std::string>, int32_t, PairHash>
      ranks_;
  bool ignoreMerges_ = false;
};

} // namespace hetrt::tokenizer::detail

#endif // HETRT_TOKENIZER_TOKENIZERIMPL_H
