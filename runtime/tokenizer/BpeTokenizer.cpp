// Byte-level BPE encoding ("gpt2" vocabularies: GPT-2, Llama 3, Qwen2): the
// pre-tokenizer regexes llama.cpp uses for each `tokenizer.ggml.pre` type,
// matched with PCRE2 in UTF + UCP mode, then GPT-2's byte mapping and merges
// by rank as in llama.cpp's llm_tokenizer_bpe_session.
#include "runtime/tokenizer/TokenizerImpl.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <queue>

namespace hetrt::tokenizer::detail {

namespace {

// llama.cpp's patterns. Llama 3 and Qwen2 ship `(?i:'s|'t|...)`; llama.cpp
// spells the contractions out as `'[sS]|'[tT]|...` so that only ASCII letters
// match, and so do we (a caseless match would also take U+017F and U+212A).
constexpr const char *kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char *kLlama3Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char *kQwen2Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// The regexes of each kind, applied one after another: each splits every
/// piece the previous ones left (LLAMA_VOCAB_PRE_TYPE_DEFAULT is a cascade).
std::vector<const char *> patternsOf(PreTokenizerKind kind) {
  switch (kind) {
  case PreTokenizerKind::Default:
    return {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Pattern, R"(\p{N}+)",
            R"([0-9][0-9][0-9])"};
  case PreTokenizerKind::Gpt2:
    return {kGpt2Pattern};
  case PreTokenizerKind::Llama3:
    return {kLlama3Pattern};
  case PreTokenizerKind::Qwen2:
    return {kQwen2Pattern};
  }
  return {};
}

// The `tokenizer.ggml.pre` names whose llama.cpp settings hetc reproduces
// completely (regexes, space clean-up, ignore_merges, BOS default). Names
// llama.cpp gives further special cases are left out on purpose.
constexpr PreTokenizerSpec kPreTokenizers[] = {
    {"default", PreTokenizerKind::Default, true, false, false},
    {"gpt-2", PreTokenizerKind::Gpt2, true, false, false},
    {"phi-2", PreTokenizerKind::Gpt2, true, false, false},
    {"mpt", PreTokenizerKind::Gpt2, true, false, false},
    {"olmo", PreTokenizerKind::Gpt2, true, false, false},
    {"llama3", PreTokenizerKind::Llama3, true, true, true},
    {"llama-v3", PreTokenizerKind::Llama3, true, true, true},
    {"llama-bpe", PreTokenizerKind::Llama3, true, true, true},
    {"dbrx", PreTokenizerKind::Llama3, true, false, false},
    {"smaug-bpe", PreTokenizerKind::Llama3, true, false, false},
    {"qwen2", PreTokenizerKind::Qwen2, false, false, false},
    {"deepseek-r1-qwen", PreTokenizerKind::Qwen2, false, false, false},
    {"megrez", PreTokenizerKind::Qwen2, true, false, false},
    {"stablelm2", PreTokenizerKind::Qwen2, true, false, false},
};

} // namespace

const PreTokenizerSpec *findPreTokenizer(std::string_view name) {
  for (const PreTokenizerSpec &spec : kPreTokenizers)
    if (name == spec.name)
      return &spec;
  return nullptr;
}

std::string preTokenizerNames() {
  std::string names;
  for (const PreTokenizerSpec &spec : kPreTokenizers) {
    if (!names.empty())
      names += ", ";
    names += spec.name;
  }
  return names;
}

/// One compiled PCRE2 pattern. The compiled code is read-only during
/// matching, so one instance serves concurrent callers; each call brings its
/// own match data.
class BpeModel::Regex {
public:
  static std::unique_ptr<Regex> compile(const char *pattern,
                                        std::string &error) {
    int errorCode = 0;
    PCRE2_SIZE errorOffset = 0;
    pcre2_code *code = pcre2_compile(
        reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
        PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(errorCode, message, sizeof(message));
      error = std::string("PCRE2 rejected the pre-tokenizer pattern ") +
              pattern + " at offset " + std::to_string(errorOffset) + ": " +
              reinterpret_cast<const char *>(message);
      return nullptr;
    }
    // JIT is an optimisation only; without it pcre2_match interprets.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    return std::unique_ptr<Regex>(new Regex(code));
  }

  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;

  pcre2_code *code() const { return code_; }

private:
  explicit Regex(pcre2_code *code) : code_(code) {}
  pcre2_code *code_;
};

namespace {

/// Match data for one regex, freed on scope exit.
class MatchData {
public:
  explicit MatchData(const pcre2_code *code)
      : data_(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data_); }
  MatchData(const MatchData &) = delete;
  MatchData &operator=(const MatchData &) = delete;
  pcre2_match_data *get() const { return data_; }

private:
  pcre2_match_data *data_;
};

/// The text as code points plus a well-formed UTF-8 copy for PCRE2 in which
/// every code point llama.cpp decodes but UTF-8 forbids (surrogates, values
/// above U+10FFFF) is U+FFFD, with the byte offset of each code point.
struct MatchSubject {
  std::vector<uint32_t> cpts;
  std::string utf8;
  std::vector<size_t> cptOffsets;       // size cpts + 1
  std::vector<uint32_t> cptIndexOfByte; // size utf8 + 1, valid at boundaries

  explicit MatchSubject(std::string_view text) : cpts(decodeUtf8Lenient(text)) {
    cptOffsets.reserve(cpts.size() + 1);
    for (uint32_t cpt : cpts) {
      cptOffsets.push_back(utf8.size());
      bool scalar = cpt <= 0x10FFFF && !(cpt >= 0xD800 && cpt <= 0xDFFF);
      appendUtf8(utf8, scalar ? cpt : 0xFFFD);
    }
    cptOffsets.push_back(utf8.size());
    cptIndexOfByte.assign(utf8.size() + 1, 0);
    for (size_t i = 0; i < cptOffsets.size(); ++i)
      cptIndexOfByte[cptOffsets[i]] = static_cast<uint32_t>(i);
  }
};

/// Splits every piece in `pieces` (lengths in code points) by `regex`: each
/// match is a piece and so is each stretch between matches, as llama.cpp's
/// unicode_regex_split_stl does.
std::vector<size_t> splitPieces(const MatchSubject &subject,
                                const pcre2_code *regex,
                                const std::vector<size_t> &pieces) {
  std::vector<size_t> result;
  result.reserve(pieces.size());
  MatchData match(regex);
  size_t start = 0;
  for (size_t length : pieces) {
    size_t end = start + length;
    size_t byteBegin = subject.cptOffsets[start];
    size_t byteEnd = subject.cptOffsets[end];
    auto chunk = reinterpret_cast<PCRE2_SPTR>(subject.utf8.data() + byteBegin);
    size_t chunkBytes = byteEnd - byteBegin;
    size_t covered = start; // code points already assigned to pieces
    size_t searchFrom = 0;  // byte offset in the chunk
    while (searchFrom <= chunkBytes) {
      // The subject is the chunk alone, so lookaheads stop at its end like
      // llama.cpp's per-piece matching. It is valid UTF-8 by construction.
      int rc = pcre2_match(regex, chunk, chunkBytes, searchFrom,
                           PCRE2_NO_UTF_CHECK, match.get(), nullptr);
      if (rc < 0)
        break; // no further match (errors cannot arise on valid input)
      const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(match.get());
      size_t matchBegin = subject.cptIndexOfByte[byteBegin + ovector[0]];
      size_t matchEnd = subject.cptIndexOfByte[byteBegin + ovector[1]];
      if (matchEnd == matchBegin) {
        // None of the patterns matches empty; step past a code point anyway
        // so a future pattern cannot loop.
        if (matchBegin >= end)
          break;
        searchFrom = subject.cptOffsets[matchBegin + 1] - byteBegin;
        continue;
      }
      if (matchBegin > covered)
        result.push_back(matchBegin - covered);
      result.push_back(matchEnd - matchBegin);
      covered = matchEnd;
      searchFrom = ovector[1];
    }
    if (covered < end)
      result.push_back(end - covered);
    start = end;
  }
  return result;
}

/// A symbol of the word being merged (see SpmTokenizer.cpp's Symbol).
struct Symbol {
  int prev;
  int next;
  size_t begin;
  size_t size;
};

struct Bigram {
  int left;
  int right;
  std::string text;
  int32_t rank;
};

/// Lowest rank first; on equal ranks the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram &a, const Bigram &b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

} // namespace

size_t BpeModel::PairHash::operator()(
    const std::pair<std::string, std::string> &p) const {
  return std::hash<std::string>{}(p.first) ^
         (std::hash<std::string>{}(p.second) << 1);
}

std::unique_ptr<BpeModel>
BpeModel::create(PreTokenizerKind kind, bool ignoreMerges,
                 const std::vector<std::string> &merges, std::string &error) {
  std::unique_ptr<BpeModel> model(new BpeModel());
  model->ignoreMerges_ = ignoreMerges;
  for (const char *pattern : patternsOf(kind)) {
    std::unique_ptr<Regex> regex = Regex::compile(pattern, error);
    if (!regex)
      return nullptr;
    model->regexes_.push_back(std::move(regex));
  }
  model->ranks_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    // llama.cpp splits at the first space after the first byte, so a merge
    // of a space-like token ("  x") keeps its leading byte on the left; a
    // line without such a space is recorded as an unusable empty pair.
    const std::string &merge = merges[i];
    size_t space = merge.find(' ', 1);
    std::pair<std::string, std::string> pair;
    if (space != std::string::npos)
      pair = {merge.substr(0, space), merge.substr(space + 1)};
    model->ranks_.emplace(std::move(pair), static_cast<int32_t>(i));
  }
  return model;
}

BpeModel::~BpeModel() = default;

int32_t BpeModel::rank(const std::string &left,
                       const std::string &right) const {
  auto it = ranks_.find({left, right});
  return it == ranks_.end() ? -1 : it->second;
}

std::vector<std::string> BpeModel::split(std::string_view text) const {
  MatchSubject subject(text);
  std::vector<size_t> pieces = {subject.cpts.size()};
  for (const std::unique_ptr<Regex> &regex : regexes_)
    pieces = splitPieces(subject, regex->code(), pieces);
  std::vector<std::string> words;
  words.reserve(pieces.size());
  size_t start = 0;
  for (size_t length : pieces) {
    std::string word;
    for (size_t i = start; i < start + length; ++i)
      appendUtf8(word, subject.cpts[i]);
    words.push_back(std::move(word));
    start += length;
  }
  return words;
}

void BpeModel::encodeFragment(const Vocab &vocab, std::string_view text,
                              std::vector<int32_t> &out) const {
  const std::array<std::string, 256> &byteChars = byteToUnicode();
  for (const std::string &rawWord : split(text)) {
    std::string word;
    for (char c : rawWord)
      word += byteChars[static_cast<uint8_t>(c)];

    std::vector<Symbol> symbols;
    if (ignoreMerges_ && vocab.find(word) >= 0) {
      symbols.push_back(Symbol{-1, -1, 0, word.size()});
    } else {
      size_t offset = 0;
      int index = 0;
      while (offset < word.size()) {
        size_t length =
            std::min(utf8SequenceLength(word[offset]), word.size() - offset);
        Symbol symbol{index - 1, -1, offset, length};
        offset += length;
        symbol.next = offset == word.size() ? -1 : index + 1;
        ++index;
        symbols.push_back(symbol);
      }
    }

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    auto textOf = [&](const Symbol &s) { return word.substr(s.begin, s.size); };
    auto addBigram = [&](int left, int right) {
      if (left == -1 || right == -1)
        return;
      std::string leftText = textOf(symbols[left]);
      std::string rightText = textOf(symbols[right]);
      int32_t found = rank(leftText, rightText);
      if (found < 0)
        return;
      queue.push(Bigram{left, right, leftText + rightText, found});
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i)
      addBigram(i - 1, i);

    while (!queue.empty()) {
      Bigram bigram = queue.top();
      queue.pop();
      Symbol &left = symbols[bigram.left];
      Symbol &right = symbols[bigram.right];
      if (left.size == 0 || right.size == 0 ||
          textOf(left) + textOf(right) != bigram.text)
        continue; // stale: a side changed since the pair was queued
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0)
        symbols[right.next].prev = bigram.left;
      addBigram(left.prev, bigram.left);
      addBigram(bigram.left, left.next);
    }

    // Merged-away symbols have size 0; the survivors are in text order.
    for (const Symbol &symbol : symbols) {
      if (symbol.size == 0)
        continue;
      std::string piece = textOf(symbol);
      int32_t id = vocab.find(piece);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      // llama.cpp's fallback looks up each single byte of the mapped piece;
      // vocabularies with all 256 byte characters never get here.
      for (char c : piece) {
        int32_t byteId = vocab.find(std::string(1, c));
        if (byteId >= 0)
          out.push_back(byteId);
      }
    }
  }
}

} // namespace hetrt::tokenizer::detail
