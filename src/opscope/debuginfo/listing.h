// A function's instructions with the source line of each: what `opscope kernel` and the
// explorer's kernel view list, and what the static analysis reads for loops.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opscope/debuginfo/disasm.h"
#include "opscope/debuginfo/elf_module.h"

namespace opscope::debuginfo {

struct ListedInstruction {
  Instruction insn;
  std::string file;  // "" when the module has no line table there
  int line = 0;
};

// Functions larger than this are listed only around the addresses asked for.
constexpr uint64_t kMaxListedBytes = 64 * 1024;

// The instructions of [low, high) in `module`, each with its line. When the range is
// larger than kMaxListedBytes, only windows of ±1 KiB around `around` are decoded
// (addresses from a function's start, so decoding is in step).
std::vector<ListedInstruction> list_code(const ElfModule& module, uint64_t low, uint64_t high,
                                         const std::vector<uint64_t>& around = {});

// The loops of a listing: each backward jump's [target, jump] range, innermost first;
// a range that overlaps another without nesting (a cold path jumping back into a loop's
// latch) is no loop and left out.
struct Loop {
  uint64_t head = 0;  // the jump's target (the loop's first instruction)
  uint64_t latch = 0; // the address of the backward jump
  size_t first = 0, last = 0;  // indices into the listing, inclusive
  bool innermost = false;      // contains no other loop
};
std::vector<Loop> find_loops(const std::vector<ListedInstruction>& listing);

}  // namespace opscope::debuginfo
