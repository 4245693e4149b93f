// Child processes for the tests that run Huygens' binaries and the testbed's real components
// (huygens-scheduler, huygens-agent, kube-scheduler): start one with its output in a log file,
// stop it with SIGTERM (SIGKILL to its process group after a grace period) or kill it with
// SIGKILL; a free loopback port for its listeners; polling until a condition holds.
//
// Test-only (library huygens_kube_fake). Thread-safety: a Process belongs to one thread.
#ifndef HUYGENS_KUBE_TESTING_PROCESS_H_
#define HUYGENS_KUBE_TESTING_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace huygens::kube::testing {

class Process {
 public:
  // Starts argv[0] (a path, not searched in PATH) with `argv`, in a process group of its own,
  // with stdout and stderr written to `log` (truncated first unless `append`) and `env` added to
  // the environment. A program that cannot be executed exits with status 127.
  Process(std::vector<std::string> argv, std::string log, const std::map<std::string, std::string>& env = {},
          bool append = false);
  // Stop().
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // SIGTERM, then waits up to `grace`; SIGKILL to its process group after that. Returns the
  // exit status when it exited on its own (0-255), -1 when it was killed by a signal, had to
  // be killed, or is not running.
  int Stop(std::chrono::seconds grace = std::chrono::seconds(10));
  // SIGKILL to its process group now, and reaps it (a crash, as the restart tests need).
  void Kill();
  // Waits for it to exit on its own: its exit status, or -1 when a signal ended it.
  int Wait();
  // Whether it has been started and not yet reaped.
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& log() const { return log_; }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

// A whole file as text (a process's log); "" when it cannot be read.
std::string Slurp(const std::string& path);

// A loopback TCP port nobody listens on right now (bound and released; the caller binds it
// again at once, so two callers rarely race).
int FreePort();

// Calls `done` every `poll` until it returns true or `limit` has passed; the last call's
// answer then.
template <typename F>
bool WaitFor(F done, std::chrono::milliseconds limit = std::chrono::seconds(40),
             std::chrono::milliseconds poll = std::chrono::milliseconds(50)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(poll);
  }
  return done();
}

}  // namespace huygens::kube::testing

#endif  // HUYGENS_KUBE_TESTING_PROCESS_H_
