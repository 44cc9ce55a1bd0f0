// Sizes as people write them on command lines: a number and a unit (B, KiB,
// MiB, GiB, TiB, KB, MB, GB, TB), e.g. "64MiB" or "1.5GB".
#ifndef HETRT_FORMAT_BYTESIZE_H
#define HETRT_FORMAT_BYTESIZE_H

#include <cstdint>
#include <optional>
#include <string>

namespace hetrt::format {

/// The bytes `text` says, rounded down; nothing when it is not a number
/// with a unit, is negative, or is past 2^64 bytes.
std::optional<uint64_t> parseByteSize(const std::string &text);

/// What a size must look like, for messages.
inline constexpr const char *kByteSizeHint =
    "a number with a unit (B, KiB, MiB, GiB, TiB, KB, MB, GB or TB), e.g. "
    "8GiB";

} // namespace hetrt::format

#endif // HETRT_FORMAT_BYTESIZE_H
