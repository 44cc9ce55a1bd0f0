// Running a toolchain program on bytes (see include/hetc/Target/ExternalTool.h).
#include "hetc/Target/ExternalTool.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

namespace hetc::target {

bool runFileTool(
    llvm::StringRef tool, llvm::ArrayRef<char> input,
    llvm::StringRef inputSuffix, llvm::StringRef outputSuffix,
    llvm::function_ref<std::vector<std::string>(llvm::StringRef input,
                                                llvm::StringRef output)>
        arguments,
    std::vector<char> &output, std::string &log, std::string &error) {
  if (!llvm::sys::fs::can_execute(tool)) {
    error = "the program " + tool.str() + " is missing";
    return false;
  }
  llvm::SmallString<128> inputPath, outputPath, logPath;
  if (llvm::sys::fs::createTemporaryFile("hetc-tool-in", inputSuffix,
                                         inputPath) ||
      llvm::sys::fs::createTemporaryFile("hetc-tool-out", outputSuffix,
                                         outputPath) ||
      llvm::sys::fs::createTemporaryFile("hetc-tool", "log", logPath)) {
    error = "cannot create temporary files for " + tool.str();
    return false;
  }
  llvm::scope_exit removeFiles([&] {
    llvm::sys::fs::remove(inputPath);
    llvm::sys::fs::remove(outputPath);
    llvm::sys::fs::remove(logPath);
  });
  {
    std::error_code failure;
    llvm::raw_fd_ostream stream(inputPath, failure);
    if (failure) {
      error = "cannot write " + inputPath.str().str() + ": " +
              failure.message();
      return false;
    }
    stream.write(input.data(), input.size());
  }
  std::vector<std::string> words = arguments(inputPath, outputPath);
  std::vector<llvm::StringRef> argv(words.begin(), words.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(),
                                                logPath.str()};
  std::string launchError;
  int status = llvm::sys::ExecuteAndWait(tool, argv, std::nullopt, redirects,
                                         0, 0, &launchError);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> logText =
      llvm::MemoryBuffer::getFile(logPath);
  log = logText ? (*logText)->getBuffer().str() : "";
  if (status != 0) {
    error = tool.str() + " failed" +
            (launchError.empty() ? "" : " (" + launchError + ")") +
            (log.empty() ? "" : ":\n" + log);
    return false;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> written =
      llvm::MemoryBuffer::getFile(outputPath, /*IsText=*/false);
  if (!written || (*written)->getBufferSize() == 0) {
    error = tool.str() + " wrote nothing";
    return false;
  }
  llvm::StringRef bytes = (*written)->getBuffer();
  output.assign(bytes.begin(), bytes.end());
  return true;
}

} // namespace hetc::target
