// batch_norm in eval (running statistics), the op CNNs call after each convolution.
#pragma once
#include "opscope/runtime/tensor.h"

namespace opscope {

// y = (x - mean) / sqrt(var + eps) * weight + bias over axis 1 of x (N, C, ...), from the
// running statistics mean and var (C); weight and bias (C) may be undefined. One pass over
// x on the CPU device (kernels/cpu/batch_norm); traced for the compiler, or on another
// device, as the elementwise ops it is.
Tensor batch_norm(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& weight, const Tensor& bias,
                  double eps = 1e-5);

}  // namespace opscope
