// CPUID/XGETBV feature detection. A feature the CPU reports but the OS has not
// enabled (e.g. AVX-512 state masked by a hypervisor) is treated as absent, so
// the runtime never picks code that would fault.
#include "runtime/core/CpuFeatures.h"

#include <algorithm>
#include <cerrno>
#include <cpuid.h>
#include <cstdint>
#include <cstring>

#include <sys/syscall.h>
#include <unistd.h>

namespace hetrt::core {

namespace {
uint64_t readXcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Linux's names (asm/prctl.h, asm/fpu/types.h), which glibc does not export.
constexpr int kArchRequestXcompPermission = 0x1023;
constexpr int kXfeatureTileData = 18;
constexpr uint64_t kXcr0TileState = (uint64_t(1) << 17) | (uint64_t(1) << 18);

AmxSupport detectAmx() {
  AmxSupport amx;
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid_max(0, nullptr) < 7) {
    amx.reason = "the CPU has no CPUID leaf 7, so no AMX";
    return amx;
  }
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  bool tile = edx & (1u << 24), int8 = edx & (1u << 25),
       bf16 = edx & (1u << 22);
  if (!tile) {
    amx.reason = "the CPU reports no AMX tiles (CPUID leaf 7, EDX bit 24)";
    return amx;
  }
  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  if (!(ecx & bit_OSXSAVE) || (readXcr0() & kXcr0TileState) != kXcr0TileState) {
    amx.reason = "the OS does not save AMX tile state (XCR0 bits 17-18 are "
                 "clear): a kernel before Linux 5.16, or a hypervisor hiding "
                 "it";
    return amx;
  }
  if (syscall(SYS_arch_prctl, kArchRequestXcompPermission, kXfeatureTileData) !=
      0) {
    amx.reason = std::string("Linux refused this process AMX tile data "
                             "(arch_prctl ARCH_REQ_XCOMP_PERM: ") +
                 std::strerror(errno) + ")";
    return amx;
  }
  amx.usable = true;
  amx.int8 = int8;
  amx.bf16 = bf16;
  if (!int8 && !bf16)
    amx.reason = "the CPU has AMX tiles but neither int8 nor bf16 products";
  return amx;
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
  const AmxSupport &amx = hostAmxSupport();
  add(amx.usable, "amx-tile");
  add(amx.usable && amx.int8, "amx-int8");
  add(amx.usable && amx.bf16, "amx-bf16");
  return features;
}
} // namespace

const AmxSupport &hostAmxSupport() {
  static const AmxSupport amx = detectAmx();
  return amx;
}

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
