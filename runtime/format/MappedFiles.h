// Files the runtime maps into memory, and what happens when one of them
// shrinks while it is mapped. A read of a mapped page past the new end of the
// file raises SIGBUS; without a handler that kills the process with no word
// about which file changed. The tools install the handler below so the user
// learns which file was truncated and how to avoid it.
#ifndef HETRT_FORMAT_MAPPEDFILES_H
#define HETRT_FORMAT_MAPPEDFILES_H

#include <cstddef>
#include <string>

namespace hetrt::format {

/// Records that [base, base + size) maps the file `path`. At most
/// kMaxMappedFiles mappings are recorded at once; later ones are mapped but
/// not named by the fault handler.
void registerMappedFile(const void *base, size_t size, const std::string &path);

/// Forgets the mapping that starts at `base` (before it is unmapped).
void unregisterMappedFile(const void *base);

inline constexpr int kMaxMappedFiles = 64;

/// Installs a SIGBUS handler that, for a fault inside a recorded mapping,
/// prints "TOOL: PATH changed while it was in use ..." and exits with status
/// 1; any other SIGBUS keeps its default action. Also ignores SIGXFSZ, so a
/// write past the file-size limit fails with an error the writer reports
/// instead of killing the process. For command-line tools: a library must not
/// take over its host's signals.
void installMappedFileFaultHandler(const char *tool);

} // namespace hetrt::format

#endif // HETRT_FORMAT_MAPPEDFILES_H
