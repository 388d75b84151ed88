#include "child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

extern char** environ;

namespace opscope::testutil {

namespace {

std::map<std::string, ChildEntry>& entries() {
  static std::map<std::string, ChildEntry> m;
  return m;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The environment with `changes` applied ("K=V" sets, "K" removes), and the child entry
// to run named (none: the child runs tests).
std::vector<std::string> child_environment(const std::string& name, const std::vector<std::string>& changes) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const std::string& c : changes) {
    size_t eq = c.find('=');
    if (eq == std::string::npos) env.erase(c);
    else env[c.substr(0, eq)] = c.substr(eq + 1);
  }
  if (name.empty()) env.erase("OPSCOPE_TEST_CHILD");
  else env["OPSCOPE_TEST_CHILD"] = name;
  std::vector<std::string> out;
  for (auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

bool register_child_entry(const char* name, ChildEntry fn) {
  if (!entries().emplace(name, fn).second) std::abort();  // two entries of one name: a test bug
  return true;
}

ChildEntry child_entry_from_env() {
  const char* name = std::getenv("OPSCOPE_TEST_CHILD");
  if (!name) return nullptr;
  auto it = entries().find(name);
  if (it == entries().end()) throw std::runtime_error(std::string("no child entry named '") + name + "'");
  return it->second;
}

Child::Child(const std::string& name, const std::vector<std::string>& env) : Child(name, "", env) {}

Child Child::this_test(const std::vector<std::string>& env) {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter = t ? std::string(t->test_suite_name()) + "." + t->name() : "(no test is running)";
  std::vector<std::string> with = env;
  with.push_back("OPSCOPE_TEST_SKIP_EXIT=77");  // a skip in the child is not a pass of the parent
  return Child("", filter, with);
}

Child::Child(Child&& o) noexcept
    : name_(std::move(o.name_)), log_path_(std::move(o.log_path_)), pid_(o.pid_), spawn_error_(o.spawn_error_) {
  o.pid_ = -1;
}

Child::Child(const std::string& name, const std::string& gtest_filter, const std::vector<std::string>& env)
    : name_(name.empty() ? gtest_filter : name) {
  static std::atomic<int> next{0};
  log_path_ = ::testing::TempDir() + "opscope_child_" + std::to_string(::getpid()) + "_" +
              std::to_string(next.fetch_add(1)) + ".log";
  std::vector<std::string> envs = child_environment(name, env);
  std::vector<char*> envp;
  for (std::string& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=" + gtest_filter;
  char* argv[] = {exe.data(), gtest_filter.empty() ? nullptr : filter.data(), nullptr};

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  spawn_error_ = ::posix_spawn(&pid_, exe.c_str(), &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (spawn_error_) pid_ = -1;
}

Child::~Child() {
  if (pid_ > 0) wait();
}

ChildResult Child::wait() {
  ChildResult r;
  if (pid_ <= 0) {
    r.log = spawn_error_ ? "cannot start the child '" + name_ + "': " + std::strerror(spawn_error_)
                         : "the child '" + name_ + "' was already waited for";
    return r;
  }
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.log = read_all(log_path_);
  std::error_code ec;
  std::filesystem::remove(log_path_, ec);
  return r;
}

ChildResult run_child(const std::string& name, const std::vector<std::string>& env) {
  return Child(name, env).wait();
}

ChildResult rerun_this_test(const std::vector<std::string>& env) { return Child::this_test(env).wait(); }

}  // namespace opscope::testutil
