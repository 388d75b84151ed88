// The verdicts of `opscope kernel --static` (kernel_static.h): small rules over one
// kernel's loop facts, each naming the loop by its source lines and saying what it costs.
//   scalar_loop       a main loop computes on scalars: not vectorized (and why, where the
//                     code says: scalar converts, a call per iteration)
//   spills            a main loop reads or writes the stack: registers spilled
//   gathers           a main loop gathers: an input read with a stride or an index
//   narrow_vectors    a main loop's widest vectors are narrower than this CPU's
//   passes            the loops move more bytes per element than the launch recorded,
//                     over several loops: the input is read again (from cache when a row
//                     fits in L2)
//   extra_bytes       the same in one loop
//   scalar_remainder  a row's length leaves elements to a tail loop
//   vectorized        none of these
#pragma once
#include <vector>

#include "opscope/analysis/kernel_static.h"

namespace opscope::analysis {

std::vector<Verdict> static_verdicts(const StaticKernel& k, int native_bits);

// This CPU's L2 cache per core in bytes (sysfs), 0 when unknown.
int64_t l2_bytes();

}  // namespace opscope::analysis
