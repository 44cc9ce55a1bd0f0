// The .hetpack container: named sections (a JSON manifest and the code of each
// CPU variant) in one file. Written by the compiler, read by the runtime.
#ifndef HETRT_FORMAT_PACK_H
#define HETRT_FORMAT_PACK_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hetrt::format {

/// Collects sections and writes the container. Not thread-safe.
class PackWriter {
public:
  void addSection(std::string name, std::vector<char> bytes);
  /// The whole file: header, section table with checksums, sections.
  std::string image() const;
  /// Writes the file through a temporary name beside it, so a failure never
  /// leaves a truncated pack behind. Returns false and sets `error` on failure.
  bool write(const std::string &path, std::string &error) const;

private:
  std::vector<std::pair<std::string, std::vector<char>>> sections_;
};

/// A pack read into memory and validated: the header and every section match
/// their XXH3-64 checksums and lie inside the file. Immutable after open.
class PackFile {
public:
  /// Reads and validates `path`; on failure returns null and sets `error` to a
  /// message naming the file, the field and the fix.
  static std::unique_ptr<PackFile> open(const std::string &path,
                                        std::string &error);
  /// Validates a pack image held in memory, as `open` does; `path` names it
  /// in messages.
  static std::unique_ptr<PackFile> fromBytes(std::string bytes,
                                             const std::string &path,
                                             std::string &error);

  const std::string &path() const { return path_; }
  /// The bytes of section `name`, or nullptr when absent.
  const std::string_view *section(std::string_view name) const;
  std::vector<std::string> sectionNames() const;

private:
  std::string path_;
  std::string bytes_;
  std::vector<std::pair<std::string, std::string_view>> sections_;
};

} // namespace hetrt::format

#endif // HETRT_FORMAT_PACK_H
