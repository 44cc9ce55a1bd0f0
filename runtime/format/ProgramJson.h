// Device programs (abi/Program.h) in a pack, as JSON: written by the
// compiler, read by the runtime as untrusted input, every field checked.
#ifndef HETRT_FORMAT_PROGRAMJSON_H
#define HETRT_FORMAT_PROGRAMJSON_H

#include "abi/Program.h"

#include <optional>
#include <string>

namespace hetrt::format {

std::string programToJson(const hetc::abi::Program &program);

/// Parses and checks a program: its version, every buffer's role and size
/// (linear in tokens and keys with bounded coefficients), every step's kind,
/// buffer indices and values. `origin` names the pack section in messages.
std::optional<hetc::abi::Program> programFromJson(const std::string &json,
                                                  const std::string &origin,
                                                  std::string &error);

/// Whether every transfer between devices in `program` is waited for (a
/// Wait step on its target device) before any step touches its target and
/// by the program's end, and every Wait names such an earlier transfer on
/// its own device; false with `problem` naming the step.
bool checkTransferWaits(const hetc::abi::Program &program,
                        std::string &problem);

} // namespace hetrt::format

#endif // HETRT_FORMAT_PROGRAMJSON_H
