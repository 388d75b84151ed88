#include "opscope/runtime/runtime.h"

#include <algorithm>

#include "opscope/core/clock.h"
#include "opscope/core/error.h"
#include "opscope/core/pool_allocator.h"
#include "opscope/profiler/hooks.h"
#include "opscope/runtime/op_scope.h"

namespace opscope::runtime {

namespace {
// Its own lines: an atomic add per launch next to data the device reads would miss.
alignas(128) std::atomic<uint64_t> g_next_launch{1};
}

Tensor allocate(const Shape& shape, DType dtype, Device& dev) {
  const char* op = OpScope::current()[0] ? OpScope::current() : "empty";
  for (int64_t d : shape)
    if (d < 0) fail(op, "negative dimension in shape {}", shape.str());
  int64_t bytes = itemsize(dtype);
  bool over = false;
  for (int64_t d : shape) over |= __builtin_mul_overflow(bytes, d, &bytes);
  if (over && std::find(shape.begin(), shape.end(), 0) == shape.end())
    fail(op, "shape {} of {} is more than 2^63 bytes", shape.str(), dtype_name(dtype));
  Block b = dev.allocator().allocate(size_t(shape.numel()) * itemsize(dtype));
  auto st = std::allocate_shared<Storage>(PoolAllocator<Storage>(), dev, b);
  return Tensor(std::move(st), shape, contiguous_strides(shape), 0, dtype);
}

uint64_t launch(Device& dev, LaunchSpec spec, std::span<const Tensor* const> reads,
                std::span<const Tensor* const> writes) {
  bool rec = prof::layers() & prof::kRuntime;
  int64_t t0 = rec ? now_ns() : 0;
  Stream& s = current_stream(dev);
  Launch* l = s.new_launch();
  l->kind = spec.kind;
  l->id = g_next_launch.fetch_add(1, std::memory_order_relaxed);
  l->op_id = prof::layers() ? prof::current_op_id() : 0;
  l->name = std::move(spec.name);
  l->op = OpScope::current();
  l->body = std::move(spec.body);
  l->work = spec.work;
  l->grain = spec.grain;
  l->bytes = spec.bytes;
  l->flops = spec.flops;
  l->keep.reserve(reads.size() + writes.size());
  for (const Tensor* t : reads) {
    Storage* st = t->storage().get();
    if (st->writer && st->writer != &s && st->writer->completed() < st->writer_seq)
      l->waits.emplace_back(st->writer, st->writer_seq);
    l->keep.push_back(t->storage());
  }
  for (const Tensor* t : writes) l->keep.push_back(t->storage());
  uint64_t id = l->id;
  if (rec) prof::on_launch(*l, dev.index(), s.id(), t0);  // before submit: `l` may be recycled after
  uint64_t seq = s.submit(l);
  for (const Tensor* t : writes) {
    t->storage()->writer = &s;
    t->storage()->writer_seq = seq;
  }
  return id;
}

void wait_written(const Tensor& t) {
  Storage* st = t.storage().get();
  if (!st->writer) return;
  int64_t t0 = now_ns();
  st->writer->wait_for(st->writer_seq);
  if (prof::layers() & prof::kRuntime)
    prof::on_sync(prof::SyncKind::tensor_read, st->device->index(), st->writer->id(), t0, now_ns());
  st->writer->check_error();
}

}  // namespace opscope::runtime
