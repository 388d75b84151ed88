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
  Stream& s = current_stream(dev);
  Block b = dev.allocator().allocate(size_t(shape.numel()) * itemsize(dtype), &s);
  auto st = std::allocate_shared<Storage>(PoolAllocator<Storage>(), dev, b);
  if (dev.allocator().stream_ordered()) st->home = &s;
  return Tensor(std::move(st), shape, contiguous_strides(shape), 0, dtype);
}

// A launch on the storage's own stream runs after every earlier user of its block and
// before any later owner's first launch, so the storage needs no keep-alive: the host may
// drop it at once (allocator.h). On another stream the launch keeps it until it has run,
// and waits for the launches of the block's previous owner, if it was handed out while
// they were queued.
namespace {
void use_storage(Launch& l, Stream& s, const std::shared_ptr<Storage>& st) {
  if (st->home == &s) return;
  const Block& b = st->block;
  if (b.fence && b.fence != &s && b.fence->completed() < b.fence_seq) l.waits.emplace_back(b.fence, b.fence_seq);
  l.keep.push_back(st);
}
}  // namespace

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
  for (const Tensor* t : reads) {
    Storage* st = t->storage().get();
    if (st->writer && st->writer != &s && st->writer->completed() < st->writer_seq)
      l->waits.emplace_back(st->writer, st->writer_seq);
    use_storage(*l, s, t->storage());
  }
  for (const Tensor* t : writes) use_storage(*l, s, t->storage());
  uint64_t id = l->id;
  if (rec) prof::on_launch(*l, dev.index(), s.id(), t0);  // before submit: `l` may be recycled after
  uint64_t seq = s.submit(l);
  for (const Tensor* t : reads)
    if (t->storage()->home == &s) t->storage()->used_at(seq);
  for (const Tensor* t : writes) {
    Storage* st = t->storage().get();
    st->writer = &s;
    st->writer_seq = seq;
    if (st->home == &s) st->used_at(seq);
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
