// What the host CPU can execute, from CPUID and the OS's enabled register state.
#ifndef HETRT_CORE_CPUFEATURES_H
#define HETRT_CORE_CPUFEATURES_H

#include <string>
#include <vector>

namespace hetrt::core {

/// The features of this CPU that the OS lets programs use, by the names the
/// pack manifest uses ("sse4.2", "avx2", "fma", "f16c", "avx512f", "avx512bw",
/// "avx512vl", "avx512dq", "avx512vnni", "avx512bf16"). AVX and AVX-512
/// count only when XCR0 shows the OS saves their registers.
const std::vector<std::string> &hostCpuFeatures();

/// True when every feature in `required` is in hostCpuFeatures().
bool hostSupports(const std::vector<std::string> &required);

} // namespace hetrt::core

#endif // HETRT_CORE_CPUFEATURES_H
