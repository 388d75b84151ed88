// A token bucket per client address: `per_second` requests sustained, `burst` at once.
// The explorer serves one local user; this only stops a runaway script or page.
#pragma once
#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace opscope::explorer {

class RateLimiter {
 public:
  RateLimiter(double per_second, double burst) : rate_(per_second), burst_(burst) {}
  bool allow(const std::string& client);

 private:
  using Clock = std::chrono::steady_clock;
  struct Bucket { double tokens; Clock::time_point last; };
  double rate_, burst_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace opscope::explorer
