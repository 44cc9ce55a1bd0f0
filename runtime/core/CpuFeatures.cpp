// CPUID/XGETBV feature detection. A feature the CPU reports but the OS has not
// enabled (e.g. AVX-512 state masked by a hypervisor) is treated as absent, so
// the runtime never picks code that would fault.
#include "runtime/core/CpuFeatures.h"

#include <algorithm>
#include <cpuid.h>
#include <cstdint>

namespace hetrt::core {

namespace {
uint64_t readXcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

std::vector<std::string> detect() {
  std::vector<std::string> features;
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
    return features;
  auto add = [&](bool present, const char *name) {
    if (present)
      features.push_back(name);
  };
  add(ecx & bit_SSE4_2, "sse4.2");
  add(ecx & bit_POPCNT, "popcnt");
  bool osSavesYmm = false, osSavesZmm = false;
  if (ecx & bit_OSXSAVE) {
    uint64_t xcr0 = readXcr0();
    osSavesYmm = (xcr0 & 0x6) == 0x6;
    osSavesZmm = osSavesYmm && (xcr0 & 0xE0) == 0xE0;
  }
  add(osSavesYmm && (ecx & bit_AVX), "avx");
  add(osSavesYmm && (ecx & bit_FMA), "fma");
  add(osSavesYmm && (ecx & bit_F16C), "f16c");
  unsigned maxLeaf = __get_cpuid_max(0, nullptr);
  if (maxLeaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    add(osSavesYmm && (ebx & bit_AVX2), "avx2");
    add(osSavesZmm && (ebx & bit_AVX512F), "avx512f");
    add(osSavesZmm && (ebx & bit_AVX512DQ), "avx512dq");
    add(osSavesZmm && (ebx & bit_AVX512BW), "avx512bw");
    add(osSavesZmm && (ebx & bit_AVX512VL), "avx512vl");
    add(osSavesZmm && (ecx & bit_AVX512VNNI), "avx512vnni");
    unsigned eax1, ebx1, ecx1, edx1;
    __cpuid_count(7, 1, eax1, ebx1, ecx1, edx1);
    add(osSavesZmm && (eax1 & bit_AVX512BF16), "avx512bf16");
  }
  return features;
}
} // namespace

const std::vector<std::string> &hostCpuFeatures() {
  static const std::vector<std::string> features = detect();
  return features;
}

bool hostSupports(const std::vector<std::string> &required) {
  const std::vector<std::string> &host = hostCpuFeatures();
  return std::all_of(required.begin(), required.end(),
                     [&](const std::string &feature) {
                       return std::find(host.begin(), host.end(), feature) !=
                              host.end();
                     });
}

} // namespace hetrt::core
