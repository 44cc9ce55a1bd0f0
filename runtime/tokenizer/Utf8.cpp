// UTF-8 decoding and encoding with llama.cpp's leniency, and GPT-2's
// byte-to-unicode table. Token ids depend on these details (how a malformed
// byte is split off, which character stands for a byte), so they follow
// llama.cpp's unicode.cpp rather than a strict decoder.
#include "runtime/tokenizer/TokenizerImpl.h"

namespace hetrt::tokenizer::detail {

size_t utf8SequenceLength(char lead) {
  static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                          1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[static_cast<uint8_t>(lead) >> 4];
}

namespace {
/// One code point at `offset`, advancing it; false (offset untouched) when
/// the bytes there do not form a sequence llama.cpp accepts.
bool decodeOne(std::string_view text, size_t &offset, uint32_t &cpt) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[offset + i]); };
  auto isContinuation = [&](size_t i) {
    return offset + i < text.size() && (byte(i) & 0xC0) == 0x80;
  };
  uint8_t lead = byte(0);
  if (!(lead & 0x80)) {
    cpt = lead;
    offset += 1;
    return true;
  }
  if (!(lead & 0x40))
    return false;
  if (!(lead & 0x20)) {
    if (!isContinuation(1))
      return false;
    cpt = ((lead & 0x1Fu) << 6) | (byte(1) & 0x3Fu);
    offset += 2;
    return true;
  }
  if (!(lead & 0x10)) {
    if (!isContinuation(1) || !isContinuation(2))
      return false;
    cpt = ((lead & 0x0Fu) << 12) | ((byte(1) & 0x3Fu) << 6) | (byte(2) & 0x3Fu);
    offset += 3;
    return true;
  }
  if (!(lead & 0x08)) {
    if (!isContinuation(1) || !isContinuation(2) || !isContinuation(3))
      return false;
    cpt = ((lead & 0x07u) << 18) | ((byte(1) & 0x3Fu) << 12) |
          ((byte(2) & 0x3Fu) << 6) | (byte(3) & 0x3Fu);
    offset += 4;
    return true;
  }
  return false;
}
} // namespace

std::vector<uint32_t> decodeUtf8Lenient(std::string_view text) {
  std::vector<uint32_t> cpts;
  cpts.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) {
    uint32_t cpt = 0;
    if (decodeOne(text, offset, cpt)) {
      cpts.push_back(cpt);
    } else {
      cpts.push_back(0xFFFD);
      ++offset;
    }
  }
  return cpts;
}

void appendUtf8(std::string &out, uint32_t cpt) {
  if (cpt > 0x10FFFF)
    cpt = 0xFFFD;
  if (cpt <= 0x7F) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

namespace {
/// GPT-2's table: printable Latin-1 bytes stand for themselves, the other 68
/// bytes take code points from U+0100 on, in byte order.
std::array<uint32_t, 256> buildByteCodePoints() {
  std::array<uint32_t, 256> cpts{};
  auto printable = [](int b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
           (b >= 0xAE && b <= 0xFF);
  };
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b)
    cpts[b] = printable(b) ? static_cast<uint32_t>(b) : next++;
  return cpts;
}

const std::array<uint32_t, 256> &byteCodePoints() {
  static const std::array<uint32_t, 256> table = buildByteCodePoints();
  return table;
}
} // namespace

const std::array<std::string, 256> &byteToUnicode() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> strings;
    for (int b = 0; b < 256; ++b)
      appendUtf8(strings[b], byteCodePoints()[b]);
    return strings;
  }();
  return table;
}

int unicodeToByte(uint32_t cpt) {
  // The table's code points are the bytes themselves or 256..323.
  static const std::array<int16_t, 324> reverse = [] {
    std::array<int16_t, 324> table;
    table.fill(-1);
    for (int b = 0; b < 256; ++b)
      table[byteCodePoints()[b]] = static_cast<int16_t>(b);
    return table;
  }();
  return cpt < reverse.size() ? reverse[cpt] : -1;
}

} // namespace hetrt::tokenizer::detail
