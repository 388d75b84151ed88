// Interned strings of a profile: kernel names, user range names, input-shape strings.
// A record stores a 32-bit index; each thread keeps its own cache in front of the
// process-wide table, so the table's lock is taken once per distinct string per thread.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace opscope::prof::detail {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIndex = std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>;

// Process-wide; index 0 is "". Lives until exit (never destroyed, so hooks running in
// other objects' destructors at exit can still use it).
class NameTable {
 public:
  static NameTable& get();
  uint32_t intern(std::string_view s);
  // Copies the strings of `indices` (under one lock) into out[index] slots.
  void resolve(const std::vector<uint32_t>& indices, std::unordered_map<uint32_t, std::string>& out) const;

 private:
  NameTable() { names_.emplace_back(); index_.emplace("", 0); }
  mutable std::mutex m_;
  std::vector<std::string> names_;
  StringIndex index_;
};

// A thread's cache in front of NameTable.
class NameCache {
 public:
  uint32_t intern(std::string_view s) {
    auto it = cache_.find(s);
    if (it != cache_.end()) return it->second;
    uint32_t i = NameTable::get().intern(s);
    cache_.emplace(std::string(s), i);
    return i;
  }

 private:
  StringIndex cache_;
};

}  // namespace opscope::prof::detail
