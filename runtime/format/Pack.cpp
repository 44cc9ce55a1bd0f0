// .hetpack layout (little-endian):
//   "HETCPACK" | u32 version (1) | u32 section count
//   per section: u32 name length | name | u64 offset | u64 size
//   section data, each at its offset from the start of the file.
#include "runtime/format/Pack.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hetrt::format {

namespace {
constexpr char kMagic[8] = {'H', 'E', 'T', 'C', 'P', 'A', 'C', 'K'};
constexpr uint32_t kVersion = 1;

template <typename T> void append(std::string &out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}
} // namespace

void PackWriter::addSection(std::string name, std::vector<char> bytes) {
  sections_.emplace_back(std::move(name), std::move(bytes));
}

bool PackWriter::write(const std::string &path, std::string &error) const {
  std::string header(kMagic, sizeof(kMagic));
  append<uint32_t>(header, kVersion);
  append<uint32_t>(header, static_cast<uint32_t>(sections_.size()));
  size_t tableSize = 0;
  for (const auto &[name, bytes] : sections_)
    tableSize += 4 + name.size() + 16;
  uint64_t offset = header.size() + tableSize;
  for (const auto &[name, bytes] : sections_) {
    append<uint32_t>(header, static_cast<uint32_t>(name.size()));
    header += name;
    append<uint64_t>(header, offset);
    append<uint64_t>(header, bytes.size());
    offset += bytes.size();
  }
  std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      error = path + ": cannot create: " + std::strerror(errno);
      return false;
    }
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto &[name, bytes] : sections_)
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      error = path + ": write failed: " + std::strerror(errno);
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = path + ": cannot move the written pack into place: " +
            std::strerror(errno);
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

std::unique_ptr<PackFile> PackFile::open(const std::string &path,
                                         std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open: " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<PackFile> pack(new PackFile());
  pack->path_ = path;
  std::ostringstream contents;
  contents << in.rdbuf();
  pack->bytes_ = contents.str();
  const std::string &bytes = pack->bytes_;
  auto fail = [&](const std::string &what) {
    error = path + ": " + what + " (recompile it with `hetc compile`)";
    return nullptr;
  };
  size_t pos = 0;
  auto read = [&](void *out, size_t size) {
    if (size > bytes.size() - pos)
      return false;
    std::memcpy(out, bytes.data() + pos, size);
    pos += size;
    return true;
  };
  char magic[8];
  if (!read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0)
    return fail("not a hetc pack: the file does not start with \"HETCPACK\"");
  uint32_t version = 0, count = 0;
  if (!read(&version, 4) || !read(&count, 4))
    return fail("truncated pack header");
  if (version != kVersion)
    return fail("pack format version " + std::to_string(version) +
                " is not supported (this runtime reads version " +
                std::to_string(kVersion) + ")");
  if (count > bytes.size() / 20)
    return fail("section count " + std::to_string(count) +
                " exceeds what the file can hold");
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t nameLength = 0;
    if (!read(&nameLength, 4) || nameLength > bytes.size() - pos)
      return fail("truncated section table at entry " + std::to_string(i));
    std::string name = bytes.substr(pos, nameLength);
    pos += nameLength;
    uint64_t offset = 0, size = 0;
    if (!read(&offset, 8) || !read(&size, 8))
      return fail("truncated section table at \"" + name + "\"");
    if (offset > bytes.size() || size > bytes.size() - offset)
      return fail("section \"" + name + "\" (offset " + std::to_string(offset) +
                  ", " + std::to_string(size) + " bytes) lies outside the " +
                  std::to_string(bytes.size()) + "-byte file");
    pack->sections_.emplace_back(
        std::move(name), std::string_view(bytes.data() + offset, size));
  }
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
