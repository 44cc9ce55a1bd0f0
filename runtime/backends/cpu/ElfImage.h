// The structural check of model code before the dynamic loader sees it. The
// loader trusts its input: a segment past the end of the file faults with
// SIGBUS when touched, a dynamic entry or relocation pointing outside the
// image writes to a wild address, an initializer runs at load. A pack's
// checksums catch damage; this check catches a pack whose code was cut or
// rewritten and its checksums recomputed, as far as structure can tell.
#ifndef HETRT_BACKENDS_CPU_ELFIMAGE_H
#define HETRT_BACKENDS_CPU_ELFIMAGE_H

#include <string>
#include <string_view>

namespace hetrt::cpu {

/// True when `image` is an x86-64 ELF shared object of the shape hetc's
/// linker writes: every segment inside the file, one dynamic section inside
/// a segment, its tables and every relocation inside the image, no
/// initializers or finalizers, no libraries it needs. Otherwise sets `why`
/// to what is wrong, phrased to follow "the code ".
bool checkElfImage(std::string_view image, std::string &why);

} // namespace hetrt::cpu

#endif // HETRT_BACKENDS_CPU_ELFIMAGE_H
