// The public API in one include.
#pragma once
#include "opscope/compiler/compile.h"
#include "opscope/core/dtype.h"
#include "opscope/core/error.h"
#include "opscope/core/shape.h"
#include "opscope/models/llama.h"
#include "opscope/ops/custom.h"
#include "opscope/ops/ops.h"
#include "opscope/runtime/cuda.h"
#include "opscope/runtime/device.h"
#include "opscope/runtime/stream.h"
#include "opscope/runtime/tensor.h"
