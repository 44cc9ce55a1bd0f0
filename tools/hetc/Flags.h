// Validators shared by the subcommands' flags: finite numbers in readable
// ranges, bounded thread counts.
#ifndef HETC_TOOLS_HETC_FLAGS_H
#define HETC_TOOLS_HETC_FLAGS_H

#include <CLI/CLI.hpp>

namespace hetc::cli {

/// A finite number in [low, high]; NaN and infinities are refused, and the
/// message prints the limits as a person writes them.
CLI::Validator finiteRange(double low, double high);

/// A thread count in [0, hetrt::core::kMaxThreads]; 0 means one per core.
CLI::Validator threadCount();

} // namespace hetc::cli

#endif // HETC_TOOLS_HETC_FLAGS_H
