// The kinds of torch.profiler (Kineto) trace events opscope reads, by category name in
// each generation of the format, and the name of the variant a file is written in.
//
//   new (2022+)            old (2021)   opscope
//   cpu_op                 Operator     op (framework)
//   user_annotation        -            range (record_function, ProfilerStep#N)
//   cuda_runtime           Runtime      launch when it launched GPU work, else api/sync
//   cuda_driver            -            the same
//   kernel                 Kernel       kernel on "cuda:D stream S"
//   gpu_memcpy, gpu_memset Memcpy, ...  kernel (with bytes)
//   cuda_sync              -            sync on the GPU's track
//   ac2g / async*          async        flows: checked for partners, links use correlation
//   cpu_instant_event      (none)       [memory] instants: alloc / free
//   gpu_user_annotation, python_function, and any unknown category (mtia_runtime, ...):
//                                       api, a generic event no table counts
#pragma once
#include <cstdint>
#include <string_view>

namespace opscope::importer {

enum class Category : uint8_t {
  none,  // no "cat" (legacy array, old memory events)
  cpu_op,
  user_annotation,
  gpu_user_annotation,
  runtime,
  driver,
  kernel,
  memcpy,
  memset,
  gpu_sync,
  flow,         // ac2g, async, async_gpu, async_cpu_to_gpu
  fwdbwd,       // forward-backward flows: dropped (no backward in inference; no op-to-op link)
  cpu_instant,  // [memory] and other instants
  trace_span,   // "Trace": the profiler's own span
  python_function,
  other,
};

// `old_name` is set for the 2021 spellings (Operator, Runtime, Kernel, Memcpy, Memset).
Category category_of(std::string_view cat, bool& old_name);

// Events on a GPU's timeline (pid = device, tid = stream).
inline bool on_gpu(Category c) {
  return c == Category::kernel || c == Category::memcpy || c == Category::memset || c == Category::gpu_sync ||
         c == Category::gpu_user_annotation;
}
// Device work a launch makes, counted as device time.
inline bool device_work(Category c) { return c == Category::kernel || c == Category::memcpy || c == Category::memset; }
inline bool runtime_call(Category c) { return c == Category::runtime || c == Category::driver; }

// How a launch (runtime call) finds the CPU op that made it.
enum class LaunchRule : uint8_t {
  external_id,        // 2024+: its "External id" is the launching cpu_op's "External id"
  lower_external_id,  // 2021: its "external id" is the launching cpu_op's
  enclosing_op,       // 2022-23 ("External id" is its own correlation) and legacy: the
                      // innermost cpu_op on its thread whose span contains it
};
const char* launch_rule_name(LaunchRule r);

}  // namespace opscope::importer
