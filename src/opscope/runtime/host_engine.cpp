#include "opscope/runtime/host_engine.h"

#include <fmt/format.h>

#include "opscope/core/clock.h"
#include "opscope/profiler/hooks.h"
#include "opscope/runtime/runtime.h"

namespace opscope {

namespace {
thread_local std::string* t_detail = nullptr;  // the running body's device-event detail
}

HostEngine::HostEngine(Device& dev) : stream_(dev.create_stream(this)) {
  thread_ = std::thread([this] { run(); });
}

HostEngine::~HostEngine() {
  stream_.wait_for(stream_.submitted());
  {
    std::lock_guard<std::mutex> g(m_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
  stream_.detach_engine();
}

uint64_t HostEngine::launch(LaunchSpec spec, std::span<const Tensor* const> reads,
                            std::span<const Tensor* const> writes) {
  StreamGuard on(stream_);
  return runtime::launch(stream_.device(), std::move(spec), reads, writes);
}

void HostEngine::describe(std::string detail) {
  if (t_detail) *t_detail = std::move(detail);
}

void HostEngine::notify() {
  {
    std::lock_guard<std::mutex> g(m_);
    ++signal_;
  }
  cv_.notify_one();
}

void HostEngine::run() {
  while (true) {
    uint64_t seen;
    {
      std::lock_guard<std::mutex> g(m_);
      seen = signal_;
    }
    Launch* l = stream_.head();
    if (!l) {
      std::unique_lock<std::mutex> g(m_);
      cv_.wait(g, [&] { return signal_ != seen || stop_; });
      if (stop_ && !stream_.head()) return;
      continue;
    }
    // Its waits: block on each stream until it got there (no polling; kernels on the
    // cores may take long).
    for (auto& [s, seq] : l->waits) s->wait_for(seq);
    execute(*l);
    stream_.retire_head();
    stream_.device().notify_progress();
  }
}

void HostEngine::execute(Launch& l) {
  if (l.kind == Launch::Kind::marker) {
    if (l.event) l.event->time_ns.store(now_ns(), std::memory_order_release);
    return;
  }
  if (stream_.failed() || !l.body) return;  // skipped: an earlier launch on this stream failed
  std::string detail;
  t_detail = &detail;
  int64_t t0 = now_ns();
  try {
    l.body(0, l.work);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (msg.empty() || msg[0] != '[') msg = fmt::format("[{}] kernel {} failed: {}", l.op, l.name, msg);
    stream_.set_error(std::move(msg));
  } catch (...) {
    stream_.set_error(fmt::format("[{}] kernel {} failed: unknown exception", l.op, l.name));
  }
  int64_t t1 = now_ns();
  t_detail = nullptr;
  prof::on_engine_kernel(l, stream_.device().index(), stream_.id(), t0, t1, detail);
}

}  // namespace opscope
