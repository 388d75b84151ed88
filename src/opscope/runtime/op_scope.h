// The framework layer's mark on an op call: names the op for error messages of the
// kernels it launches, and records the op (with a correlation id its launches carry)
// when the profiler records the framework layer.
#pragma once
#include <initializer_list>
#include <span>

#include "opscope/profiler/hooks.h"

namespace opscope {

class Tensor;

class OpScope {
 public:
  OpScope(const char* name, std::initializer_list<const Tensor*> inputs, void* ret)
      : OpScope(name, std::span<const Tensor* const>(inputs.begin(), inputs.size()), ret) {}
  // record = false: name the kernels and errors, record no op (the framework above records it).
  OpScope(const char* name, std::span<const Tensor* const> inputs, void* ret, bool record = true) : prev_(t_op) {
    if (t_outer) {  // inside a framework's op (the torch bridge's aten::add): it names the kernels
      skip_ = true;
      return;
    }
    t_op = name;
    if (record && (prof::layers() & prof::kFramework)) id_ = prof::op_begin(name, inputs, ret);
  }
  ~OpScope() {
    if (skip_) return;
    if (id_) prof::op_end(id_);
    t_op = prev_;
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

  // Name of the innermost op on this thread ("" outside any op).
  static const char* current() { return t_op ? t_op : ""; }

 private:
  friend class FrameworkOpScope;
  static inline thread_local const char* t_op = nullptr;
  static inline thread_local bool t_outer = false;
  const char* prev_;
  uint64_t id_ = 0;
  bool skip_ = false;
};

// The op of a framework above opscope (the torch bridge's "aten::mul"): the opscope ops
// called inside it open no op of their own, so its launches, kernels and errors carry its
// name and the profile shows one framework op per aten op. `name` must outlive it. While
// torch's RecordFunction callbacks record the aten ops (prof::external_ops()), it records none.
class FrameworkOpScope {
 public:
  FrameworkOpScope(const char* name, std::span<const Tensor* const> inputs)
      : scope_(name, inputs, __builtin_return_address(0), !prof::external_ops()), prev_outer_(OpScope::t_outer) {
    OpScope::t_outer = true;
  }
  FrameworkOpScope(const char* name, std::initializer_list<const Tensor*> inputs)
      : FrameworkOpScope(name, std::span<const Tensor* const>(inputs.begin(), inputs.size())) {}
  ~FrameworkOpScope() { OpScope::t_outer = prev_outer_; }
  FrameworkOpScope(const FrameworkOpScope&) = delete;
  FrameworkOpScope& operator=(const FrameworkOpScope&) = delete;

 private:
  OpScope scope_;
  bool prev_outer_;
};

}  // namespace opscope

// First statement of every public op: OPSCOPE_OP("add", &a, &b);
// Must sit in the public function itself so that the return address is the user's call.
#define OPSCOPE_OP(name, ...) \
  ::opscope::OpScope opscope_op_scope_(name, {__VA_ARGS__}, __builtin_return_address(0))
