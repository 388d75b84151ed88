#include "opscope/debuginfo/loop_facts.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace opscope::debuginfo {

namespace {

int width_index(VectorWidth w) {
  switch (w) {
    case VectorWidth::scalar: return 0;
    case VectorWidth::v128: return 1;
    case VectorWidth::v256: return 2;
    case VectorWidth::v512: return 3;
  }
  return 0;
}

bool on_vector_registers(const Instruction& in) { return in.text.find("mm") != std::string::npos; }

bool is_compute(const Instruction& in) {
  bool cls = in.cls == InstrClass::fma || in.cls == InstrClass::arith || in.cls == InstrClass::convert ||
             in.cls == InstrClass::shuffle;
  return cls && on_vector_registers(in);
}

// The constant advance of each register per iteration; a register also written another
// way is still counted by its constant steps (a pointer bumped and compared).
std::map<std::string, int64_t> register_steps(const std::vector<ListedInstruction>& listing, const Loop& loop) {
  std::map<std::string, int64_t> steps;
  for (size_t i = loop.first; i <= loop.last; ++i)
    if (!listing[i].insn.step_reg.empty()) steps[listing[i].insn.step_reg] += listing[i].insn.step;
  return steps;
}

int64_t stream_step(const Instruction& in, const std::map<std::string, int64_t>& steps) {
  auto at = [&](const std::string& r) {
    auto it = steps.find(r);
    return it == steps.end() ? int64_t(0) : it->second;
  };
  int64_t s = at(in.mem_base) + (in.mem_index.empty() ? 0 : at(in.mem_index) * std::max<int64_t>(1, in.mem_scale));
  return std::llabs(s);
}

void note_lines(const std::vector<ListedInstruction>& listing, const Loop& loop, int from_line, LoopFacts& f) {
  std::map<std::string, int> per_file;
  for (size_t i = loop.first; i <= loop.last; ++i)
    if (!listing[i].file.empty()) ++per_file[listing[i].file];
  if (per_file.empty()) return;
  f.file = std::max_element(per_file.begin(), per_file.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  for (size_t i = loop.first; i <= loop.last; ++i) {
    const ListedInstruction& li = listing[i];
    if (li.file != f.file || li.line <= 0 || li.line < from_line) continue;
    f.first_line = f.first_line ? std::min(f.first_line, li.line) : li.line;
    f.last_line = std::max(f.last_line, li.line);
  }
}

}  // namespace

int LoopFacts::compute() const {
  return compute_by_width[0] + compute_by_width[1] + compute_by_width[2] + compute_by_width[3];
}

LoopFacts loop_facts(const std::vector<ListedInstruction>& listing, const Loop& loop, int from_line) {
  LoopFacts f;
  f.head = loop.head;
  f.latch = loop.latch;
  const std::map<std::string, int64_t> steps = register_steps(listing, loop);
  for (size_t i = loop.first; i <= loop.last && i < listing.size(); ++i) {
    const Instruction& in = listing[i].insn;
    ++f.instructions;
    ++f.classes[size_t(in.cls)];
    if (in.text.rfind("call", 0) == 0) ++f.calls;
    if (is_compute(in)) {
      ++f.compute_by_width[size_t(width_index(in.width))];
      if (width_index(in.width) > width_index(f.widest)) f.widest = in.width;
    }
    if (in.cls == InstrClass::convert) {
      ++f.converts;
      if (in.width == VectorWidth::scalar) ++f.scalar_converts;
    }
    if (in.gather) ++f.gathers;
    if (in.read_bytes == 0 && in.write_bytes == 0) continue;
    if (in.mem_base == "rip") {
      ++f.constant_loads;
      continue;
    }
    if (in.mem_base == "rsp" || in.mem_base == "rbp") {
      ++f.stack_accesses;
      continue;
    }
    int64_t step = stream_step(in, steps);
    if (in.read_bytes) {
      ++f.loads;
      f.read_bytes += in.read_bytes;
      f.load_step = std::max(f.load_step, step);
    }
    if (in.write_bytes) {
      ++f.stores;
      f.write_bytes += in.write_bytes;
      f.store_step = std::max(f.store_step, step);
    }
  }
  note_lines(listing, loop, from_line, f);
  if (f.first_line == 0 && from_line > 0) note_lines(listing, loop, 0, f);  // all of it inlined
  return f;
}

}  // namespace opscope::debuginfo
