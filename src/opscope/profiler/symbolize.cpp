#include "opscope/profiler/symbolize.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <fmt/format.h>
#include <map>

namespace opscope::prof::detail {

namespace {

std::string demangle(const char* s) {
  int status = 0;
  char* d = abi::__cxa_demangle(s, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : s;
  std::free(d);
  return out;
}

// Shared objects and PIE executables are addressed relative to their load base.
bool relative_addresses(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  Elf64_Ehdr h{};
  if (!f.read(reinterpret_cast<char*>(&h), sizeof(h))) return true;
  return h.e_type == ET_DYN;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Query {
  size_t index;
  uintptr_t offset;
};

// addr2line prints two lines per address: the function, then "file:line".
void run_addr2line(const std::string& module, const std::vector<Query>& qs, std::vector<std::string>& fn,
                   std::vector<std::string>& loc) {
  constexpr size_t kBatch = 256;
  for (size_t b = 0; b < qs.size(); b += kBatch) {
    std::string cmd = "addr2line -C -f -e " + shell_quote(module);
    size_t e = std::min(qs.size(), b + kBatch);
    for (size_t i = b; i < e; ++i) cmd += fmt::format(" {:#x}", qs[i].offset);
    cmd += " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return;
    char buf[4096];
    for (size_t i = b; i < e; ++i) {
      std::string lines[2];
      for (auto& line : lines) {
        if (!fgets(buf, sizeof(buf), p)) break;
        line = buf;
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      }
      if (lines[0] != "??") fn[qs[i].index] = lines[0];
      std::string& l = lines[1];
      if (size_t d = l.find(" (discriminator"); d != std::string::npos) l.resize(d);
      if (!l.empty() && l.rfind("??", 0) != 0 && l.substr(l.size() - 2) != ":0" && l.substr(l.size() - 2) != ":?")
        loc[qs[i].index] = l;
    }
    pclose(p);
  }
}

}  // namespace

std::vector<std::string> symbolize(const std::vector<uintptr_t>& addrs) {
  size_t n = addrs.size();
  std::vector<std::string> module(n), fn(n), loc(n), out(n);
  std::vector<uintptr_t> offset(n);
  std::map<std::string, std::vector<Query>> by_module;
  std::map<std::string, bool> relative;
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  std::string self = len > 0 ? std::string(exe, size_t(len)) : "";
  for (size_t i = 0; i < n; ++i) {
    // A return address points after the call; the call itself is one byte before.
    uintptr_t a = addrs[i] ? addrs[i] - 1 : 0;
    Dl_info info{};
    if (!a || !dladdr(reinterpret_cast<void*>(a), &info) || !info.dli_fname) continue;
    module[i] = info.dli_fname[0] ? info.dli_fname : self;
    auto [it, fresh] = relative.try_emplace(module[i], false);
    if (fresh) it->second = relative_addresses(module[i]);
    offset[i] = it->second ? a - uintptr_t(info.dli_fbase) : a;
    if (info.dli_sname) fn[i] = demangle(info.dli_sname);
    by_module[module[i]].push_back({i, offset[i]});
  }
  if (!std::getenv("OPSCOPE_PROFILE_NO_ADDR2LINE"))
    for (auto& [m, qs] : by_module) run_addr2line(m, qs, fn, loc);
  for (size_t i = 0; i < n; ++i) {
    std::string where = !loc[i].empty()       ? loc[i]
                        : !module[i].empty()  ? fmt::format("{}+{:#x}", module[i], offset[i])
                                              : fmt::format("{:#x}", addrs[i]);
    out[i] = fn[i].empty() ? where : fmt::format("{} ({})", where, fn[i]);
  }
  return out;
}

}  // namespace opscope::prof::detail
