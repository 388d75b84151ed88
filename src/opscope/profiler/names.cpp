#include "opscope/profiler/names.h"

namespace opscope::prof::detail {

NameTable& NameTable::get() {
  static NameTable* t = new NameTable;  // leaked on purpose: see names.h
  return *t;
}

uint32_t NameTable::intern(std::string_view s) {
  std::lock_guard<std::mutex> g(m_);
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  uint32_t i = uint32_t(names_.size());
  names_.emplace_back(s);
  index_.emplace(std::string(s), i);
  return i;
}

void NameTable::resolve(const std::vector<uint32_t>& indices, std::unordered_map<uint32_t, std::string>& out) const {
  std::lock_guard<std::mutex> g(m_);
  for (uint32_t i : indices)
    if (i < names_.size()) out.emplace(i, names_[i]);
}

}  // namespace opscope::prof::detail
