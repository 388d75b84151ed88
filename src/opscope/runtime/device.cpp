#include "opscope/runtime/device.h"

#include <fmt/format.h>

#include <mutex>
#include <utility>

#include "opscope/core/error.h"

namespace opscope {

namespace {
std::array<std::atomic<Device*>, Device::kMaxDevices> g_devices{};
Device* const kReserved = reinterpret_cast<Device*>(1);

// The name's number of each live slot by type: a CPU device is "cpu:N" by the CPU
// devices alive, not by its slot, so the process's CPU device is cpu:0 even when a
// CUDA device took slot 0 first.
std::mutex g_ordinals_m;
std::array<std::pair<DeviceType, int>, Device::kMaxDevices> g_ordinals{};
std::array<bool, Device::kMaxDevices> g_ordinal_live{};

// The lowest number no live device of type `t` has.
int claim_ordinal(DeviceType t, int index, int wanted) {
  std::lock_guard<std::mutex> g(g_ordinals_m);
  int o = wanted;
  for (int cand = 0; o < 0; ++cand) {
    bool taken = false;
    for (int i = 0; i < Device::kMaxDevices && !taken; ++i)
      taken = g_ordinal_live[size_t(i)] && g_ordinals[size_t(i)] == std::make_pair(t, cand);
    if (!taken) o = cand;
  }
  g_ordinals[size_t(index)] = {t, o};
  g_ordinal_live[size_t(index)] = true;
  return o;
}

void release_ordinal(int index) {
  std::lock_guard<std::mutex> g(g_ordinals_m);
  g_ordinal_live[size_t(index)] = false;
}

// The lowest free slot; indexes of destroyed devices are reused.
int claim_index() {
  for (int i = 0; i < Device::kMaxDevices; ++i) {
    Device* expected = nullptr;
    if (g_devices[i].compare_exchange_strong(expected, kReserved)) return i;
  }
  fail("device", "more than {} devices alive in this process", Device::kMaxDevices);
}
}  // namespace

Device::Device(DeviceType t) : Device(t, -1, nullptr) {}

Device::Device(DeviceType t, int ordinal, const AllocatorBackend* backend)
    : type_(t), index_(claim_index()), ordinal_(claim_ordinal(t, index_, ordinal)), allocator_(index_, backend) {
  g_devices[index_].store(this);
  streams_[0] = std::make_unique<Stream>(*this, 0);
  num_streams_.store(1, std::memory_order_release);
}

Device::~Device() {
  release_ordinal(index_);
  g_devices[index_].store(nullptr);
}

Device* Device::by_index(int index) {
  if (index < 0 || index >= kMaxDevices) return nullptr;
  Device* d = g_devices[index].load();
  return d == kReserved ? nullptr : d;
}

std::string Device::name() const { return fmt::format("{}:{}", type_ == DeviceType::cpu ? "cpu" : "cuda", ordinal_); }

Stream& Device::create_stream(StreamEngine* engine) {
  std::lock_guard<std::mutex> g(streams_m_);
  int n = num_streams_.load();
  if (n == kMaxStreams) fail("create_stream", "device {} already has {} streams", name(), kMaxStreams);
  streams_[n] = std::make_unique<Stream>(*this, n, engine);
  num_streams_.store(n + 1, std::memory_order_release);
  return *streams_[n];
}

void Device::synchronize() {
  int n = num_streams();
  for (int i = 0; i < n; ++i) streams_[i]->wait_for(streams_[i]->submitted());
  for (int i = 0; i < n; ++i) streams_[i]->check_error();
}

}  // namespace opscope
