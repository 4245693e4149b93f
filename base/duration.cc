#include "base/duration.h"

#include <cmath>
#include <string>
#include <utility>

#include "fmt/format.h"

namespace huygens {
namespace {

// Splits "12.5Gi" into the number 12.5 and the suffix "Gi". Returns false when the text does
// not start with a non-negative decimal number.
bool SplitNumber(std::string_view text, long double& number, std::string_view& suffix) {
  size_t i = 0;
  bool digits = false, dot = false;
  while (i < text.size()) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!digits) return false;
  number = std::stold(std::string(text.substr(0, i)));
  suffix = text.substr(i);
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

absl::StatusOr<int64_t> ParseDuration(std::string_view text) {
  text = Trim(text);
  long double number = 0;
  std::string_view suffix;
  const auto bad = [&] {
    return absl::InvalidArgumentError(fmt::format(
        "{:?} is not a duration (use seconds, or a suffix ms, s, m, h, d, e.g. \"90s\", "
        "\"10m\")",
        std::string(text)));
  };
  if (!SplitNumber(text, number, suffix)) return bad();
  static constexpr std::pair<std::string_view, long double> kSuffixes[] = {
      {"", 1e6L}, {"s", 1e6L}, {"ms", 1e3L}, {"m", 60e6L}, {"h", 3600e6L}, {"d", 86400e6L}};
  for (const auto& [name, factor] : kSuffixes) {
    if (suffix != name) continue;
    const long double micros = std::round(number * factor);
    if (micros > 9.2e18L) return bad();
    return static_cast<int64_t>(micros);
  }
  return bad();
}

}  // namespace huygens
