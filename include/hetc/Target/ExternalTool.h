// Running a toolchain program (ptxas, ld.lld) on bytes: the input goes to a
// temporary file, the program writes another, and both are removed after.
#ifndef HETC_TARGET_EXTERNALTOOL_H
#define HETC_TARGET_EXTERNALTOOL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace hetc::target {

/// Writes `input` to a temporary file ending in `inputSuffix`, runs `tool`
/// with the arguments `arguments(inputPath, outputPath)` gives (the first
/// being the program's name), and reads the file it wrote into `output`.
/// Its standard output and error go to `log`. False with `error` naming the
/// program and carrying its log when it cannot start, fails or writes
/// nothing.
bool runFileTool(
    llvm::StringRef tool, llvm::ArrayRef<char> input,
    llvm::StringRef inputSuffix, llvm::StringRef outputSuffix,
    llvm::function_ref<std::vector<std::string>(llvm::StringRef input,
                                                llvm::StringRef output)>
        arguments,
    std::vector<char> &output, std::string &log, std::string &error);

} // namespace hetc::target

#endif // HETC_TARGET_EXTERNALTOOL_H
