// User-annotated ranges, as torch.profiler.record_function: a named span of the calling
// thread, recorded as EventKind::range in the framework layer. Ranges nest with each
// other and with ops: an op called inside a range has the range as its parent, so the
// range's totals in key_averages include the op's CPU and device time.
//
//   { OPSCOPE_RECORD_FUNCTION("attention"); q = matmul(x, wq); ... }
#pragma once
#include <cstdint>
#include <string_view>

#include "opscope/profiler/hooks.h"

namespace opscope::prof {

// Begins a range (the name is copied); returns its correlation id. Call only while the
// framework layer records; pair with range_end on the same thread.
uint64_t range_begin(std::string_view name);
void range_end(uint64_t id);

class RecordFunction {
 public:
  explicit RecordFunction(std::string_view name) {
    if (layers() & kFramework) id_ = range_begin(name);
  }
  ~RecordFunction() {
    if (id_) range_end(id_);
  }
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  uint64_t id_ = 0;
};

}  // namespace opscope::prof

#define OPSCOPE_PROF_CAT2(a, b) a##b
#define OPSCOPE_PROF_CAT(a, b) OPSCOPE_PROF_CAT2(a, b)
// A range from here to the end of the enclosing block.
#define OPSCOPE_RECORD_FUNCTION(name) \
  ::opscope::prof::RecordFunction OPSCOPE_PROF_CAT(opscope_record_function_, __LINE__)(name)
