// The `huygens` command: discovery, allocation, checkpoints and simulation from one binary.
// Subcommands register themselves (cmd/command.h); this file only assembles and runs them.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/version.h"
#include "cmd/command.h"

namespace huygens::cmd {

std::map<std::string, CommandSetup>& CommandRegistry() {
  static auto* registry = new std::map<std::string, CommandSetup>();
  return *registry;
}

bool RegisterCommand(const std::string& name, CommandSetup setup) {
  if (!CommandRegistry().emplace(name, std::move(setup)).second) {
    std::fprintf(stderr, "huygens: subcommand %s registered twice\n", name.c_str());
    std::abort();
  }
  return true;
}

}  // namespace huygens::cmd

int main(int argc, char** argv) {
  CLI::App app{
      "huygens: NUMA-aware CPU scheduling and exclusive core binding for Kubernetes.\n"
      "Run `huygens <command> --help` for the options of one command."};
  app.require_subcommand(1);
  const std::string version = huygens::VersionLine("huygens");
  app.set_version_flag("--version", version, "Print the version and exit");
  int exit_code = 0;
  for (auto& [name, setup] : huygens::cmd::CommandRegistry()) setup(app, exit_code);
  // `huygens simulate --version` answers too: an operator asks where they stand.
  for (CLI::App* command : app.get_subcommands({})) {
    command->set_version_flag("--version", version, "Print the version and exit");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // CLI11 answers --help / --version with success; any other parse error is a usage error.
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}
