// The text of kernels/cpu/vec_math.inc (the vectorizable exp, log, erf, tanh, sigmoid),
// which the build turns into a string (vec_math_text.cpp.in) so that generated kernels
// paste the same math the eager kernels include.
#pragma once

namespace opscope::compiler {

extern const char* const kVecMathText;

}  // namespace opscope::compiler
