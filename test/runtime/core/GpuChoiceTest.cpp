// The build of the GPU kernel library a GPU runs: its own chip's code, else
// code of an older chip the hardware runs unchanged (NVIDIA: same major
// version), else PTX the driver compiles; none, with the builds listed, for
// a GPU older than every build.
#include "runtime/core/ProgramSession.h"

#include <gtest/gtest.h>

namespace {

using hetrt::core::chooseGpuLibrary;
using hetrt::format::GpuCode;
using hetrt::format::GpuLibrary;

GpuCode nvidiaBuilds() {
  GpuCode code;
  code.libraries = {{"sm_80", "cubin", "code/nvptx/sm_80.cubin"},
                    {"compute_80", "ptx", "code/nvptx/compute_80.ptx"},
                    {"sm_90", "cubin", "code/nvptx/sm_90.cubin"}};
  return code;
}

std::string chosen(const GpuCode &code, const std::string &target,
                   const std::string &arch) {
  std::string why;
  const GpuLibrary *library = chooseGpuLibrary(code, target, arch, why);
  return library ? library->variant + " " + library->format : "none: " + why;
}

TEST(GpuChoice, AnNvidiaGpuRunsItsChipsCubin) {
  EXPECT_EQ(chosen(nvidiaBuilds(), "nvptx", "sm_90"), "sm_90 cubin");
  EXPECT_EQ(chosen(nvidiaBuilds(), "nvptx", "sm_80"), "sm_80 cubin");
}

TEST(GpuChoice, LaterChipsOfAMajorVersionRunItsCubin) {
  EXPECT_EQ(chosen(nvidiaBuilds(), "nvptx", "sm_86"), "sm_80 cubin");
  EXPECT_EQ(chosen(nvidiaBuilds(), "nvptx", "sm_89"), "sm_80 cubin");
}

TEST(GpuChoice, ANewerMajorVersionCompilesThePtx) {
  // Blackwell is not binary-compatible with Hopper: the driver compiles the
  // sm_80 PTX for it.
  EXPECT_EQ(chosen(nvidiaBuilds(), "nvptx", "sm_100"), "compute_80 ptx");
  EXPECT_EQ(chosen(nvidiaBuilds(), "nvptx", "sm_120"), "compute_80 ptx");
}

TEST(GpuChoice, AnOlderGpuRunsNoBuildAndSaysWhich) {
  EXPECT_EQ(chosen(nvidiaBuilds(), "nvptx", "sm_75"),
            "none: none of the nvptx kernel library's builds (sm_80 cubin, "
            "compute_80 ptx, sm_90 cubin) runs on sm_75");
  EXPECT_EQ(chosen(nvidiaBuilds(), "nvptx", ""),
            "none: none of the nvptx kernel library's builds (sm_80 cubin, "
            "compute_80 ptx, sm_90 cubin) runs on a GPU of unknown arch");
}

TEST(GpuChoice, AnAmdGpuRunsOnlyItsChipsCodeObject) {
  GpuCode code;
  code.libraries = {{"gfx90a", "hsaco", "code/amdgpu/gfx90a.hsaco"},
                    {"gfx942", "hsaco", "code/amdgpu/gfx942.hsaco"}};
  EXPECT_EQ(chosen(code, "amdgpu", "gfx942"), "gfx942 hsaco");
  EXPECT_EQ(chosen(code, "amdgpu", "gfx90a"), "gfx90a hsaco");
  EXPECT_EQ(chosen(code, "amdgpu", "gfx940"),
            "none: none of the amdgpu kernel library's builds (gfx90a hsaco, "
            "gfx942 hsaco) runs on gfx940");
}

} // namespace
