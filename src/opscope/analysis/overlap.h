// Communication / computation overlap (HTA's get_comm_comp_overlap), per rank: of the
// time communication runs, the share during which computation runs too.
//
//   comm     = |∪ COMM work|        compute = |∪ COMP work|
//   overlap  = |∪ COMM ∩ ∪ COMP|    ratio   = overlap / comm
//   exposed  = comm − overlap: communication no computation hides, which the step
//              waits for in full.
#pragma once
#include <cstdint>

#include "opscope/analysis/rank_view.h"

namespace opscope::analysis {

struct Overlap {
  int64_t comm_ns = 0, compute_ns = 0, overlap_ns = 0, exposed_ns = 0;
  int64_t exposed_t0 = 0, exposed_t1 = 0;  // the longest stretch of exposed communication
  double ratio() const { return comm_ns > 0 ? double(overlap_ns) / double(comm_ns) : 0; }
};

Overlap comm_comp_overlap(const RankView& view);

}  // namespace opscope::analysis
