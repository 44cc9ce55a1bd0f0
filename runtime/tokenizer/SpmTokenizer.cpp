// SentencePiece-style BPE encoding ("llama" vocabularies), the algorithm of
// llama.cpp's llm_tokenizer_spm_session: start from UTF-8 characters, merge
// the adjacent pair whose joined string is the best-scored token until none
// is left, then emit each piece, re-splitting pieces that are not tokens
// along the merges that built them and falling back to byte tokens.
#include "runtime/tokenizer/TokenizerImpl.h"

#include <algorithm>
#include <map>
#include <queue>

namespace hetrt::tokenizer::detail {

namespace {

/// A piece of the text being merged; merged-away pieces keep `size` 0. The
/// pieces form a doubly linked list through `prev`/`next` (-1 ends it).
struct Symbol {
  int prev;
  int next;
  size_t begin;
  size_t size;
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;
};

/// Highest score first; on equal scores the leftmost pair. Together with
/// std::priority_queue this pops in llama.cpp's order exactly, ties included.
struct BigramOrder {
  bool operator()(const Bigram &a, const Bigram &b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
public:
  SpmSession(const Vocab &vocab, const std::string &text,
             const std::array<int32_t, 256> &byteTokens, int32_t unk)
      : vocab_(vocab), text_(text), byteTokens_(byteTokens), unk_(unk) {}

  void run(std::vector<int32_t> &out) {
    size_t offset = 0;
    int index = 0;
    while (offset < text_.size()) {
      size_t length =
          std::min(utf8SequenceLength(text_[offset]), text_.size() - offset);
      Symbol symbol;
      symbol.begin = offset;
      symbol.size = length;
      offset += length;
      symbol.prev = index - 1;
      symbol.next = offset == text_.size() ? -1 : index + 1;
      ++index;
      symbols_.push_back(symbol);
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i)
      tryAddBigram(i - 1, i);

    while (!queue_.empty()) {
      Bigram bigram = queue_.top();
      queue_.pop();
      Symbol &left = symbols_[bigram.left];
      Symbol &right = symbols_[bigram.right];
      // A pair whose sides changed since it was queued is stale.
      if (left.size == 0 || right.size == 0 ||
          left.size + right.size != bigram.size)
        continue;
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0)
        symbols_[right.next].prev = bigram.left;
      tryAddBigram(left.prev, bigram.left);
      tryAddBigram(bigram.left, left.next);
    }

    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next)
      resegment(i, out);
  }

private:
  std::string textOf(const Symbol &symbol, size_t size) const {
    return text_.substr(symbol.begin, size);
  }

  void tryAddBigram(int left, int right) {
    if (left == -1 || right == -1)
      return;
    std::string joined =
        textOf(symbols_[left], symbols_[left].size + symbols_[right].size);
    int32_t id = vocab_.find(joined);
    if (id < 0)
      return;
    queue_.push(Bigram{left, right, vocab_.scores[id], joined.size()});
    reverseMerges_[joined] = {left, right};
  }

  void resegment(int index, std::vector<int32_t> &out) {
    const Symbol &symbol = symbols_[index];
    std::string piece = textOf(symbol, symbol.size);
    int32_t id = vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    auto merge = reverseMerges_.find(piece);
    if (merge == reverseMerges_.end()) {
      for (char c : piece) {
        int32_t byteId = byteTokens_[static_cast<uint8_t>(c)];
        if (byteId >= 0)
          out.push_back(byteId);
        else if (unk_ >= 0)
          out.push_back(unk_);
      }
      return;
    }
    resegment(merge->second.first, out);
    resegment(merge->second.second, out);
  }

  const Vocab &vocab_;
  const std::string &text_;
  const std::array<int32_t, 256> &byteTokens_;
  int32_t unk_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
  std::map<std::string, std::pair<int, int>> reverseMerges_;
};

} // namespace

void encodeSpmFragment(const Vocab &vocab, const std::string &text,
                       const std::array<int32_t, 256> &byteTokens, int32_t unk,
                       std::vector<int32_t> &out) {
  SpmSession(vocab, text, byteTokens, unk).run(out);
}

} // namespace hetrt::tokenizer::detail
