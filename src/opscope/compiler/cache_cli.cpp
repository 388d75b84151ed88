#include "opscope/compiler/cache_cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "opscope/compiler/cache.h"
#include "opscope/core/error.h"

namespace opscope::compiler {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool is_hash(const std::string& s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(uint8_t(c)); });
}

std::vector<std::string> entries(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& d : fs::directory_iterator(root, ec))
    if (d.is_directory() && is_hash(d.path().filename().string())) out.push_back(d.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

int64_t folder_bytes(const fs::path& p) {
  int64_t n = 0;
  std::error_code ec;
  for (auto& f : fs::recursive_directory_iterator(p, ec))
    if (f.is_regular_file(ec)) n += int64_t(f.file_size(ec));
  return n;
}

std::string human(int64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10 * 1024 * 1024) return fmt::format("{} KiB", b / 1024);
  return fmt::format("{} MiB", b / (1024 * 1024));
}

}  // namespace

std::string cache_ls(const std::string& requested) {
  std::string root = cache_root(requested);
  auto hs = entries(root);
  std::string s = fmt::format("cache {}: {} artifact{}\n", root, hs.size(), hs.size() == 1 ? "" : "s");
  if (hs.empty()) return s;
  s += fmt::format("{:<16}  {:<24}  {:>7}  {:>9}  {:<20}  {}\n", "hash", "function", "kernels", "size", "created", "status");
  for (auto& h : hs) {
    std::string dir = root + "/" + h, text, name = "?", created = "?";
    size_t nk = 0;
    if (read_file(dir + "/manifest.json", text)) {
      try {
        json m = json::parse(text);
        name = m.value("name", "?");
        created = m.value("created", "?");
        nk = m.contains("kernels") ? m["kernels"].size() : 0;
      } catch (...) {
      }
    }
    std::string bad = check_entry(dir);
    s += fmt::format("{:<16}  {:<24}  {:>7}  {:>9}  {:<20}  {}\n", h, name, nk, human(folder_bytes(dir)), created,
                     bad.empty() ? "ok" : "damaged: " + bad);
  }
  return s;
}

std::string cache_show(const std::string& prefix, const std::string& requested) {
  std::string root = cache_root(requested);
  std::vector<std::string> match;
  for (auto& h : entries(root))
    if (h.rfind(prefix, 0) == 0) match.push_back(h);
  if (prefix.empty() || match.empty()) fail("cache", "no artifact {}'{}' in {}", prefix.empty() ? "named " : "starts with ", prefix, root);
  if (match.size() > 1) fail("cache", "'{}' matches {} artifacts in {}; give more digits", prefix, match.size(), root);
  std::string dir = root + "/" + match[0], text;
  std::string s = fmt::format("artifact {}\nfolder   {}\n", match[0], dir);
  std::error_code ec;
  for (auto& f : fs::directory_iterator(dir, ec))
    s += fmt::format("  {:<16} {:>9}\n", f.path().filename().string(), human(int64_t(f.file_size(ec))));
  std::string bad = check_entry(dir);
  s += fmt::format("status   {}\n", bad.empty() ? "ok" : "damaged: " + bad);
  if (read_file(dir + "/manifest.json", text)) {
    try {
      json m = json::parse(text);
      s += fmt::format("function {}\ncreated  {}\n", m.value("name", "?"), m.value("created", "?"));
      if (m.contains("compiler"))
        s += fmt::format("compiler {}\n", fmt::join(m["compiler"].value("command", std::vector<std::string>{}), " "));
      if (m.contains("kernels"))
        for (auto& k : m["kernels"]) s += fmt::format("kernel   {}  ({})\n", k.value("name", "?"), k.value("symbol", "?"));
      if (m.contains("graph")) s += "graph\n" + m["graph"].get<std::string>();
      s += "manifest.json\n" + m.dump(2) + "\n";
    } catch (const std::exception& e) {
      s += fmt::format("manifest.json is not valid JSON ({})\n", e.what());
    }
  }
  return s;
}

std::string cache_clear(const std::string& requested) {
  std::string root = cache_root(requested);
  size_t n = 0;
  std::error_code ec;
  for (auto& d : fs::directory_iterator(root, ec)) {
    std::string f = d.path().filename().string();
    bool ours = is_hash(f) || f.rfind("failed-", 0) == 0 || f.rfind(".tmp-", 0) == 0 || f.rfind(".trash-", 0) == 0 ||
                f == ".locks" || f == ".compilers";
    if (!ours) continue;
    if (is_hash(f)) ++n;
    std::error_code e2;
    fs::remove_all(d.path(), e2);
  }
  return fmt::format("removed {} artifact{} from {}\n", n, n == 1 ? "" : "s", root);
}

}  // namespace opscope::compiler
