// Test helper for the CLI tests in cmd/: runs the built `huygens` binary (HUYGENS_BIN) through
// the shell and captures its exit status and output. Header-only; used only by *_test.cc.
#ifndef HUYGENS_CMD_RUN_HUYGENS_H_
#define HUYGENS_CMD_RUN_HUYGENS_H_

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace huygens::cmd::testing {

struct RunResult {
  int exit_code = -1;  // -1 when the process did not exit normally
  std::string out;     // stdout, or stdout+stderr with merge_stderr
};

// Runs `huygens <args>`; args are passed to /bin/sh as they are (quote them yourself).
inline RunResult RunHuygens(const std::string& args, bool merge_stderr = false) {
  const std::string command =
      std::string(HUYGENS_BIN) + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  RunResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer;
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace huygens::cmd::testing

#endif  // HUYGENS_CMD_RUN_HUYGENS_H_
