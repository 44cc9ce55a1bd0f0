#include "server/TextStream.h"

#include <algorithm>

namespace hetc::server {

TextStream::TextStream(std::vector<std::string> stops) : stops_() {
  for (std::string &stop : stops)
    if (!stop.empty())
      stops_.push_back(std::move(stop));
}

size_t completeUtf8Prefix(const std::string &text) {
  size_t end = text.size();
  size_t back = 0;
  while (back < 4 && back < end &&
         (static_cast<unsigned char>(text[end - 1 - back]) & 0xC0) == 0x80)
    ++back;
  if (back < end) {
    unsigned char lead = static_cast<unsigned char>(text[end - 1 - back]);
    size_t needed = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (needed > back + 1)
      return end - 1 - back;
  }
  return end;
}

std::string TextStream::push(const std::string &piece) {
  if (stopped_)
    return {};
  pending_ += piece;
  // The earliest match wins: the text ends before it.
  size_t match = std::string::npos;
  for (const std::string &stop : stops_)
    match = std::min(match, pending_.find(stop));
  std::string ready;
  if (match != std::string::npos) {
    ready = pending_.substr(0, match);
    pending_.clear();
    stopped_ = true;
  } else {
    // Hold back the longest tail that a stop string could still complete.
    size_t held = 0;
    for (const std::string &stop : stops_)
      for (size_t length = std::min(stop.size() - 1, pending_.size());
           length > held; --length)
        if (pending_.compare(pending_.size() - length, length, stop, 0,
                             length) == 0) {
          held = length;
          break;
        }
    size_t end = completeUtf8Prefix(pending_.substr(0, pending_.size() - held));
    ready = pending_.substr(0, end);
    pending_.erase(0, end);
  }
  shown_ += ready;
  return ready;
}

std::string TextStream::finish() {
  std::string rest;
  if (!stopped_)
    rest.swap(pending_);
  shown_ += rest;
  return rest;
}

} // namespace hetc::server
