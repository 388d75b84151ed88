// key_averages: a collected Trace aggregated per op, range and kernel name, printed as
// torch.profiler's table (or JSON, CSV).
//
// CPU time (framework ops and user ranges, host threads):
//   CPU total of an event = its wall duration [t0, t1];
//   Self CPU = CPU total minus the CPU totals of its direct children (ops/ranges whose
//   parent is this event). Self CPU % sums to 100% over the rows.
// Device time (kernels):
//   a launch's device time is its span on the device, max(t1) - min(t0) over its slices
//   on the traced cores — two cores running slices side by side count once, not twice.
//   With correlate_device_time (the config's default): the launch's time is the Self
//   Device time of the op that launched it and counts in the Device total of that op
//   and of every enclosing op/range. Each kernel name also has its own row (0 CPU)
//   whose Device total / avg are its launches' time; that row's Self Device holds only
//   launches with no recorded launching op — so every launch is "self" exactly once and
//   Self Device % sums to 100% over all rows.
//   Without correlate_device_time, ops carry no device time and kernel rows own it all.
// Totals % (CPU total %, Device total %) are relative to the Self totals, as in torch,
// so nested rows may add up to more than 100%.
// Device memory (the caching allocator's alloc/free events, runtime layer), torch's
// profile_memory "Self CPU Mem" / "CPU Mem" applied to the device's allocator:
//   Self Device Mem of an op/range = bytes allocated minus bytes freed by the alloc/free
//   events whose parent is that op/range itself; Device Mem = the same over the op and
//   every op/range nested in it. A free counts (negative) where it happens, even when the
//   block was allocated in another op, so an op that frees its inputs can go negative.
//   Events outside any op/range belong to no row; kernel rows carry no memory.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/analysis/roofline.h"
#include "opscope/analysis/trace.h"

namespace opscope::analysis {

// The range the PyTorch bridge opens, as "opscope::cpu_fallback(aten::cumprod)", around an
// op it runs with torch's CPU kernel on the device's memory (torch/fallback.cpp).
inline constexpr std::string_view kCpuFallbackRange = "opscope::cpu_fallback";

struct KeyAverage {
  std::string name;
  EventKind kind = EventKind::op;  // op, range or kernel
  std::string input_shapes;        // set when grouped by input shape
  std::string source;              // set when grouped by stack
  std::string origins;             // a compiled kernel: the ops and modules it came from (kernel_origins.h)
  int64_t count = 0;               // ops/ranges: calls; kernels: launches
  int64_t self_cpu_ns = 0;
  int64_t cpu_total_ns = 0;
  int64_t self_device_ns = 0;
  int64_t device_total_ns = 0;
  // Bytes moved and floating-point operations of the launches counted in device_total_ns
  // (from the kernels' shapes), for achieved GB/s and GFLOP/s.
  int64_t bytes = 0;
  int64_t flops = 0;
  // Device memory (see above): bytes allocated − bytes freed, and allocations counted,
  // in the op/range itself (self_*) and with its nested ops/ranges.
  int64_t self_device_memory = 0;
  int64_t device_memory = 0;
  int64_t self_device_allocs = 0;
  int64_t device_allocs = 0;

  double cpu_avg_ns() const { return count ? double(cpu_total_ns) / double(count) : 0; }
  double device_avg_ns() const { return count ? double(device_total_ns) / double(count) : 0; }
  // Achieved rates over the device time (0 without device time).
  double gbps() const { return device_total_ns > 0 ? double(bytes) / double(device_total_ns) : 0; }
  double gflops() const { return device_total_ns > 0 ? double(flops) / double(device_total_ns) : 0; }
};

// Which columns table() shows. Default: every column that applies (torch's table). With
// `width` > 0 and no `columns`, the table fits that many characters: columns that are
// zero in every row go, headers take their short form ("Self Dev", "Dev total", ...),
// then the least telling columns go, in a fixed order, until it fits; a line under the
// table names what was left out. `columns`: these, in this order (keys of
// table_column_names(); Name comes first whether listed or not).
struct TableLayout {
  std::vector<std::string> columns;
  size_t width = 0;
};

// The column keys for TableLayout::columns, comma-separated, in the table's order.
std::string table_column_names();
// Checks keys before a profile loads; throws "[columns] unknown column 'x' (expected ...)".
void check_table_columns(const std::vector<std::string>& columns);

class KeyAverages {
 public:
  // Rows in order of first appearance.
  const std::vector<KeyAverage>& rows() const { return rows_; }
  int64_t self_cpu_time_total_ns() const { return self_cpu_total_; }
  int64_t self_device_time_total_ns() const { return self_device_total_; }
  int64_t dropped() const { return dropped_; }
  // The device's peaks, when the profile carries them (roofline.h).
  const Roofline& roofline() const { return roofline_; }
  // Whether the trace had alloc/free events (the table then shows the memory columns).
  bool has_memory() const { return has_memory_; }

  // Rows ordered by `sort_by` (descending; "" keeps first appearance), except that the
  // rows of ops that ran torch's CPU kernel (ranges kCpuFallbackRange + "(aten::op)") come
  // first whatever the key: their cost is host time the device waited through, which a
  // device-time sort would bury, and they are what to fix first. Keys as torch:
  // self_cpu_time_total, cpu_time_total, cpu_time (avg), self_device_time_total,
  // device_time_total, device_time (avg), self_device_memory_usage, device_memory_usage,
  // count. Aliases: the cuda_* time keys; self_cuda_memory_usage, cuda_memory_usage,
  // self_cpu_memory_usage and cpu_memory_usage all mean the device allocator's memory
  // (on the CPU device that memory is host memory, so torch's cpu_* keys read the same).
  // Throws "[sort_by] unknown key 'x' (expected one of ...)".
  std::vector<KeyAverage> sorted(std::string_view sort_by) const;
  // torch.profiler's table. When the launches carry bytes/flops it gains achieved GB/s
  // and GFLOP/s over Device total, and with known peaks "% Roofline" (roofline.h); when
  // the trace has alloc/free events, "Device Mem" and "Self Device Mem" (KB, MB, GB).
  // row_limit <= 0: all rows. time_unit: "s", "ms", "us", "ns",
  // or "" / "auto" (each value in its own unit); else throws "[time_unit] ...".
  std::string table(std::string_view sort_by = "", int64_t row_limit = 100, std::string_view time_unit = "",
                    const TableLayout& layout = {}) const;
  std::string to_json(std::string_view sort_by = "") const;
  std::string to_csv(std::string_view sort_by = "") const;

 private:
  friend KeyAverages key_averages(const Trace&, bool, int);
  std::vector<KeyAverage> rows_;
  int64_t self_cpu_total_ = 0;
  int64_t self_device_total_ = 0;
  int64_t dropped_ = 0;
  std::vector<std::pair<std::string, int64_t>> dropped_per_track_;
  Roofline roofline_;
  bool has_memory_ = false;
  bool by_shape_ = false;
  bool by_stack_ = false;
  bool has_origins_ = false;
};

// group_by_input_shape: ops with other input shapes get their own rows (needs
// record_shapes). group_by_stack_n > 0: rows per call site too (needs with_stack; the
// recorder keeps one frame, the op's caller, so any n >= 1 groups by that frame).
// `s` on one table line: newlines and tabs written as \n, \r, \t.
std::string printable(std::string_view s);

KeyAverages key_averages(const Trace& trace, bool group_by_input_shape = false, int group_by_stack_n = 0);

// The sort keys, comma-separated, for help texts and errors (with_aliases: torch's other
// spellings too).
std::string sort_key_names(bool with_aliases = false);

}  // namespace opscope::analysis
