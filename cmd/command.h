// Registration of the `huygens` CLI's subcommands.
//
// Each subcommand lives in its own file in cmd/ and registers itself at static-initialisation
// time with a HUYGENS_COMMAND(name, setup) line; main.cc builds the CLI11 application from the
// registry, in name order. A subcommand's callback sets the process exit status through the
// `exit_code` it is given: 0 success, 1 "ran but found problems" (as the command documents),
// 2 bad input or usage.
//
// Thread-safety: registration happens before main(); nothing here is used concurrently.
#ifndef HUYGENS_CMD_COMMAND_H_
#define HUYGENS_CMD_COMMAND_H_

#include <functional>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

namespace huygens::cmd {

// Adds one subcommand to `app` (app.add_subcommand(...)) and arranges for its callback to
// store the exit status in `exit_code`.
using CommandSetup = std::function<void(CLI::App& app, int& exit_code)>;

// The registry: name -> setup. Names are unique; a second registration of one name aborts at
// start-up (a programming error).
std::map<std::string, CommandSetup>& CommandRegistry();

// Registers `setup` under `name`; returns true (so it can initialise a static).
bool RegisterCommand(const std::string& name, CommandSetup setup);

}  // namespace huygens::cmd

#define HUYGENS_COMMAND(name, setup) \
  [[maybe_unused]] static const bool huygens_command_registered_ = \
      ::huygens::cmd::RegisterCommand(name, setup)

#endif  // HUYGENS_CMD_COMMAND_H_
