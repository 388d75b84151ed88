#include "opscope/runtime/device.h"

#include <fmt/format.h>

#include "opscope/core/error.h"

namespace opscope {

namespace {
std::array<std::atomic<Device*>, Device::kMaxDevices> g_devices{};
Device* const kReserved = reinterpret_cast<Device*>(1);

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
    : type_(t), index_(claim_index()), ordinal_(ordinal >= 0 ? ordinal : index_), allocator_(index_, backend) {
  g_devices[index_].store(this);
  streams_[0] = std::make_unique<Stream>(*this, 0);
  num_streams_.store(1, std::memory_order_release);
}

Device::~Device() { g_devices[index_].store(nullptr); }

Device* Device::by_index(int index) {
  if (index < 0 || index >= kMaxDevices) return nullptr;
  Device* d = g_devices[index].load();
  return d == kReserved ? nullptr : d;
}

std::string Device::name() const { return fmt::format("{}:{}", type_ == DeviceType::cpu ? "cpu" : "cuda", ordinal_); }

Stream& Device::create_stream() {
  std::lock_guard<std::mutex> g(streams_m_);
  int n = num_streams_.load();
  if (n == kMaxStreams) fail("create_stream", "device {} already has {} streams", name(), kMaxStreams);
  streams_[n] = std::make_unique<Stream>(*this, n);
  num_streams_.store(n + 1, std::memory_order_release);
  return *streams_[n];
}

void Device::synchronize() {
  int n = num_streams();
  for (int i = 0; i < n; ++i) streams_[i]->wait_for(streams_[i]->submitted());
  for (int i = 0; i < n; ++i) streams_[i]->check_error();
}

}  // namespace opscope
