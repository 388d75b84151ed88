// A benchmark phase run in a child process, so its peak resident memory (ru_maxrss of
// the child) and CPU time are its own.
#pragma once
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace opscope::bench {

struct Phase {
  double wall_s = 0;
  double cpu_s = 0;  // user + system: what the phase cost whatever else runs on the machine
  double max_rss_mb = 0;
};

// Runs `f` in a child; its wall time and peak resident memory.
template <class F>
inline Phase in_child(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    try {
      f();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench: %s\n", e.what());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  rusage u{};
  wait4(pid, &status, 0, &u);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench: a phase failed\n");
    std::exit(1);
  }
  double cpu = double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), cpu, double(u.ru_maxrss) / 1024.0};
}

}  // namespace opscope::bench
