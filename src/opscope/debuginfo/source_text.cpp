#include "opscope/debuginfo/source_text.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

namespace opscope::debuginfo {

namespace fs = std::filesystem;

std::string find_source(const std::string& file, const std::string& module_path) {
  if (file.empty()) return "";
  std::error_code ec;
  fs::path p = fs::path(file).lexically_normal();
  if (fs::is_regular_file(p, ec)) return p.string();
  if (module_path.empty()) return "";
  fs::path dir = fs::path(module_path).parent_path();
  // A relative name is relative to the build folder (ccache's base_dir makes them so),
  // where the library lies: "../src/opscope/..." beside build/libopscope.so.
  if (p.is_relative()) {
    fs::path from_build = (dir / p).lexically_normal();
    if (fs::is_regular_file(from_build, ec)) return from_build.string();
  }
  fs::path beside = dir / p.filename();  // a compiled kernel's source, kept beside its library
  if (fs::is_regular_file(beside, ec)) return beside.string();
  return "";
}

std::shared_ptr<const std::vector<std::string>> source_lines(const std::string& path) {
  static std::mutex m;
  static std::map<std::string, std::shared_ptr<const std::vector<std::string>>> cache;
  std::lock_guard<std::mutex> g(m);
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  std::shared_ptr<std::vector<std::string>> lines;
  std::ifstream in(path, std::ios::binary);
  if (in) {
    lines = std::make_shared<std::vector<std::string>>();
    std::string l;
    while (std::getline(in, l)) {
      if (!l.empty() && l.back() == '\r') l.pop_back();
      lines->push_back(std::move(l));
    }
  }
  cache.emplace(path, lines);
  return lines;
}

std::string source_line(const std::string& path, int line) {
  auto lines = source_lines(path);
  if (!lines || line < 1 || size_t(line) > lines->size()) return "";
  return (*lines)[size_t(line) - 1];
}

}  // namespace opscope::debuginfo
