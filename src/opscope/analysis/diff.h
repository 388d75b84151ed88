// diff_profiles: two profiles compared row by row, as HTA's trace diff does — per op,
// range and kernel (matched by kind and name, optionally by input shapes too) both
// sides' key_averages figures and their change B − A; the rows only in B (added) or only
// in A (removed); the totals; and warnings where the two are not like for like (another
// device or core count, schema version, recorded layers or cores, dropped events).
// The figures are key_averages' (key_averages.h), so `opscope diff`, `opscope table`
// and the explorer's compare view agree.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/analysis/key_averages.h"
#include "opscope/analysis/trace.h"

namespace opscope::analysis {

struct DiffOptions {
  bool group_by_input_shape = false;  // ops with other input shapes are other rows
  std::string a_label = "A";          // how warnings and the table name the two sides
  std::string b_label = "B";
};

// One side's figures of a row: key_averages' (zeros where the row is absent there).
struct DiffSide {
  int64_t count = 0;  // ops/ranges: calls; kernels: launches
  int64_t self_cpu_ns = 0;
  int64_t cpu_total_ns = 0;
  int64_t self_device_ns = 0;
  int64_t device_total_ns = 0;
  int64_t bytes = 0;
  int64_t flops = 0;
  int64_t self_device_memory = 0;  // key_averages' Self Device Mem / Device Mem (bytes)
  int64_t device_memory = 0;
  bool operator==(const DiffSide&) const = default;
};

enum class DiffStatus : uint8_t {
  same,     // on both sides, every figure equal
  changed,  // on both sides, some figure differs
  added,    // only in B
  removed,  // only in A
};
const char* status_name(DiffStatus s);

struct DiffRow {
  std::string name;
  EventKind kind = EventKind::op;
  std::string input_shapes;  // set when grouped by input shape
  DiffStatus status = DiffStatus::same;
  DiffSide a, b;
  bool in_a() const { return status != DiffStatus::added; }
  bool in_b() const { return status != DiffStatus::removed; }
  DiffSide delta() const;  // b − a, field by field
};

// One whole profile, as far as its trace says.
struct ProfileTotals {
  std::string label;
  int schema_version = 0;
  std::vector<DeviceInfo> devices;
  std::string layers;  // the recording config's layers ("" when the trace has no config)
  int64_t self_cpu_ns = 0;     // key_averages' Self CPU time total
  int64_t self_device_ns = 0;  // key_averages' Self Device time total
  int64_t span_ns = 0;         // first event's start to last event's end
  int64_t events = 0;
  int64_t launches = 0;  // kernel launches seen on the device
  int64_t bytes = 0;     // moved by those launches
  int64_t flops = 0;
  int64_t dropped = 0;  // events lost to full buffers
  // Top-level user ranges (a range per step or call, as `opscope profile` records):
  // the per-step figures divide by it; 0 when there are none.
  int64_t steps = 0;
  // The most bytes the device allocator held at once (the largest over the devices,
  // memory_summary's peak); has_memory is false when the trace has no alloc/free events.
  bool has_memory = false;
  int64_t peak_memory = 0;
};

// Bits of EventKind that a view shows (op, range, kernel).
constexpr uint32_t kind_bit(EventKind k) { return 1u << uint32_t(k); }
constexpr uint32_t kAllDiffKinds = kind_bit(EventKind::op) | kind_bit(EventKind::range) | kind_bit(EventKind::kernel);
// "op", "range", "kernel", "all", or a comma list. Throws "[what] unknown kind ...".
uint32_t parse_diff_kinds(std::string_view spec, std::string_view what = "kind");

// Which rows an output shows and in what order.
struct DiffView {
  // Descending |change| of a figure: self_device_time_total, device_time_total,
  // self_cpu_time_total, cpu_time_total, cpu_time / device_time (averages), count,
  // bytes, flops, self_device_memory_usage, device_memory_usage (the cuda_* spellings
  // and torch's cpu_/cuda_ memory keys are aliases); "name" (ascending); "" keeps row order.
  std::string sort_by = "self_device_time_total";
  int64_t row_limit = 100;  // rows per section of the table (<= 0: all); JSON lists all
  uint32_t kinds = kAllDiffKinds;
  // Rows on both sides whose time changes (self and total, CPU and device) are all
  // smaller are hidden; added and removed rows always show.
  int64_t min_delta_ns = 0;
};

class ProfileDiff {
 public:
  // A's rows in their order of first appearance, then B's new ones in theirs.
  const std::vector<DiffRow>& rows() const { return rows_; }
  const ProfileTotals& a() const { return a_; }
  const ProfileTotals& b() const { return b_; }
  // Why the two may not compare like for like, one sentence each; empty when they do.
  const std::vector<std::string>& warnings() const { return warnings_; }
  bool group_by_input_shape() const { return by_shape_; }

  // The rows `view` shows (kinds, min_delta_ns), sorted; row_limit not applied.
  // Throws "[sort_by] unknown key 'x' (expected one of ...)".
  std::vector<DiffRow> select(const DiffView& view) const;
  // Rows hidden by view.min_delta_ns.
  int64_t hidden(const DiffView& view) const;
  // The table: legend, warnings, rows on both sides, "Added in B" and "Removed from A"
  // sections, then the totals (A, B, change, change %).
  std::string table(const DiffView& view = {}) const;
  std::string to_json(const DiffView& view = {}) const;

 private:
  friend ProfileDiff diff_profiles(const Trace&, const KeyAverages&, const Trace&, const KeyAverages&,
                                   const DiffOptions&);
  std::vector<DiffRow> rows_;
  ProfileTotals a_, b_;
  std::vector<std::string> warnings_;
  bool by_shape_ = false;
};

// Throws "[diff] <label>: schema version N is newer than this opscope reads (M)" for a
// trace this build cannot read (load_profile refuses such files first).
ProfileDiff diff_profiles(const Trace& a, const Trace& b, const DiffOptions& options = {});
// The same with key_averages already computed (grouped as options say), e.g. cached ones.
ProfileDiff diff_profiles(const Trace& a, const KeyAverages& ka, const Trace& b, const KeyAverages& kb,
                          const DiffOptions& options = {});

}  // namespace opscope::analysis
