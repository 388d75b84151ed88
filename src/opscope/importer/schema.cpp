#include "opscope/importer/schema.h"

namespace opscope::importer {

Category category_of(std::string_view c, bool& old_name) {
  old_name = false;
  if (c.empty()) return Category::none;
  if (c == "cpu_op") return Category::cpu_op;
  if (c == "kernel") return Category::kernel;
  if (c == "cuda_runtime") return Category::runtime;
  if (c == "ac2g" || c == "async_gpu" || c == "async_cpu_to_gpu") return Category::flow;
  if (c == "user_annotation") return Category::user_annotation;
  if (c == "gpu_user_annotation") return Category::gpu_user_annotation;
  if (c == "cuda_driver") return Category::driver;
  if (c == "gpu_memcpy") return Category::memcpy;
  if (c == "gpu_memset") return Category::memset;
  if (c == "cuda_sync") return Category::gpu_sync;
  if (c == "cpu_instant_event") return Category::cpu_instant;
  if (c == "python_function") return Category::python_function;
  if (c == "fwdbwd") return Category::fwdbwd;
  if (c == "Trace") return Category::trace_span;
  old_name = true;
  if (c == "Operator") return Category::cpu_op;
  if (c == "Runtime") return Category::runtime;
  if (c == "Kernel") return Category::kernel;
  if (c == "Memcpy") return Category::memcpy;
  if (c == "Memset") return Category::memset;
  if (c == "async") return Category::flow;
  old_name = false;
  return Category::other;
}

const char* launch_rule_name(LaunchRule r) {
  switch (r) {
    case LaunchRule::external_id: return "External id";
    case LaunchRule::lower_external_id: return "external id";
    case LaunchRule::enclosing_op: return "enclosing cpu_op";
  }
  return "?";
}

}  // namespace opscope::importer
