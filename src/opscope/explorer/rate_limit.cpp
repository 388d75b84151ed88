#include "opscope/explorer/rate_limit.h"

#include <algorithm>

namespace opscope::explorer {

bool RateLimiter::allow(const std::string& client) {
  if (rate_ <= 0) return true;  // disabled
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  if (buckets_.size() > 10000) {
    // Forget clients whose bucket has refilled: they would start full anyway.
    std::erase_if(buckets_, [&](const auto& kv) {
      return std::chrono::duration<double>(now - kv.second.last).count() * rate_ >= burst_;
    });
  }
  auto [it, fresh] = buckets_.try_emplace(client, Bucket{burst_, now});
  Bucket& b = it->second;
  b.tokens = std::min(burst_, b.tokens + std::chrono::duration<double>(now - b.last).count() * rate_);
  b.last = now;
  if (b.tokens < 1.0) return false;
  b.tokens -= 1.0;
  return true;
}

}  // namespace opscope::explorer
