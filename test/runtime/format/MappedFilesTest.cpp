// A GGUF model truncated by another process while the runtime has it mapped:
// the next read of a lost page raises SIGBUS, and the tools' handler must name
// the file and exit with status 1 instead of dying silently.
#include "runtime/format/Gguf.h"
#include "runtime/format/GgufWriter.h"
#include "runtime/format/MappedFiles.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sys/mman.h>
#include <string>
#include <unistd.h>
#include <vector>

using namespace hetrt::format;

namespace {

/// A model whose tensor data spans several pages, so truncating the file to
/// its first page leaves the tensor data unmapped.
std::string writeModel(const std::string &path) {
  GgufWriter writer;
  writer.addString("general.architecture", "llama");
  std::vector<uint8_t> bytes(4 * 65536, 0x3f);
  writer.addTensor("weights", {65536}, BlockFormat::F32, bytes);
  std::ofstream(path, std::ios::binary) << writer.serialize();
  return path;
}

volatile uint8_t sink;

TEST(MappedFilesDeathTest, ATruncatedModelIsNamedNotACrash) {
  std::string path = testing::TempDir() + "mapped-files-truncated.gguf";
  writeModel(path);
  std::string error;
  std::unique_ptr<GgufFile> file = GgufFile::open(path, error);
  ASSERT_TRUE(file) << error;
  const GgufTensorInfo *tensor = file->findTensor("weights");
  ASSERT_TRUE(tensor);
  const uint8_t *data = file->tensorData(*tensor);
  ASSERT_EQ(truncate(path.c_str(), 4096), 0);
  EXPECT_EXIT(
      {
        installMappedFileFaultHandler("hetc");
        sink = data[tensor->sizeBytes - 1];
      },
      testing::ExitedWithCode(1),
      "hetc: .*mapped-files-truncated.gguf changed while it was in use: it "
      "was truncated or rewritten in place");
  std::remove(path.c_str());
}

TEST(MappedFilesDeathTest, OtherBusErrorsKeepTheirDefaultAction) {
  std::string path = testing::TempDir() + "mapped-files-unrecorded.bin";
  std::ofstream(path, std::ios::binary) << std::string(3 * 4096, 'x');
  FILE *stream = std::fopen(path.c_str(), "r");
  ASSERT_TRUE(stream);
  void *base =
      mmap(nullptr, 3 * 4096, PROT_READ, MAP_PRIVATE, fileno(stream), 0);
  std::fclose(stream);
  ASSERT_NE(base, MAP_FAILED);
  ASSERT_EQ(truncate(path.c_str(), 0), 0);
  EXPECT_EXIT(
      {
        installMappedFileFaultHandler("hetc");
        sink = static_cast<const uint8_t *>(base)[2 * 4096];
      },
      testing::KilledBySignal(SIGBUS), "");
  munmap(base, 3 * 4096);
  std::remove(path.c_str());
}

} // namespace
