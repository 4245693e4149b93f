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

#include <charconv>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <system_error>

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

// A CLI11 check of an integer option: a whole number of at least `min`. Its message says so in
// plain numbers ("-1 is below 0"; CLI11's NonNegativeNumber prints its bound as a 309-digit
// double), and it refuses what an unsigned option would otherwise wrap ("-3" as 2^64 - 3) and
// what does not fit a long long (rather than clamp it).
inline CLI::Validator AtLeast(long long min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        // from_chars refuses what does not fit a long long (lexical_cast would clamp
        // "99999999999999999999" to the largest one, and a seed would change silently).
        long long v = 0;
        const char* end = value.data() + value.size();
        const auto [stop, error] = std::from_chars(value.data(), end, v);
        if (error != std::errc() || stop != end) {
          return value + " is not a whole number from " + std::to_string(min) + " to " +
                 std::to_string(std::numeric_limits<long long>::max());
        }
        return v < min ? value + " is below " + std::to_string(min) : std::string();
      },
      min == 0 ? "NONNEGATIVE" : min == 1 ? "POSITIVE" : "AT LEAST " + std::to_string(min));
}

}  // namespace huygens::cmd

#define HUYGENS_COMMAND(name, setup) \
  [[maybe_unused]] static const bool huygens_command_registered_ = \
      ::huygens::cmd::RegisterCommand(name, setup)

#endif  // HUYGENS_CMD_COMMAND_H_
