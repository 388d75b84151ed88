#include "opscope/runtime/stream.h"

#include <immintrin.h>

#include "opscope/core/clock.h"
#include "opscope/core/error.h"
#include "opscope/core/futex.h"
#include "opscope/profiler/hooks.h"
#include "opscope/runtime/device.h"

namespace opscope {

uint64_t Stream::submit(std::unique_ptr<Launch> l) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> g(m_);
    seq = submitted_.load(std::memory_order_relaxed) + 1;
    l->seq = seq;
    q_.push_back(std::move(l));
    submitted_.store(seq, std::memory_order_release);
  }
  device_.notify_work();
  return seq;
}

Launch* Stream::ready_head() {
  std::lock_guard<std::mutex> g(m_);
  if (q_.empty()) return nullptr;
  Launch* l = q_.front().get();
  for (auto& [s, seq] : l->waits)
    if (s->completed() < seq) return nullptr;
  return l;
}

void Stream::retire_head() {
  std::unique_ptr<Launch> done;
  {
    std::lock_guard<std::mutex> g(m_);
    done = std::move(q_.front());
    q_.pop_front();
  }
  uint64_t seq = done->seq;
  done.reset();  // drop keep-alive references before waking waiters
  completed_.store(seq, std::memory_order_seq_cst);  // seq_cst: ordered before the waiters_ load (Dekker)
  retire_epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_seq_cst) > 0) futex_wake_all(retire_epoch_);
}

void Stream::wait_for(uint64_t seq) {
  // Poll briefly (short kernels finish within microseconds), then sleep.
  for (int i = 0; i < 2000 && completed_.load(std::memory_order_acquire) < seq; ++i) _mm_pause();
  while (completed_.load(std::memory_order_acquire) < seq) {
    uint32_t epoch = retire_epoch_.load(std::memory_order_seq_cst);
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    if (completed_.load(std::memory_order_seq_cst) < seq) futex_wait(retire_epoch_, epoch);
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Stream::set_error(std::string msg) {
  std::lock_guard<std::mutex> g(m_);
  if (!failed_.load()) {
    error_ = std::move(msg);
    failed_.store(true, std::memory_order_release);
  }
}

void Stream::check_error() {
  if (!failed_.load(std::memory_order_acquire)) return;
  std::string msg;
  {
    std::lock_guard<std::mutex> g(m_);
    msg = std::move(error_);
    error_.clear();
    failed_.store(false, std::memory_order_release);
  }
  throw Error(msg);
}

void Stream::synchronize() {
  int64_t t0 = now_ns();
  wait_for(submitted());
  if (prof::layers() & prof::kRuntime) prof::on_sync(prof::SyncKind::stream, device_.index(), id_, t0, now_ns());
  check_error();
}

Event Stream::record() {
  auto l = std::make_unique<Launch>();
  l->kind = Launch::Kind::marker;
  l->name = "event";
  auto st = std::make_shared<EventState>();
  l->event = st;
  uint64_t seq = submit(std::move(l));
  return Event(this, seq, std::move(st));
}

void Stream::wait(const Event& e) {
  if (!e.stream()) fail("stream_wait", "the event was never recorded");
  auto l = std::make_unique<Launch>();
  l->kind = Launch::Kind::marker;
  l->name = "wait_event";
  l->waits.emplace_back(e.stream(), e.seq());
  submit(std::move(l));
}

bool Event::query() const { return stream_ && stream_->completed() >= seq_; }

void Event::synchronize() const {
  if (!stream_) fail("event", "synchronize on an event that was never recorded");
  int64_t t0 = now_ns();
  stream_->wait_for(seq_);
  if (prof::layers() & prof::kRuntime)
    prof::on_sync(prof::SyncKind::event, stream_->device().index(), stream_->id(), t0, now_ns());
}

double Event::elapsed_ms(const Event& later) const {
  if (!state_ || !later.state_) fail("event", "elapsed_ms needs two recorded events");
  later.synchronize();
  synchronize();
  return double(later.state_->time_ns.load() - state_->time_ns.load()) / 1e6;
}

// ---- current stream ----
namespace {
thread_local Stream* t_current[Device::kMaxDevices] = {};
}

Stream& current_stream(Device& dev) {
  Stream* s = t_current[dev.index()];
  return s ? *s : dev.default_stream();
}

StreamGuard::StreamGuard(Stream& s) : prev_(t_current[s.device().index()]), device_(s.device().index()) {
  t_current[device_] = &s;
}
StreamGuard::~StreamGuard() { t_current[device_] = prev_; }

}  // namespace opscope
