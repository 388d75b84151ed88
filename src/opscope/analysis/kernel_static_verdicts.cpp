#include "opscope/analysis/kernel_static_verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace opscope::analysis {

namespace {

constexpr double kExtraBytes = 1.3;  // loops moving 30% more than the launch recorded

std::string where(const debuginfo::LoopFacts& f) {
  if (f.file.empty()) return fmt::format("the loop at {:#x}", f.head);
  std::string file = std::filesystem::path(f.file).filename().string();
  if (f.first_line == f.last_line) return fmt::format("the loop at {}:{}", file, f.first_line);
  return fmt::format("the loop at {}:{}-{}", file, f.first_line, f.last_line);
}

std::string kib(double bytes) { return bytes >= 1 << 20 ? fmt::format("{:.1f} MiB", bytes / (1 << 20)) : fmt::format("{:.0f} KiB", bytes / 1024); }

std::vector<const StaticLoop*> main_loops(const StaticKernel& k) {
  std::vector<const StaticLoop*> out;
  for (const StaticLoop& l : k.loops)
    if (!l.remainder) out.push_back(&l);
  return out;
}

void scalar_loop(const StaticKernel& k, std::vector<Verdict>& v) {
  for (const StaticLoop* l : main_loops(k)) {
    if (!l->facts.scalar()) continue;
    std::string why;
    if (l->facts.scalar_converts)
      why += fmt::format("; its {} converts are scalar (the {} convert was not vectorized)", l->facts.scalar_converts,
                         k.dtype == "f32" ? "dtype" : k.dtype);
    if (l->facts.calls) why += fmt::format("; it makes {} call(s) per iteration, which stop vectorization", l->facts.calls);
    v.push_back({"scalar_loop", "warn", fmt::format("{} is scalar: not vectorized{}", where(l->facts), why)});
  }
}

void spills_and_gathers(const StaticKernel& k, std::vector<Verdict>& v) {
  for (const StaticLoop* l : main_loops(k)) {
    if (l->facts.stack_accesses)
      v.push_back({"spills", "warn",
                   fmt::format("{} reads or writes the stack {} times per iteration (registers spilled, or a buffer "
                               "on the stack): each a store-to-load round trip",
                               where(l->facts),
                               l->facts.stack_accesses)});
    if (l->facts.gathers)
      v.push_back({"gathers", "info",
                   fmt::format("{} gathers ({} per iteration): an input is read with a stride or an index, not contiguously",
                               where(l->facts), l->facts.gathers)});
  }
}

void narrow_vectors(const StaticKernel& k, int native_bits, std::vector<Verdict>& v) {
  for (const StaticLoop* l : main_loops(k)) {
    int bits = int(l->facts.widest);
    if (bits == 0 || bits >= native_bits) continue;
    v.push_back({"narrow_vectors", "info",
                 fmt::format("{} uses {}-bit vectors where this CPU has {}-bit registers", where(l->facts), bits, native_bits)});
  }
}

void bytes_moved(const StaticKernel& k, std::vector<Verdict>& v) {
  if (k.bytes_per_element < 0 || k.recorded_bytes_per_element <= 0) return;
  if (k.bytes_per_element <= kExtraBytes * k.recorded_bytes_per_element) return;
  std::vector<const StaticLoop*> moving;
  for (const StaticLoop* l : main_loops(k))
    if (l->bytes_per_element > 0) moving.push_back(l);
  std::string figures = fmt::format("{:.1f} B per element where the launch recorded {:.1f}", k.bytes_per_element,
                                    k.recorded_bytes_per_element);
  if (moving.size() < 2) {
    v.push_back({"extra_bytes", "warn", fmt::format("the loops move {}: an input is read more than once", figures)});
    return;
  }
  double row = double(k.cols > 0 ? k.cols : k.elements) * k.elem_bytes;
  int64_t l2 = l2_bytes();
  std::string cache = l2 > 0 && row > 0 && row <= double(l2) / 2
                          ? fmt::format("; a row is {}, so the later passes read it from cache (L2 {})", kib(row), kib(double(l2)))
                          : fmt::format("; a row is {}, more than half of L2 ({}): the later passes read memory again",
                                        kib(row), l2 > 0 ? kib(double(l2)) : "unknown");
  bool costly = !(l2 > 0 && row > 0 && row <= double(l2) / 2);
  v.push_back({"passes", costly ? "warn" : "info",
               fmt::format("{} passes over the input, {}{}", moving.size(), figures, cache)});
}

void scalar_remainder(const StaticKernel& k, std::vector<Verdict>& v) {
  if (k.cols <= 0) return;
  for (const StaticLoop* l : main_loops(k)) {
    if (l->elements < 2 || l->facts.scalar()) continue;
    int64_t per = int64_t(l->elements), left = k.cols % per;
    if (left == 0) continue;
    v.push_back({"scalar_remainder", "info",
                 fmt::format("{} takes {} elements an iteration: a row of {} leaves {} ({:.1f}%) to its tail code",
                             where(l->facts), per, k.cols, left, 100.0 * double(left) / double(k.cols))});
  }
}

}  // namespace

int64_t l2_bytes() {
  long n = sysconf(_SC_LEVEL2_CACHE_SIZE);  // glibc reads it from cpuid; sysfs may be absent (VMs)
  if (n > 0) return n;
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index2/size");
  std::string text;
  if (!(in >> text) || text.empty()) return 0;
  int64_t k = 0;
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') k = k * 10 + (text[i++] - '0');
  char unit = i < text.size() ? text[i] : ' ';
  return unit == 'K' ? k << 10 : unit == 'M' ? k << 20 : k;
}

std::vector<Verdict> static_verdicts(const StaticKernel& k, int native_bits) {
  std::vector<Verdict> v;
  scalar_loop(k, v);
  spills_and_gathers(k, v);
  bytes_moved(k, v);
  narrow_vectors(k, native_bits, v);
  scalar_remainder(k, v);
  if (k.loops.empty()) {
    v.push_back({"no_loop", "info", "no loop found in its code (straight-line code, or the symbol was not found)"});
    return v;
  }
  bool warned = false;
  for (const Verdict& x : v) warned = warned || x.severity == "warn";
  if (!warned) {
    int widest = 0;
    for (const StaticLoop* l : main_loops(k)) widest = std::max(widest, int(l->facts.widest));
    std::string what = widest ? fmt::format("vectorized at {}-bit; no spills, no scalar main loop", widest)
                              : std::string("its loops only move data (no arithmetic); no spills");
    v.insert(v.begin(), {"vectorized", "info",
                         fmt::format("{}{}", what,
                                     k.recorded_bytes_per_element > 0 && k.bytes_per_element >= 0 &&
                                             k.bytes_per_element <= kExtraBytes * k.recorded_bytes_per_element
                                         ? fmt::format("; {:.1f} B per element, as the launch recorded ({:.1f})",
                                                       k.bytes_per_element, k.recorded_bytes_per_element)
                                         : "")});
  }
  std::stable_sort(v.begin(), v.end(), [](const Verdict& a, const Verdict& b) { return a.severity == "warn" && b.severity != "warn"; });
  return v;
}

}  // namespace opscope::analysis
