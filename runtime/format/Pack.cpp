// .hetpack layout (little-endian):
//   "HETCPACK" | u32 version (2) | u32 section count
//   per section: u32 name length | name | u64 offset | u64 size | u64 XXH3-64
//   u64 XXH3-64 of every header byte before it
//   section data, each at its offset from the start of the file.
// Every byte is covered by a checksum, so a damaged pack is refused at open
// instead of running code or reading shapes that were never written.
#include "runtime/format/Pack.h"

#include "runtime/format/InputFile.h"
#include "runtime/format/OutputFile.h"

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hetrt::format {

namespace {
constexpr char kMagic[8] = {'H', 'E', 'T', 'C', 'P', 'A', 'C', 'K'};
constexpr uint32_t kVersion = 2;
constexpr uint32_t kMaxSections = 4096;
constexpr uint32_t kMaxNameLength = 256;
/// Packs hold code and a manifest, never weights.
constexpr uint64_t kMaxPackBytes = uint64_t(4) << 30;

std::string hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

template <typename T> void append(std::string &out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}
} // namespace

void PackWriter::addSection(std::string name, std::vector<char> bytes) {
  sections_.emplace_back(std::move(name), std::move(bytes));
}

std::string PackWriter::image() const {
  std::string header(kMagic, sizeof(kMagic));
  append<uint32_t>(header, kVersion);
  append<uint32_t>(header, static_cast<uint32_t>(sections_.size()));
  size_t tableSize = 0;
  for (const auto &[name, bytes] : sections_)
    tableSize += 4 + name.size() + 24;
  uint64_t offset = header.size() + tableSize + 8;
  for (const auto &[name, bytes] : sections_) {
    append<uint32_t>(header, static_cast<uint32_t>(name.size()));
    header += name;
    append<uint64_t>(header, offset);
    append<uint64_t>(header, bytes.size());
    append<uint64_t>(header, XXH3_64bits(bytes.data(), bytes.size()));
    offset += bytes.size();
  }
  append<uint64_t>(header, XXH3_64bits(header.data(), header.size()));
  std::string image = std::move(header);
  for (const auto &[name, bytes] : sections_)
    image.append(bytes.data(), bytes.size());
  return image;
}

bool PackWriter::write(const std::string &path, std::string &error) const {
  return writeFileAtomically(path, image(), error);
}

std::unique_ptr<PackFile> PackFile::open(const std::string &path,
                                         std::string &error) {
  std::optional<std::string> bytes =
      readRegularFile(path, "a .hetpack", kMaxPackBytes, error);
  if (!bytes)
    return nullptr;
  return fromBytes(std::move(*bytes), path, error);
}

std::unique_ptr<PackFile> PackFile::fromBytes(std::string bytesIn,
                                              const std::string &path,
                                              std::string &error) {
  std::unique_ptr<PackFile> pack(new PackFile());
  pack->path_ = path;
  pack->bytes_ = std::move(bytesIn);
  const std::string &bytes = pack->bytes_;
  auto fail = [&](const std::string &what) {
    error = path + ": damaged pack: " + what +
            " (compile the model again with `hetc compile`)";
    return nullptr;
  };
  if (bytes.empty())
    return fail("the file is empty");
  size_t pos = 0;
  auto read = [&](void *out, size_t size) {
    if (size > bytes.size() - pos)
      return false;
    std::memcpy(out, bytes.data() + pos, size);
    pos += size;
    return true;
  };
  char magic[8];
  if (!read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) {
    error = path + ": not a hetc pack: the file does not start with "
                   "\"HETCPACK\" (give a .hetpack that `hetc compile` wrote)";
    return nullptr;
  }
  uint32_t version = 0, count = 0;
  if (!read(&version, 4) || !read(&count, 4))
    return fail("the header is truncated");
  if (version != kVersion) {
    error = path + ": pack format version " + std::to_string(version) +
            " is not supported (this runtime reads version " +
            std::to_string(kVersion) +
            "); compile the model again with this hetc";
    return nullptr;
  }
  if (count == 0 || count > kMaxSections)
    return fail("field \"section count\" is " + std::to_string(count) +
                " (a pack has 1 to " + std::to_string(kMaxSections) + ")");
  struct Entry {
    std::string name;
    uint64_t offset, size, checksum;
  };
  std::vector<Entry> entries;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t nameLength = 0;
    if (!read(&nameLength, 4) || nameLength > bytes.size() - pos)
      return fail("the section table is truncated at entry " +
                  std::to_string(i));
    if (nameLength == 0 || nameLength > kMaxNameLength)
      return fail("section " + std::to_string(i) + " has a name of " +
                  std::to_string(nameLength) + " bytes (1 to " +
                  std::to_string(kMaxNameLength) + " allowed)");
    Entry entry;
    entry.name = bytes.substr(pos, nameLength);
    pos += nameLength;
    if (!read(&entry.offset, 8) || !read(&entry.size, 8) ||
        !read(&entry.checksum, 8))
      return fail("the section table is truncated at \"" + entry.name + "\"");
    entries.push_back(std::move(entry));
  }
  // The header's own checksum comes first: a damaged table would otherwise
  // send the section checks to the wrong bytes and name the wrong section.
  uint64_t headerChecksum = 0;
  size_t headerEnd = pos;
  if (!read(&headerChecksum, 8))
    return fail("the header checksum is missing (the file is truncated)");
  if (XXH3_64bits(bytes.data(), headerEnd) != headerChecksum)
    return fail("the header's checksum does not match its contents (the "
                "file was modified or is truncated)");
  // Sections follow the header back to back to the end of the file, so no
  // byte of a pack is outside a checksum: bytes appended or slipped between
  // sections are damage too.
  uint64_t expectedOffset = pos;
  for (const Entry &entry : entries) {
    if (entry.offset != expectedOffset && entry.offset >= pos &&
        entry.offset <= bytes.size())
      return fail("section \"" + entry.name + "\" starts at byte " +
                  std::to_string(entry.offset) + " but the one before it ends at " +
                  std::to_string(expectedOffset) +
                  " (bytes between sections are not part of a pack)");
    if (entry.offset < pos)
      return fail("section \"" + entry.name + "\" starts at byte " +
                  std::to_string(entry.offset) +
                  ", inside the header and section table (bytes 0.." +
                  std::to_string(pos) + ")");
    if (entry.offset > bytes.size() ||
        entry.size > bytes.size() - entry.offset)
      return fail("section \"" + entry.name + "\" (offset " +
                  std::to_string(entry.offset) + ", " +
                  std::to_string(entry.size) + " bytes) lies outside the " +
                  std::to_string(bytes.size()) +
                  "-byte file (the file is truncated)");
    for (const auto &[name, data] : pack->sections_)
      if (name == entry.name)
        return fail("section \"" + entry.name + "\" appears twice");
    std::string_view data(bytes.data() + entry.offset, entry.size);
    uint64_t checksum = XXH3_64bits(data.data(), data.size());
    if (checksum != entry.checksum)
      return fail("section \"" + entry.name + "\" does not match its checksum (" +
                  hex(checksum) + ", the header records " +
                  hex(entry.checksum) + "): its bytes were modified");
    pack->sections_.emplace_back(entry.name, data);
    expectedOffset = entry.offset + entry.size;
  }
  if (expectedOffset != bytes.size())
    return fail(std::to_string(bytes.size() - expectedOffset) +
                " bytes follow the last section (the file was appended to, "
                "or is more than one pack)");
  return pack;
}

const std::string_view *PackFile::section(std::string_view name) const {
  for (const auto &[sectionName, data] : sections_)
    if (sectionName == name)
      return &data;
  return nullptr;
}

std::vector<std::string> PackFile::sectionNames() const {
  std::vector<std::string> names;
  for (const auto &[name, data] : sections_)
    names.push_back(name);
  return names;
}

} // namespace hetrt::format
