// What the host CPU can execute, from CPUID and the OS's enabled register state.
#ifndef HETRT_CORE_CPUFEATURES_H
#define HETRT_CORE_CPUFEATURES_H

#include <string>
#include <vector>

namespace hetrt::core {

/// The features of this CPU that the OS lets programs use, by the names the
/// pack manifest uses ("sse4.2", "avx2", "fma", "f16c", "avx512f", "avx512bw",
/// "avx512vl", "avx512dq", "avx512vnni", "avx512bf16", "amx-tile",
/// "amx-int8", "amx-bf16"). AVX and AVX-512 count only when XCR0 shows the
/// OS saves their registers; AMX only when hostAmxSupport() says usable.
const std::vector<std::string> &hostCpuFeatures();

/// Whether this process may execute AMX tile instructions. Three things must
/// hold: the CPU reports tiles (CPUID leaf 7, EDX bit 24), the OS saves tile
/// state (XCR0 bits 17 and 18), and Linux has granted this process the tile
/// data state (arch_prctl ARCH_REQ_XCOMP_PERM, requested once here: without
/// it the first tile instruction faults). `reason` says which one failed.
struct AmxSupport {
  bool usable = false;
  bool int8 = false;
  bool bf16 = false;
  std::string reason;
};
const AmxSupport &hostAmxSupport();

/// True when every feature in `required` is in hostCpuFeatures().
bool hostSupports(const std::vector<std::string> &required);

} // namespace hetrt::core

#endif // HETRT_CORE_CPUFEATURES_H
