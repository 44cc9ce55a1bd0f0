// What kind of failure a runtime call met, set where the failure happens and
// carried beside its message, so the C API reports the status the failure
// is, not one guessed from the message's words.
#ifndef HETRT_CORE_FAILURE_H
#define HETRT_CORE_FAILURE_H

namespace hetrt::core {

enum class Failure {
  /// Malformed or contradictory input: a damaged pack or model, a manifest
  /// that disagrees with its code, a bad argument.
  InvalidInput,
  /// A file that cannot be opened, read or mapped.
  Io,
  /// Valid input this machine cannot run (no code variant for its CPU).
  Unsupported,
  /// Memory the request needs and the machine does not have.
  OutOfMemory,
  /// A resource of the system that is missing now (threads, in-memory files).
  Unavailable,
};

} // namespace hetrt::core

#endif // HETRT_CORE_FAILURE_H
