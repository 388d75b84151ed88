// What one loop of machine code does per iteration, read from its instructions alone (no
// run): the static half of `opscope kernel --static`, Nsight Compute's "source counters"
// without a counter. Facts, not judgements: analysis/kernel_static.h turns them into
// per-element figures and verdicts.
//
//   compute      fma, arith, convert and shuffle instructions on vector registers
//                (xmm/ymm/zmm, scalar forms included): the loop's work, not its overhead
//   streams      memory operands through a general register: the data; a rip-relative
//                operand is a constant and an rsp/rbp one the stack (spills)
//   step         how far a stream's address moves per iteration: the constant steps of
//                its base and index registers (index times scale); 0 when neither moves
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/debuginfo/listing.h"

namespace opscope::debuginfo {

struct LoopFacts {
  uint64_t head = 0, latch = 0;  // the loop's first instruction and its backward jump
  int instructions = 0;
  std::array<int, kNumInstrClasses> classes{};  // instructions per InstrClass
  // Compute instructions per width: [0] scalar, [1] 128-bit, [2] 256-bit, [3] 512-bit.
  std::array<int, 4> compute_by_width{};
  VectorWidth widest = VectorWidth::scalar;  // of the compute instructions
  int converts = 0, scalar_converts = 0;
  int loads = 0, stores = 0;        // instructions reading / writing data streams
  int64_t read_bytes = 0, write_bytes = 0;
  int stack_accesses = 0;           // rsp/rbp operands: registers spilled inside the loop
  int constant_loads = 0;           // rip-relative operands
  int gathers = 0;
  int calls = 0;
  int64_t store_step = 0;  // the largest step of a written stream, in bytes per iteration
  int64_t load_step = 0;   // the largest step of a read stream
  std::string file;        // the source file most of its instructions come from
  int first_line = 0, last_line = 0;

  int compute() const;
  bool scalar() const { return compute() > 0 && widest == VectorWidth::scalar; }
};

// `from_line`: the loop's lines are those at or after it in its file (a function's first
// line: below it are helpers inlined into the loop, not the loop's own code).
LoopFacts loop_facts(const std::vector<ListedInstruction>& listing, const Loop& loop, int from_line = 0);

}  // namespace opscope::debuginfo
