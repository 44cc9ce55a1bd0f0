// Loading a tokenizer from GGUF metadata, special-token handling and
// decoding. Follows llama.cpp's src/llama-vocab.cpp (llama_vocab::impl::load,
// tokenize, token_to_piece, detokenize) so that ids and text agree with it:
//
// - Defaults for absent keys are llama.cpp's. "llama": BOS 1, EOS 2, UNK 0,
//   BOS added, EOS not, space prefix added. "gpt2": BOS = EOS = 11 (disabled
//   when the vocabulary is smaller), no UNK, no space prefix, BOS added only
//   for the Llama 3 pre-tokenizers, EOS not; pre-tokenizer "default" when
//   `tokenizer.ggml.pre` is absent. Default ids outside the vocabulary are
//   disabled, as in llama.cpp.
// - Where llama.cpp would warn and carry on with a broken vocabulary, hetc
//   reports an error instead: a special-token id outside the vocabulary (the
//   all-ones value converters write for "unset" keeps the default, as in
//   llama.cpp), a byte-typed token not spelled <0xNN>. Where llama.cpp
//   aborts (SPM text needing a byte token the vocabulary lacks), hetc emits
//   UNK for that byte.
// - Per-model attribute hacks keyed to `general.name` are not applied: for
//   Phi-3 (an SPM vocabulary) llama.cpp drops the whitespace after special
//   tokens parsed from the text, hetc keeps it; the Jina and ModernBERT
//   <mask> hacks need pre-tokenizers hetc does not accept.
// - End-of-generation tokens and the CONTROL fix-ups of end-of-turn and
//   fill-in-middle tokens are recognised by their text, as llama.cpp does.
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/TokenizerImpl.h"

#include "runtime/format/InputFile.h"

#include <algorithm>
#include <cstdio>
#include <list>
#include <optional>

namespace hetrt::tokenizer {

using namespace detail;
using format::GgufFile;
using format::GgufType;
using format::GgufValue;
using format::printable;

struct Tokenizer::Impl {
  VocabKind kind = VocabKind::Spm;
  std::string preName;
  const PreTokenizerSpec *pre = nullptr;
  Vocab vocab;
  std::unique_ptr<BpeModel> bpe;
  /// SPM byte fallback: the token of each byte, -1 when missing.
  std::array<int32_t, 256> byteTokens{};

  int32_t bos = -1, eos = -1, unk = -1, pad = -1, eot = -1, eom = -1;
  int32_t fimPre = -1, fimSuf = -1, fimMid = -1, fimPad = -1, fimRep = -1,
          fimSep = -1;
  bool addBos = false;
  bool addEos = false;
  bool addSpacePrefix = false;
  bool cleanSpaces = false;

  std::vector<uint8_t> endOfGeneration;
  /// Control, user-defined and unknown tokens, longest string first: the
  /// order in which text is searched for them.
  std::vector<int32_t> specialTokens;
  /// Each token's text with special tokens rendered (llama.cpp's
  /// cache_token_to_piece).
  std::vector<std::string> pieces;

  std::string renderPiece(int32_t id) const;
  std::string piece(int32_t id, bool renderSpecial) const;
};

namespace {

constexpr const char *kModelKey = "tokenizer.ggml.model";
constexpr const char *kPreKey = "tokenizer.ggml.pre";
constexpr const char *kTokensKey = "tokenizer.ggml.tokens";
constexpr const char *kScoresKey = "tokenizer.ggml.scores";
constexpr const char *kTypesKey = "tokenizer.ggml.token_type";
constexpr const char *kMergesKey = "tokenizer.ggml.merges";
constexpr const char *kAddBosKey = "tokenizer.ggml.add_bos_token";
constexpr const char *kAddEosKey = "tokenizer.ggml.add_eos_token";
constexpr const char *kAddSpacePrefixKey = "tokenizer.ggml.add_space_prefix";
constexpr const char *kBosKey = "tokenizer.ggml.bos_token_id";

/// The space marker of SentencePiece vocabularies, U+2581.
constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";

std::string quoted(std::string_view key) {
  return "metadata \"" + std::string(key) + "\"";
}

/// "a uint32", "an array of float32": how a value's type reads in messages.
std::string describeType(const GgufValue &value) {
  if (value.type() == GgufType::Array)
    return "an array of " +
           std::string(format::ggufTypeName(value.elementType()));
  std::string_view name = format::ggufTypeName(value.type());
  // "an int32", "an array", but "a uint32".
  bool vowel = !name.empty() &&
               std::string_view("aeio").find(name[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + std::string(name);
}

void replaceAll(std::string &text, std::string_view from, std::string_view to) {
  std::string result;
  result.reserve(text.size());
  size_t at = 0;
  while (true) {
    size_t next = text.find(from, at);
    if (next == std::string::npos)
      break;
    result.append(text, at, next - at);
    result.append(to);
    at = next + from.size();
  }
  result.append(text, at, std::string::npos);
  text = std::move(result);
}

bool isHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

/// The byte a `<0xNN>` token stands for, or -1 if `text` is not that form.
int byteTokenValue(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>' ||
      !isHexDigit(text[3]) || !isHexDigit(text[4]))
    return -1;
  return std::stoi(std::string(text.substr(3, 2)), nullptr, 16);
}

/// Reads and checks the tokenizer keys of one file; every failure names the
/// key and the fix, prefixed with the file's path.
class MetadataReader {
public:
  MetadataReader(const GgufFile &file, std::string &error)
      : file_(file), error_(error) {}

  bool fail(const std::string &message) {
    error_ = file_.path() + ": " + message;
    return false;
  }

  const GgufValue *find(std::string_view key) const { return file_.find(key); }

  /// Absent keys leave `out` empty.
  bool readString(const char *key, std::optional<std::string> &out,
                  const char *what) {
    const GgufValue *value = find(key);
    if (!value)
      return true;
    std::optional<std::string_view> text = value->asString();
    if (!text)
      return fail(quoted(key) + " is " + describeType(*value) +
                  " but must be a string (" + what + ")");
    out = std::string(*text);
    return true;
  }

  bool readBool(const char *key, bool &out) {
    const GgufValue *value = find(key);
    if (!value)
      return true;
    std::optional<bool> flag = value->asBool();
    if (!flag)
      return fail(quoted(key) + " is " + describeType(*value) +
                  " but must be a bool");
    out = *flag;
    return true;
  }

  /// A special-token id: `id` holds the default on entry. The all-ones value
  /// (u32 0xFFFFFFFF, or -1) means "not set" and keeps the default.
  bool readTokenId(const char *key, int32_t vocabSize, int32_t &id) {
    const GgufValue *value = find(key);
    if (!value)
      return true;
    std::optional<int64_t> number = value->asInt();
    if (!number)
      return fail(quoted(key) + " is " + describeType(*value) +
                  " but must be an unsigned integer token id");
    if (*number == -1 || *number == 0xFFFFFFFFll)
      return true;
    if (*number < 0 || *number >= vocabSize) {
      std::string fallback =
          id >= 0 ? "remove the key to use the default, " + std::to_string(id)
                  : "remove the key if the vocabulary has no such token";
      return fail(quoted(key) + " is " + std::to_string(*number) +
                  " but the vocabulary has " + std::to_string(vocabSize) +
                  " tokens (ids 0.." + std::to_string(vocabSize - 1) +
                  "); correct the id, or " + fallback);
    }
    id = static_cast<int32_t>(*number);
    return true;
  }

  /// An array whose elements all satisfy the caller's check; `elements` is
  /// null when the key is absent.
  bool readArray(const char *key, std::initializer_list<GgufType> elementTypes,
                 const char *expected,
                 const std::vector<GgufValue> *&elements) {
    elements = nullptr;
    const GgufValue *value = find(key);
    if (!value)
      return true;
    bool typeOk = value->type() == GgufType::Array &&
                  std::find(elementTypes.begin(), elementTypes.end(),
                            value->elementType()) != elementTypes.end();
    if (!typeOk)
      return fail(quoted(key) + " is " + describeType(*value) +
                  " but must be " + expected);
    elements = &value->elements();
    return true;
  }

private:
  const GgufFile &file_;
  std::string &error_;
};

/// Texts llama.cpp treats as end of generation (llama_vocab::impl::load).
constexpr const char *kEndOfGenerationTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\uFF5Cend\u2581of\u2581sentence\uFF5C>",
    "[e~[",
};

/// A text-recognised special token: the metadata key that names it, the texts
/// that identify it when the key is absent, and where its id goes.
struct AutoDetected {
  const char *key;
  std::vector<const char *> texts;
  int32_t Tokenizer::Impl::*id;
};

const std::vector<AutoDetected> &autoDetectedTokens() {
  static const std::vector<AutoDetected> tokens = {
      {"tokenizer.ggml.eom_token_id", {"<|eom_id|>"}, &Tokenizer::Impl::eom},
      {"tokenizer.ggml.fim_pre_token_id",
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
        "<\uFF5Cfim\u2581begin\uFF5C>", "<PRE>", "\u2581<PRE>",
        "<|code_prefix|>", "<|prefix|>"},
       &Tokenizer::Impl::fimPre},
      {"tokenizer.ggml.fim_suf_token_id",
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
        "<\uFF5Cfim\u2581hole\uFF5C>", "<SUF>", "\u2581<SUF>",
        "<|code_suffix|>", "<|suffix|>"},
       &Tokenizer::Impl::fimSuf},
      {"tokenizer.ggml.fim_mid_token_id",
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
        "<\uFF5Cfim\u2581end\uFF5C>", "<MID>", "\u2581<MID>", "<|code_middle|>",
        "<|middle|>"},
       &Tokenizer::Impl::fimMid},
      {"tokenizer.ggml.fim_pad_token_id",
       {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
       &Tokenizer::Impl::fimPad},
      {"tokenizer.ggml.fim_rep_token_id",
       {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
       &Tokenizer::Impl::fimRep},
      {"tokenizer.ggml.fim_sep_token_id",
       {"<|file_sep|>"},
       &Tokenizer::Impl::fimSep},
  };
  return tokens;
}

/// llama.cpp's llama_decode_text: maps a byte-level BPE token back to bytes.
/// A character outside the byte table (only in a malformed vocabulary) is
/// shown as llama.cpp shows it.
std::string decodeByteLevel(const std::string &text) {
  std::string bytes;
  for (uint32_t cpt : decodeUtf8Lenient(text)) {
    int byte = unicodeToByte(cpt);
    if (byte >= 0) {
      bytes.push_back(static_cast<char>(byte));
      continue;
    }
    std::string utf8;
    appendUtf8(utf8, cpt);
    bytes += "[UNK_BYTE_0x";
    for (char c : utf8) {
      char hex[3];
      std::snprintf(hex, sizeof(hex), "%02x", static_cast<uint8_t>(c));
      bytes += hex;
    }
    bytes += text + "]";
  }
  return bytes;
}

/// llama.cpp's clean_up_tokenization_spaces passes, in place and in the same
/// order (each pass reads characters the previous writes may have moved).
void cleanUpSpaces(std::string &text) {
  size_t total1 = text.size();
  size_t total = total1 ? 1 : 0;
  for (size_t i = 1; i < total1; ++i) {
    char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
      --total; // " ?", " !", " .", " ,"
    text[total++] = x;
  }
  size_t total2 = total;
  total = total ? 1 : 0;
  for (size_t i = 1; i < total2; ++i) {
    char x = text[i];
    if (x == '\'' && i + 1 < total2 && text[i - 1] == ' ' &&
        text[i + 1] == ' ') { // " ' "
      --total;
      text[++i] = '\0';
    }
    text[total++] = x;
  }
  size_t total3 = total;
  total = total ? 1 : 0;
  for (size_t i = 1; i < total3; ++i) {
    char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < total3) {
      char x1 = text[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total; // " 's", " 'm"
      } else if (x1 != 't' && x1 != 'd' && i + 2 < total3) {
        char x2 = text[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e'))
          --total; // " 're", " 've"
      }
    }
    text[total++] = x;
  }
  text.resize(total);
}

} // namespace

std::string Tokenizer::Impl::renderPiece(int32_t id) const {
  const std::string &text = vocab.texts[id];
  uint32_t attr = vocab.attrs[id];
  if (attr & (AttrUnknown | AttrControl | AttrUserDefined))
    return text;
  if (attr & AttrNormal) {
    if (kind == VocabKind::Bpe)
      return decodeByteLevel(text);
    std::string result = text;
    replaceAll(result, kSpaceMarker, " ");
    return result;
  }
  if (attr & AttrByte)
    return std::string(1, static_cast<char>(byteTokenValue(text)));
  return ""; // unused and undefined tokens render empty
}

std::string Tokenizer::Impl::piece(int32_t id, bool renderSpecial) const {
  if (!vocab.valid(id))
    return "";
  if (!renderSpecial && (vocab.attrs[id] & (AttrUnknown | AttrControl)))
    return "";
  return pieces[id];
}

std::unique_ptr<Tokenizer> Tokenizer::forModel(const format::GgufFile &file,
                                               int64_t modelVocab,
                                               std::string &error) {
  std::unique_ptr<Tokenizer> tokenizer = fromGguf(file, error);
  if (tokenizer && tokenizer->vocabSize() != modelVocab) {
    error = file.path() + ": the tokenizer has " +
            std::to_string(tokenizer->vocabSize()) +
            " tokens but the model's output has " + std::to_string(modelVocab) +
            " (tokenizer.ggml.tokens against token_embd.weight); re-convert "
            "the model with its own tokenizer";
    return nullptr;
  }
  return tokenizer;
}

std::unique_ptr<Tokenizer> Tokenizer::fromGguf(const GgufFile &file,
                                               std::string &error) {
  auto impl = std::make_unique<Impl>();
  MetadataReader reader(file, error);

  // The vocabulary family and its defaults.
  std::optional<std::string> model;
  if (!reader.readString(kModelKey, model, "\"llama\" or \"gpt2\""))
    return nullptr;
  if (!model) {
    reader.fail(quoted(kModelKey) +
                " is missing, so the file has no tokenizer; re-convert the "
                "model with llama.cpp's convert_hf_to_gguf.py, which writes "
                "the tokenizer.ggml.* keys");
    return nullptr;
  }
  if (*model == "llama") {
    impl->kind = VocabKind::Spm;
    impl->bos = 1;
    impl->eos = 2;
    impl->unk = 0;
    impl->addBos = true;
    impl->addSpacePrefix = true;
  } else if (*model == "gpt2") {
    impl->kind = VocabKind::Bpe;
    impl->bos = 11;
    impl->eos = 11;
    std::optional<std::string> pre;
    if (!reader.readString(kPreKey, pre, "a pre-tokenizer name"))
      return nullptr;
    impl->preName = pre.value_or("default");
    impl->pre = findPreTokenizer(impl->preName);
    if (!impl->pre) {
      reader.fail(quoted(kPreKey) + " is \"" + impl->preName +
                  "\", a pre-tokenizer hetc does not implement (it has: " +
                  preTokenizerNames() +
                  "); add it to runtime/tokenizer/BpeTokenizer.cpp with "
                  "llama.cpp's regexes for it");
      return nullptr;
    }
    impl->addBos = impl->pre->addBos;
    impl->cleanSpaces = impl->pre->cleanSpaces;
  } else {
    reader.fail(quoted(kModelKey) + " is \"" + *model +
                "\"; hetc supports \"llama\" (SentencePiece BPE) and "
                "\"gpt2\" (byte-level BPE)");
    return nullptr;
  }
  if (!reader.readBool(kAddSpacePrefixKey, impl->addSpacePrefix))
    return nullptr;

  // The token table.
  const std::vector<GgufValue> *tokens = nullptr;
  if (!reader.readArray(kTokensKey, {GgufType::String}, "an array of string",
                        tokens))
    return nullptr;
  if (!tokens) {
    reader.fail(quoted(kTokensKey) +
                " is missing; the vocabulary is required (re-convert the "
                "model together with its tokenizer files)");
    return nullptr;
  }
  if (tokens->empty() || tokens->size() > static_cast<size_t>(INT32_MAX)) {
    reader.fail(quoted(kTokensKey) + " has " + std::to_string(tokens->size()) +
                " entries; a vocabulary needs 1 to 2^31-1 tokens");
    return nullptr;
  }
  const auto vocabSize = static_cast<int32_t>(tokens->size());
  const std::vector<GgufValue> *scores = nullptr;
  const std::vector<GgufValue> *types = nullptr;
  if (!reader.readArray(kScoresKey, {GgufType::F32, GgufType::I32},
                        "an array of float32 (or int32), one score per token",
                        scores) ||
      !reader.readArray(kTypesKey, {GgufType::I32},
                        "an array of int32, one token type per token", types))
    return nullptr;
  for (auto [key, array] :
       {std::pair{kScoresKey, scores}, std::pair{kTypesKey, types}}) {
    if (array && array->size() < tokens->size()) {
      reader.fail(quoted(key) + " has " + std::to_string(array->size()) +
                  " entries but " + quoted(kTokensKey) + " has " +
                  std::to_string(tokens->size()) +
                  "; it needs one entry per token (re-convert the model)");
      return nullptr;
    }
  }

  Vocab &vocab = impl->vocab;
  vocab.texts.resize(vocabSize);
  vocab.scores.assign(vocabSize, 0.0f);
  vocab.attrs.assign(vocabSize, AttrNormal);
  vocab.idsByText.reserve(vocabSize);
  for (int32_t id = 0; id < vocabSize; ++id) {
    std::string text(*(*tokens)[id].asString());
    if (text.empty()) // llama.cpp renames empty tokens the same way
      text = "[EMPTY_" + std::to_string(id) + "]";
    auto [it, inserted] = vocab.idsByText.emplace(text, id);
    if (!inserted) {
      reader.fail(quoted(kTokensKey) + " holds \"" + text + "\" at id " +
                  std::to_string(it->second) + " and again at id " +
                  std::to_string(id) +
                  "; token strings must be unique (re-convert the model)");
      return nullptr;
    }
    if (scores)
      vocab.scores[id] = static_cast<float>(*(*scores)[id].asDouble());
    if (types) {
      switch (*(*types)[id].asInt()) {
      case 1:
        vocab.attrs[id] = AttrNormal;
        break;
      case 2:
        vocab.attrs[id] = AttrUnknown;
        break;
      case 3:
        vocab.attrs[id] = AttrControl;
        break;
      case 4:
        vocab.attrs[id] = AttrUserDefined;
        break;
      case 5:
        vocab.attrs[id] = AttrUnused;
        break;
      case 6:
        vocab.attrs[id] = AttrByte;
        break;
      case 0:
        vocab.attrs[id] = AttrUndefined;
        break;
      default:
        // llama.cpp aborts on such a token when it prints it; refuse it here.
        reader.fail(quoted(kTypesKey) + " gives token " + std::to_string(id) +
                    " (\"" + printable(text) + "\") type " +
                    std::to_string(*(*types)[id].asInt()) +
                    ", but token types are 0 to 6 (undefined, normal, "
                    "unknown, control, user-defined, unused, byte); fix the "
                    "type or re-convert the model");
        return nullptr;
      }
      if (vocab.attrs[id] == AttrByte && byteTokenValue(text) < 0) {
        reader.fail(quoted(kTypesKey) + " makes token " + std::to_string(id) +
                    " (\"" + text +
                    "\") a byte token (type 6), but byte tokens are spelled "
                    "<0xNN>; correct its type or its string");
        return nullptr;
      }
    }
    vocab.texts[id] = std::move(text);
  }

  // BPE merges and pre-tokenizer.
  if (impl->kind == VocabKind::Bpe) {
    const std::vector<GgufValue> *mergeValues = nullptr;
    if (!reader.readArray(kMergesKey, {GgufType::String},
                          "an array of string (\"left right\" pairs)",
                          mergeValues))
      return nullptr;
    if (!mergeValues) {
      reader.fail(quoted(kMergesKey) +
                  " is missing; a \"gpt2\" tokenizer needs its BPE merges "
                  "(re-convert the model with its tokenizer files)");
      return nullptr;
    }
    std::vector<std::string> merges;
    merges.reserve(mergeValues->size());
    for (const GgufValue &merge : *mergeValues) {
      // A merge is "left right" with both halves non-empty; the split is at
      // the first space after the first byte, as llama.cpp splits it.
      std::string_view text = *merge.asString();
      size_t space = text.size() > 1 ? text.find(' ', 1) : std::string::npos;
      if (space == std::string_view::npos || space + 1 >= text.size()) {
        reader.fail(quoted(kMergesKey) + " entry " +
                    std::to_string(merges.size()) + " (\"" +
                    printable(text) +
                    "\") is not a \"left right\" pair of two non-empty "
                    "tokens; re-convert the model with its tokenizer files");
        return nullptr;
      }
      merges.emplace_back(text);
    }
    std::string regexError;
    impl->bpe = BpeModel::create(impl->pre->kind, impl->pre->ignoreMerges,
                                 merges, regexError);
    if (!impl->bpe) {
      reader.fail(regexError);
      return nullptr;
    }
  } else {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
      int32_t id = vocab.find(name);
      impl->byteTokens[b] = id >= 0 ? id : vocab.find(std::string(1, char(b)));
    }
  }

  // Special tokens: defaults outside the vocabulary are disabled, then the
  // keys override them.
  for (int32_t *id : {&impl->bos, &impl->eos, &impl->unk})
    if (*id >= vocabSize)
      *id = -1;
  const std::pair<const char *, int32_t Impl::*> idKeys[] = {
      {kBosKey, &Impl::bos},
      {"tokenizer.ggml.eos_token_id", &Impl::eos},
      {"tokenizer.ggml.unknown_token_id", &Impl::unk},
      {"tokenizer.ggml.padding_token_id", &Impl::pad},
      {"tokenizer.ggml.eot_token_id", &Impl::eot},
  };
  for (auto [key, member] : idKeys)
    if (!reader.readTokenId(key, vocabSize, (*impl).*member))
      return nullptr;
  for (const AutoDetected &token : autoDetectedTokens())
    if (!reader.readTokenId(token.key, vocabSize, (*impl).*token.id))
      return nullptr;
  if (!reader.readBool(kAddBosKey, impl->addBos) ||
      !reader.readBool(kAddEosKey, impl->addEos))
    return nullptr;
  if (impl->addBos && impl->bos < 0) {
    reader.fail(quoted(kAddBosKey) +
                " is true (or defaults to true) but there is no BOS token; "
                "set \"" +
                kBosKey + "\" or set the flag to false");
    return nullptr;
  }
  if (impl->addEos && impl->eos < 0) {
    reader.fail(quoted(kAddEosKey) +
                " is true but there is no EOS token; set "
                "\"tokenizer.ggml.eos_token_id\" or set the flag to false");
    return nullptr;
  }

  // Text-recognised tokens, as llama.cpp's load(): fill-in-middle and EOM
  // tokens without a key are found by their string, and every token so found
  // is treated as control even if the file says otherwise.
  auto makeControl = [&](int32_t id) { vocab.attrs[id] |= AttrControl; };
  for (const AutoDetected &token : autoDetectedTokens()) {
    int32_t &id = (*impl).*token.id;
    if (id >= 0)
      continue;
    for (int32_t candidate = 0; candidate < vocabSize && id < 0; ++candidate)
      for (const char *text : token.texts)
        if (vocab.texts[candidate] == text) {
          id = candidate;
          makeControl(candidate);
          break;
        }
  }
  impl->endOfGeneration.assign(vocabSize, 0);
  auto markEog = [&](int32_t id) {
    if (id >= 0)
      impl->endOfGeneration[id] = 1;
  };
  markEog(impl->fimPad);
  markEog(impl->fimRep);
  markEog(impl->fimSep);
  for (const char *text : kEndOfGenerationTexts) {
    int32_t id = vocab.find(text);
    if (id >= 0) {
      markEog(id);
      makeControl(id);
    }
  }
  // gpt-oss's structural tokens must always render.
  for (const char *text :
       {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    int32_t id = vocab.find(text);
    if (id >= 0)
      vocab.attrs[id] = AttrUserDefined;
  }
  markEog(impl->eos);
  markEog(impl->eot);
  markEog(impl->eom);
  // Harmony-style vocabularies (<|return|> and <|call|>, or <|calls|> and
  // <|flush|>) use <|end|> inside a turn; Gemma 4 uses </s> as text.
  auto isEogText = [&](const char *text) {
    int32_t id = vocab.find(text);
    return id >= 0 && impl->endOfGeneration[id];
  };
  bool hasCall = isEogText("<|call|>") || isEogText("<|calls|>");
  if (isEogText("<|end|>") && ((isEogText("<|return|>") && hasCall) ||
                               (hasCall && isEogText("<|flush|>")))) {
    int32_t end = vocab.find("<|end|>");
    impl->endOfGeneration[end] = 0;
    vocab.attrs[end] = AttrUserDefined;
  }
  if (isEogText("<|tool_response>") && isEogText("</s>")) {
    int32_t s = vocab.find("</s>");
    impl->endOfGeneration[s] = 0;
    vocab.attrs[s] = AttrNormal;
  }

  for (int32_t id = 0; id < vocabSize; ++id)
    if (vocab.attrs[id] & (AttrControl | AttrUserDefined | AttrUnknown))
      impl->specialTokens.push_back(id);
  // Longest first; ties by id, so the order does not depend on the sort.
  std::sort(impl->specialTokens.begin(), impl->specialTokens.end(),
            [&](int32_t a, int32_t b) {
              size_t sizeA = vocab.texts[a].size();
              size_t sizeB = vocab.texts[b].size();
              return sizeA != sizeB ? sizeA > sizeB : a < b;
            });
  impl->pieces.reserve(vocabSize);
  for (int32_t id = 0; id < vocabSize; ++id)
    impl->pieces.push_back(impl->renderPiece(id));

  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

VocabKind Tokenizer::kind() const { return impl_->kind; }
const std::string &Tokenizer::preTokenizerName() const {
  return impl_->preName;
}
int32_t Tokenizer::vocabSize() const { return impl_->vocab.size(); }

uint64_t Tokenizer::maxTextBytesFor(uint64_t tokens) const {
  uint64_t longest = 1;
  for (const std::string &text : impl_->vocab.texts)
    longest = std::max<uint64_t>(longest, text.size());
  return tokens * longest * 2 + 1024;
}
int32_t Tokenizer::bos() const { return impl_->bos; }
int32_t Tokenizer::eos() const { return impl_->eos; }
int32_t Tokenizer::unk() const { return impl_->unk; }
int32_t Tokenizer::pad() const { return impl_->pad; }
bool Tokenizer::addsBos() const { return impl_->addBos; }
bool Tokenizer::addsEos() const { return impl_->addEos; }
bool Tokenizer::addsSpacePrefix() const { return impl_->addSpacePrefix; }

bool Tokenizer::isEndOfGeneration(int32_t id) const {
  return impl_->vocab.valid(id) && impl_->endOfGeneration[id];
}

TokenType Tokenizer::tokenType(int32_t id) const {
  if (!impl_->vocab.valid(id))
    return TokenType::Undefined;
  uint32_t attr = impl_->vocab.attrs[id];
  // The fix-ups only add CONTROL, so it outranks the file's type.
  if (attr & AttrControl)
    return TokenType::Control;
  if (attr & AttrUserDefined)
    return TokenType::UserDefined;
  if (attr & AttrUnknown)
    return TokenType::Unknown;
  if (attr & AttrByte)
    return TokenType::Byte;
  if (attr & AttrUnused)
    return TokenType::Unused;
  if (attr & AttrNormal)
    return TokenType::Normal;
  return TokenType::Undefined;
}

std::string_view Tokenizer::tokenPiece(int32_t id) const {
  return impl_->vocab.valid(id) ? std::string_view(impl_->vocab.texts[id])
                                : std::string_view();
}

int32_t Tokenizer::findToken(std::string_view piece) const {
  return impl_->vocab.find(std::string(piece));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addSpecial,
                                       bool parseSpecial) const {
  const Impl &impl = *impl_;
  const Vocab &vocab = impl.vocab;

  // Split the text around special tokens, longest token first, as llama.cpp's
  // tokenizer_st_partition. Control and unknown tokens are only looked for
  // when asked; user-defined ones always.
  struct Fragment {
    int32_t token; // -1 for raw text
    size_t offset;
    size_t length;
  };
  std::list<Fragment> fragments;
  if (!text.empty())
    fragments.push_back(Fragment{-1, 0, text.size()});
  for (int32_t special : impl.specialTokens) {
    if (!parseSpecial && (vocab.attrs[special] & (AttrControl | AttrUnknown)))
      continue;
    const std::string &needle = vocab.texts[special];
    for (auto it = fragments.begin(); it != fragments.end(); ++it) {
      if (it->token >= 0)
        continue;
      size_t end = it->offset + it->length;
      size_t at = text.substr(0, end).find(needle, it->offset);
      if (at == std::string_view::npos)
        continue;
      size_t rest = it->offset;
      while (at != std::string_view::npos) {
        if (at > rest)
          fragments.insert(it, Fragment{-1, rest, at - rest});
        fragments.insert(it, Fragment{special, 0, 0});
        rest = at + needle.size();
        at = rest < end ? text.substr(0, end).find(needle, rest)
                        : std::string_view::npos;
      }
      if (rest < end)
        fragments.insert(it, Fragment{-1, rest, end - rest});
      it = fragments.erase(it);
      --it;
    }
  }

  std::vector<int32_t> out;
  if (addSpecial && impl.addBos)
    out.push_back(impl.bos);
  if (impl.kind == VocabKind::Spm) {
    // A space goes before the text and after every special token.
    bool afterSpecial = true;
    for (const Fragment &fragment : fragments) {
      if (fragment.token >= 0) {
        out.push_back(fragment.token);
        afterSpecial = true;
        continue;
      }
      std::string piece = impl.addSpacePrefix && afterSpecial ? " " : "";
      piece.append(text.substr(fragment.offset, fragment.length));
      replaceAll(piece, " ", kSpaceMarker);
      encodeSpmFragment(vocab, piece, impl.byteTokens, impl.unk, out);
      afterSpecial = false;
    }
  } else {
    for (const Fragment &fragment : fragments) {
      if (fragment.token >= 0)
        out.push_back(fragment.token);
      else
        impl.bpe->encodeFragment(
            vocab, text.substr(fragment.offset, fragment.length), out);
    }
  }
  if (addSpecial && impl.addEos)
    out.push_back(impl.eos);
  return out;
}

std::vector<std::string> Tokenizer::preTokenize(std::string_view text) const {
  if (impl_->kind == VocabKind::Spm)
    return {std::string(text)};
  return impl_->bpe->split(text);
}

std::string Tokenizer::decodeToken(int32_t id, bool renderSpecial) const {
  return impl_->piece(id, renderSpecial);
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids) const {
  const Impl &impl = *impl_;
  bool stripAfterBos = impl.addSpacePrefix && !ids.empty() && impl.bos >= 0 &&
                       ids[0] == impl.bos;
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = impl.piece(ids[i], false);
    if (i == 1 && stripAfterBos && !piece.empty() && piece[0] == ' ')
      piece.erase(0, 1);
    text += piece;
  }
  return text;
}

std::string Tokenizer::detokenize(const std::vector<int32_t> &ids,
                                  bool removeSpecial,
                                  bool unparseSpecial) const {
  const Impl &impl = *impl_;
  size_t begin = 0;
  size_t end = ids.size();
  bool removeSpace = impl.addSpacePrefix;
  if (removeSpecial && impl.addBos && begin < end && ids[begin] == impl.bos) {
    removeSpace = false;
    ++begin;
  }
  if (removeSpecial && impl.addEos && begin < end && ids[end - 1] == impl.eos)
    --end;
  std::string text;
  for (size_t i = begin; i < end; ++i) {
    std::string piece = impl.piece(ids[i], unparseSpecial);
    if (removeSpace && !piece.empty() && piece[0] == ' ')
      piece.erase(0, 1);
    removeSpace = false;
    text += piece;
  }
  if (impl.cleanSpaces)
    cleanUpSpaces(text);
  return text;
}

} // namespace hetrt::tokenizer
