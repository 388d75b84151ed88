#include "opscope/debuginfo/listing.h"

#include <algorithm>

namespace opscope::debuginfo {

namespace {

void decode(const ElfModule& module, uint64_t low, uint64_t high, std::vector<ListedInstruction>& out) {
  for (Instruction& in : disassemble(module.code(low, high), low)) {
    ListedInstruction li;
    if (auto line = module.line_at(in.address)) {
      li.file = std::move(line->file);
      li.line = line->line;
    }
    li.insn = std::move(in);
    out.push_back(std::move(li));
  }
}

}  // namespace

std::vector<ListedInstruction> list_code(const ElfModule& module, uint64_t low, uint64_t high,
                                         const std::vector<uint64_t>& around) {
  std::vector<ListedInstruction> out;
  if (high <= low) return out;
  if (high - low <= kMaxListedBytes || around.empty()) {
    decode(module, low, std::min(high, low + kMaxListedBytes), out);
    return out;
  }
  // A big function: decode from its start (to stay in step) but keep only the windows.
  constexpr uint64_t kWindow = 1024;
  std::vector<ListedInstruction> all;
  decode(module, low, high, all);
  std::vector<uint64_t> at(around);
  std::sort(at.begin(), at.end());
  for (ListedInstruction& li : all) {
    uint64_t a = li.insn.address;
    auto it = std::lower_bound(at.begin(), at.end(), a > kWindow ? a - kWindow : 0);
    if (it != at.end() && *it <= a + kWindow) out.push_back(std::move(li));
  }
  return out;
}

std::vector<Loop> find_loops(const std::vector<ListedInstruction>& listing) {
  std::vector<Loop> loops;
  for (size_t i = 0; i < listing.size(); ++i) {
    const Instruction& in = listing[i].insn;
    if (!in.jump || in.target > in.address) continue;
    auto head = std::lower_bound(listing.begin(), listing.end(), in.target,
                                 [](const ListedInstruction& li, uint64_t a) { return li.insn.address < a; });
    if (head == listing.end() || head->insn.address != in.target) continue;
    loops.push_back({in.target, in.address, size_t(head - listing.begin()), i, true});
  }
  // A backward jump into the middle of another loop (a cold path rejoining a loop's
  // latch) makes a range that overlaps a loop without nesting: no loop of its own.
  // Of two such ranges the one whose head is inside the other is the jump in.
  auto crosses = [](const Loop& a, const Loop& b) { return b.first < a.first && a.first <= b.last && b.last < a.last; };
  std::vector<Loop> natural;
  for (const Loop& a : loops)
    if (std::none_of(loops.begin(), loops.end(), [&](const Loop& b) { return crosses(a, b); })) natural.push_back(a);
  loops.swap(natural);
  for (Loop& a : loops)
    for (const Loop& b : loops)
      if (&a != &b && b.first >= a.first && b.last <= a.last && (b.first != a.first || b.last != a.last))
        a.innermost = false;
  std::stable_sort(loops.begin(), loops.end(), [](const Loop& a, const Loop& b) { return a.innermost > b.innermost; });
  return loops;
}

}  // namespace opscope::debuginfo
