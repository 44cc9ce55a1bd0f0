// Opening untrusted input files: regular files only, checked before any read,
// so a FIFO, a directory or a device is an error at once and never a hang.
#ifndef HETRT_FORMAT_INPUTFILE_H
#define HETRT_FORMAT_INPUTFILE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hetrt::format {

/// Opens `path` read-only when it is a regular file and returns the
/// descriptor (the caller closes it) with the file's size in `size`. On
/// failure returns -1 and sets `error` to "PATH: is a directory, not a regular
/// file; give the path of WHAT" (or the system's reason). `what` names the
/// expected content ("a GGUF model", "a .hetpack"). Never blocks: a FIFO is
/// opened without waiting for a writer and refused.
int openRegularFile(const std::string &path, const char *what, uint64_t &size,
                    std::string &error);

/// Reads the whole regular file `path` (see openRegularFile), refusing files
/// larger than `maxBytes` with an error naming both sizes.
std::optional<std::string> readRegularFile(const std::string &path,
                                           const char *what, uint64_t maxBytes,
                                           std::string &error);

/// The largest prompt text a -f file or standard input may give: far past
/// any context, and small enough to hold.
inline constexpr uint64_t kMaxPromptTextBytes = uint64_t(64) << 20;

/// The prompt text of `-f PATH`: a regular file (see readRegularFile), or
/// standard input for "-", read up to kMaxPromptTextBytes; more is an error
/// naming the limit, so an endless stream never grows without bound.
std::optional<std::string> readPromptText(const std::string &path,
                                          std::string &error);

/// `message` as it is when it already says how to fix the problem (it names
/// a fix, a correction, something to give, add, remove or re-convert), else
/// followed by "; " and `fix`: every error about an input ends with what to
/// do.
std::string withFix(const std::string &message, std::string_view fix);

/// `text` from a file, safe to print: control bytes (a terminal's escape
/// sequences among them) become \xNN, so a message never acts on the
/// terminal it is shown on.
std::string printable(std::string_view text);

/// A number for a message, in the shortest of fixed and exponent notation
/// with six significant digits ("1e-05", "1e+308", "nan"): never 309 digits,
/// and a small value never rounds to zero.
std::string readableNumber(double value);

/// Whether `text` holds a control byte (below 0x20, or 0x7f): what
/// printable() escapes, and what names printed or used as paths must not
/// hold.
bool hasControlBytes(std::string_view text);

/// The kind of a non-regular file for messages ("a directory", "a FIFO", ...),
/// from a stat mode.
const char *fileKindName(unsigned mode);

} // namespace hetrt::format

#endif // HETRT_FORMAT_INPUTFILE_H
