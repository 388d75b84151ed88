#include "opscope/core/dtype.h"

#include "opscope/core/error.h"

namespace opscope {

DType parse_dtype(std::string_view s, std::string_view what) {
  if (s == "f32" || s == "float32" || s == "float") return DType::f32;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "f16" || s == "float16" || s == "half") return DType::f16;
  if (s == "i32" || s == "int32") return DType::i32;
  if (s == "i64" || s == "int64") return DType::i64;
  if (s == "bool" || s == "b8") return DType::b8;
  fail(what, "unknown dtype '{}' (expected f32, bf16, f16, i32, i64 or bool)", s);
}

namespace detail {
void unsupported_dtype(DType t) { fail("dtype", "unsupported dtype {} for this kernel", dtype_name(t)); }
}  // namespace detail

}  // namespace opscope
