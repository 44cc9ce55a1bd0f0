// Output paths checked against inputs by device and inode, and written
// through mkstemp beside the target.
#include "runtime/format/OutputFile.h"

#include "runtime/format/InputFile.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <vector>

namespace hetrt::format {

namespace {

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

/// Where writing `path` lands: through symbolic links to the file they name,
/// since renaming the finished output onto the link would replace the link
/// instead of the file it points to.
std::string followLinks(const std::string &path) {
  std::string current = path;
  // The kernel's own limit on links followed in one lookup.
  for (int depth = 0; depth < 40; ++depth) {
    struct stat info;
    if (lstat(current.c_str(), &info) != 0 || !S_ISLNK(info.st_mode))
      return current;
    std::vector<char> target(4096);
    ssize_t length = readlink(current.c_str(), target.data(), target.size());
    if (length <= 0 || static_cast<size_t>(length) >= target.size())
      return current;
    std::string next(target.data(), static_cast<size_t>(length));
    if (next[0] != '/' && current.find('/') != std::string::npos)
      next = current.substr(0, current.find_last_of('/') + 1) + next;
    current = next;
  }
  return current;
}

} // namespace

bool checkOutputPath(const std::string &output,
                     const std::vector<std::string> &inputs,
                     const std::string &flag, std::string &error) {
  if (output == "-")
    return true;
  if (output.empty()) {
    error = flag + ": the output path is empty; give a file name";
    return false;
  }
  std::string written = followLinks(output);
  struct stat target;
  bool exists = stat(output.c_str(), &target) == 0;
  if (exists) {
    for (const std::string &input : inputs) {
      struct stat source;
      if (stat(input.c_str(), &source) == 0 && source.st_dev == target.st_dev &&
          source.st_ino == target.st_ino) {
        error = flag + " " + output + ": is the input " + input +
                " itself; writing it would destroy the input (give another "
                "output path)";
        return false;
      }
    }
    if (S_ISCHR(target.st_mode))
      return true;
    if (!S_ISREG(target.st_mode)) {
      error = flag + " " + output + ": is " + fileKindName(target.st_mode) +
              ", not a file that can be replaced; give a file name";
      return false;
    }
  }
  std::string directory = directoryOf(written);
  struct stat parent;
  if (stat(directory.c_str(), &parent) != 0 || !S_ISDIR(parent.st_mode)) {
    error = flag + " " + output + ": the directory " + directory +
            " does not exist; create it first or give another path";
    return false;
  }
  if (access(directory.c_str(), W_OK | X_OK) != 0) {
    error = flag + " " + output + ": the directory " + directory +
            " is not writable (" + std::strerror(errno) +
            "); give a path in a writable directory";
    return false;
  }
  // Create and remove the temporary file the output will be written to, so a
  // name too long, a read-only file system or a full inode table fails now
  // and not after the work (access() also passes for root on a read-only
  // mount).
  {
    std::string pattern = written + ".partial-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int fd = mkstemp(name.data());
    if (fd < 0) {
      error = flag + " " + output + ": cannot create a file there (" +
              std::strerror(errno) + "); give " +
              (errno == ENAMETOOLONG ? "a shorter name"
                                     : "a path in a writable directory");
      return false;
    }
    ::close(fd);
    ::unlink(name.data());
  }
  return true;
}

namespace {

/// The first bytes (at most `limit`) of the existing, non-empty regular file
/// at `output`; nullopt when there is no such file to protect.
std::optional<std::string> existingHead(const std::string &output,
                                        size_t limit) {
  struct stat target;
  if (output == "-" || stat(output.c_str(), &target) != 0 ||
      !S_ISREG(target.st_mode) || target.st_size == 0)
    return std::nullopt;
  std::string head(limit, '\0');
  std::FILE *file = std::fopen(output.c_str(), "rb");
  size_t read = file ? std::fread(head.data(), 1, head.size(), file) : 0;
  if (file)
    std::fclose(file);
  head.resize(read);
  return head;
}

} // namespace

bool checkReplaceable(const std::string &output, std::string_view magic,
                      const std::string &kind, const std::string &flag,
                      std::string &error) {
  std::optional<std::string> head = existingHead(output, magic.size());
  if (!head || *head == magic)
    return true;
  error = flag + " " + output + ": exists and is not " + kind +
          "; replacing it would destroy it (give another path, or remove "
          "the file first)";
  return false;
}

bool checkTextReplaceable(const std::string &output, const std::string &flag,
                          std::string &error) {
  std::optional<std::string> head = existingHead(output, 4096);
  if (!head || head->find('\0') == std::string::npos)
    return true;
  error = flag + " " + output +
          ": exists and is a binary file (a model or a pack?), not text; "
          "replacing it would destroy it (give another path, or remove the "
          "file first)";
  return false;
}

OutputFile::~OutputFile() {
  if (file_)
    std::fclose(file_);
  if (!temporary_.empty())
    ::unlink(temporary_.c_str());
}

bool OutputFile::open(const std::string &path, std::string &error) {
  path_ = followLinks(path);
  struct stat target;
  if (stat(path_.c_str(), &target) == 0 && S_ISCHR(target.st_mode)) {
    inPlace_ = true;
    file_ = std::fopen(path_.c_str(), "wb");
    if (!file_) {
      error = path + ": cannot write: " + std::strerror(errno);
      return false;
    }
    return true;
  }
  std::string pattern = path_ + ".partial-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0) {
    error = path + ": cannot create a file beside it: " + std::strerror(errno);
    return false;
  }
  temporary_ = name.data();
  // mkstemp makes the file private; an output gets the usual permissions.
  mode_t mask = umask(0);
  umask(mask);
  (void)fchmod(fd, 0666 & ~mask);
  file_ = fdopen(fd, "wb");
  if (!file_) {
    error = path + ": cannot write: " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  return true;
}

void OutputFile::write(std::string_view bytes) {
  if (failed_ || !file_ || bytes.empty())
    return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    failed_ = true;
    savedErrno_ = errno;
  }
}

bool OutputFile::commit(std::string &error) {
  if (!file_) {
    error = path_ + ": was never opened for writing";
    return false;
  }
  bool flushed = !failed_ && std::fflush(file_) == 0 &&
                 (inPlace_ || fsync(fileno(file_)) == 0);
  if (!flushed && !failed_)
    savedErrno_ = errno;
  int closed = std::fclose(file_);
  file_ = nullptr;
  if (!flushed || closed != 0) {
    error = path_ + ": write failed: " +
            std::strerror(savedErrno_ ? savedErrno_ : errno) +
            (inPlace_ ? "" : " (the previous file, if any, is unchanged)");
    return false;
  }
  if (inPlace_)
    return true;
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    error = path_ + ": cannot move the written file into place: " +
            std::strerror(errno);
    return false;
  }
  temporary_.clear();
  return true;
}

bool writeFileAtomically(const std::string &path, std::string_view bytes,
                         std::string &error) {
  OutputFile out;
  if (!out.open(path, error))
    return false;
  out.write(bytes);
  return out.commit(error);
}

} // namespace hetrt::format
