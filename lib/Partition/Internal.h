// Helpers the solvers share: turning the closest choice of an infeasible
// problem into a Result, and the bytes an option holds.
#ifndef HETC_LIB_PARTITION_INTERNAL_H
#define HETC_LIB_PARTITION_INTERNAL_H

#include "hetc/Partition/Partition.h"

namespace hetc::partition::detail {

/// The Result of a problem no choice fits, `closest` being a choice of
/// minimal total overflow.
Result infeasible(const Problem &problem, std::vector<int> closest);

/// A Result carrying only `error`.
Result failure(std::string error);

} // namespace hetc::partition::detail

#endif // HETC_LIB_PARTITION_INTERNAL_H
