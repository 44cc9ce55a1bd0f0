// Regular-file checks with O_NONBLOCK: open(2) on a FIFO otherwise waits for a
// writer forever, before any fstat could refuse it.
#include "runtime/format/InputFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hetrt::format {

namespace {
bool isControlByte(unsigned char byte) { return byte < 0x20 || byte == 0x7f; }
} // namespace

bool hasControlBytes(std::string_view text) {
  for (char c : text)
    if (isControlByte(static_cast<unsigned char>(c)))
      return true;
  return false;
}

std::string readableNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char byte) {
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
    out += escaped;
  };
  size_t i = 0;
  while (i < text.size()) {
    unsigned char byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      if (isControlByte(byte))
        escape(byte);
      else
        out += static_cast<char>(byte);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence is kept; any other byte is escaped, so a
    // message never carries invalid text to the terminal or a log.
    size_t length = byte >= 0xF0 && byte <= 0xF4   ? 4
                    : byte >= 0xE0                 ? 3
                    : byte >= 0xC2 && byte <= 0xDF ? 2
                                                   : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k)
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (!valid) {
      escape(byte);
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

std::string withFix(const std::string &message, std::string_view fix) {
  static const char *const kFixWords[] = {
      "; fix",  "fix:",   "fix the",  "re-convert", "re-download",
      "convert the", "correct ", "give ", "remove ", "add ", "download",
      "use ",   "compile"};
  for (const char *word : kFixWords)
    if (message.find(word) != std::string::npos)
      return message;
  return message + "; " + std::string(fix);
}

const char *fileKindName(unsigned mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISREG(mode))
    return "a regular file";
  return "not a regular file";
}

int openRegularFile(const std::string &path, const char *what, uint64_t &size,
                    std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return -1;
  }
  struct stat info;
  if (fstat(fd, &info) != 0) {
    error = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(info.st_mode)) {
    error = path + ": is " + fileKindName(info.st_mode) +
            ", not a regular file; give the path of " + what;
    ::close(fd);
    return -1;
  }
  // Reads of a regular file never block; the flag is cleared only so that the
  // descriptor behaves normally for whoever uses it next.
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0)
    (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  size = static_cast<uint64_t>(info.st_size);
  return fd;
}

std::optional<std::string> readRegularFile(const std::string &path,
                                           const char *what, uint64_t maxBytes,
                                           std::string &error) {
  uint64_t size = 0;
  int fd = openRegularFile(path, what, size, error);
  if (fd < 0)
    return std::nullopt;
  if (size > maxBytes) {
    error = path + ": is " + std::to_string(size) + " bytes, more than the " +
            std::to_string(maxBytes) + " bytes " + what +
            " may have; give the right file";
    ::close(fd);
    return std::nullopt;
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = path + ": cannot read: " +
              (n == 0 ? std::string("the file shrank while being read")
                      : std::string(std::strerror(errno)));
      ::close(fd);
      return std::nullopt;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return bytes;
}

std::optional<std::string> readPromptText(const std::string &path,
                                          std::string &error) {
  if (path != "-")
    return readRegularFile(path, "a prompt text file", kMaxPromptTextBytes,
                           error);
  std::string text;
  char chunk[1 << 16];
  while (true) {
    ssize_t n = ::read(STDIN_FILENO, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = "standard input: cannot read: " + std::string(std::strerror(errno));
      return std::nullopt;
    }
    if (n == 0)
      return text;
    if (text.size() + static_cast<size_t>(n) > kMaxPromptTextBytes) {
      error = "standard input holds more than the " +
              std::to_string(kMaxPromptTextBytes) +
              " bytes a prompt text may have; give the prompt itself";
      return std::nullopt;
    }
    text.append(chunk, static_cast<size_t>(n));
  }
}

} // namespace hetrt::format
