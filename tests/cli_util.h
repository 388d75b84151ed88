// Running the built `opscope` tool from a test, as a user would: the binary beside the
// tests folder of the build (../tools/opscope), its stdout and stderr together.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace opscope::testutil {

inline std::string opscope_binary() {
  char self[PATH_MAX] = {};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  namespace fs = std::filesystem;
  return (fs::path(std::string(self, size_t(n))).parent_path().parent_path() / "tools" / "opscope").string();
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CliResult {
  int status = -1;
  std::string out;  // stdout and stderr together
};

// Runs a shell command line (quote its words with shell_quote); captures its stdout.
inline CliResult run_shell(const std::string& cmd) {
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t got;
  while ((got = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), got);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);  // a crash shows as >= 128
  return r;
}

inline CliResult run_opscope(const std::vector<std::string>& args) {
  std::string cmd = shell_quote(opscope_binary());
  for (const std::string& a : args) cmd += ' ' + shell_quote(a);
  return run_shell(cmd + " 2>&1");
}

// As run_opscope, but `out` is stdout alone (output a test parses, such as --json) and
// stderr goes to `err`: progress the tool prints there, such as the compiler's "[compile]
// ... building" line that only a build slower than a second prints, is not part of it.
inline CliResult run_opscope_stdout(const std::vector<std::string>& args, std::string& err) {
  namespace fs = std::filesystem;
  static int next = 0;
  fs::path err_file = fs::temp_directory_path() /
                      ("opscope_stderr_" + std::to_string(::getpid()) + "_" + std::to_string(next++) + ".txt");
  std::string cmd = shell_quote(opscope_binary());
  for (const std::string& a : args) cmd += ' ' + shell_quote(a);
  CliResult r = run_shell(cmd + " 2>" + shell_quote(err_file.string()));
  FILE* f = std::fopen(err_file.c_str(), "r");
  err.clear();
  if (f) {
    std::array<char, 4096> buf;
    size_t got;
    while ((got = std::fread(buf.data(), 1, buf.size(), f)) > 0) err.append(buf.data(), got);
    std::fclose(f);
  }
  std::error_code ec;
  fs::remove(err_file, ec);
  return r;
}

}  // namespace opscope::testutil
