// Writing outputs without ever destroying input: an output that is an input
// (the same file, through any link) is refused before work starts, its
// directory is checked for writability up front, and the bytes go to a
// temporary file beside the target that is renamed over it only once they
// are all written, so a failure leaves the old file intact.
#ifndef HETRT_FORMAT_OUTPUTFILE_H
#define HETRT_FORMAT_OUTPUTFILE_H

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace hetrt::format {

/// Checks, before any long work, that `output` can be written: it is not the
/// same file as any of `inputs` (same device and inode), not a directory, and
/// its directory exists and is writable. `flag` names the option in messages
/// ("-o", "--logits-out"). "-" (standard output) and character devices such
/// as /dev/null pass. Returns false with `error` naming the path and the fix.
bool checkOutputPath(const std::string &output,
                     const std::vector<std::string> &inputs,
                     const std::string &flag, std::string &error);

/// Checks that an existing file at `output` (through links) is of the kind
/// the command writes — it starts with `magic` — or empty, so that -o onto a
/// model, a pack or a document by mistake does not destroy it. `kind` names
/// that kind in the message, with its article ("a GGUF model"). Returns false with `error`
/// naming the path and the fix.
bool checkReplaceable(const std::string &output, std::string_view magic,
                      const std::string &kind, const std::string &flag,
                      std::string &error);

/// Checks that an existing file at `output` is text (no NUL byte in its
/// first 4 KiB) or empty, for commands that write text (MLIR, LLVM IR): a
/// model, a pack or another binary file is not replaced by them.
bool checkTextReplaceable(const std::string &output, const std::string &flag,
                          std::string &error);

/// A file written through a temporary name beside the target (the file a
/// symbolic link names, when the path is a link, so the link stays). Nothing is
/// visible at the target until commit(); destroying an uncommitted file
/// removes the temporary. A character device (/dev/null) is written in
/// place, since renaming over it would replace the device.
class OutputFile {
public:
  OutputFile() = default;
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  /// Creates the temporary file; false with `error` on failure.
  bool open(const std::string &path, std::string &error);
  /// Appends bytes; failures are remembered and reported by commit().
  void write(std::string_view bytes);
  /// Flushes, syncs and renames the file into place.
  bool commit(std::string &error);

private:
  std::string path_;
  std::string temporary_;
  std::FILE *file_ = nullptr;
  bool inPlace_ = false;
  bool failed_ = false;
  int savedErrno_ = 0;
};

/// Writes `bytes` to `path` through an OutputFile.
bool writeFileAtomically(const std::string &path, std::string_view bytes,
                         std::string &error);

} // namespace hetrt::format

#endif // HETRT_FORMAT_OUTPUTFILE_H
