// Generated text as a reader sees it: token pieces joined, shown only once no
// stop string can still begin in them and no UTF-8 character is cut, and
// ended where a stop string matches (the match itself is never shown). `hetc
// run`, `hetc chat` and `hetc serve` all stream through it, so a stop string
// split across tokens ends all three at the same byte.
#ifndef HETC_SERVER_TEXTSTREAM_H
#define HETC_SERVER_TEXTSTREAM_H

#include <string>
#include <vector>

namespace hetc::server {

class TextStream {
public:
  explicit TextStream(std::vector<std::string> stops = {});

  /// Adds one token's piece; returns the text that is now safe to show.
  /// Once a stop string has matched, returns the text before it and
  /// stopped() is true; later pieces are ignored.
  std::string push(const std::string &piece);
  /// The text held back at the end of the generation (an incomplete
  /// character stays as its bytes; the caller's JSON writer replaces them).
  std::string finish();
  bool stopped() const { return stopped_; }
  /// Every byte shown so far.
  const std::string &shown() const { return shown_; }

private:
  std::vector<std::string> stops_;
  std::string pending_;
  std::string shown_;
  bool stopped_ = false;
};

/// Length of the longest prefix of `text` that ends on a UTF-8 character
/// boundary.
size_t completeUtf8Prefix(const std::string &text);

} // namespace hetc::server

#endif // HETC_SERVER_TEXTSTREAM_H
