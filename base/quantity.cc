#include "base/quantity.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "fmt/format.h"

namespace huygens {
namespace {

// "12.5Gi" -> whole "12", fraction "5", suffix "Gi". False when the text does not start with a
// non-negative decimal number (digits, at most one dot, at least one digit).
bool SplitDecimal(std::string_view text, std::string_view& whole, std::string_view& fraction,
                  std::string_view& suffix) {
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  const size_t whole_end =
      static_cast<size_t>(std::find_if_not(text.begin(), text.end(), is_digit) - text.begin());
  whole = text.substr(0, whole_end);
  size_t end = whole_end;
  fraction = {};
  if (end < text.size() && text[end] == '.') {
    const std::string_view after = text.substr(end + 1);
    const size_t n =
        static_cast<size_t>(std::find_if_not(after.begin(), after.end(), is_digit) - after.begin());
    fraction = after.substr(0, n);
    end += 1 + n;
  }
  suffix = text.substr(end);
  return !whole.empty() || !fraction.empty();
}

enum class ScaleResult { kOk, kTooLarge, kNotWhole };

// out = (whole.fraction) * multiplier, exactly. kNotWhole when that is not a whole number,
// kTooLarge when it exceeds `max`. REQUIRES: 0 < multiplier <= 2^60, max <= 2^62.
ScaleResult Scale(std::string_view whole, std::string_view fraction, int64_t multiplier,
                  int64_t max, int64_t& out) {
  // Leading zeros never matter; trailing zeros of the fraction never matter.
  while (!whole.empty() && whole.front() == '0') whole.remove_prefix(1);
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  if (whole.size() > 19) return ScaleResult::kTooLarge;
  __extension__ using Wide = unsigned __int128;
  Wide value = 0;
  for (char c : whole) value = value * 10 + static_cast<Wide>(c - '0');
  value *= static_cast<Wide>(multiplier);
  if (value > static_cast<Wide>(max)) return ScaleResult::kTooLarge;
  // The fraction's contribution: digits * multiplier / 10^len must be a whole number.
  if (fraction.size() > 19) return ScaleResult::kNotWhole;
  Wide digits = 0, ten_pow = 1;
  for (char c : fraction) {
    digits = digits * 10 + static_cast<Wide>(c - '0');
    ten_pow *= 10;
  }
  const Wide scaled = digits * static_cast<Wide>(multiplier);
  if (scaled % ten_pow != 0) return ScaleResult::kNotWhole;
  value += scaled / ten_pow;
  if (value > static_cast<Wide>(max)) return ScaleResult::kTooLarge;
  out = static_cast<int64_t>(value);
  return ScaleResult::kOk;
}

}  // namespace

absl::StatusOr<int64_t> ParseCpuMilli(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        fmt::format("{:?} is not a CPU quantity: {} (write CPUs such as \"4\" or \"2.5\", or "
                    "millicores such as \"500m\")",
                    std::string(text), why));
  };
  std::string_view whole, fraction, suffix;
  if (!SplitDecimal(text, whole, fraction, suffix)) return bad("not a non-negative decimal number");
  int64_t multiplier = 1000;
  if (suffix == "m") {
    multiplier = 1;
  } else if (!suffix.empty()) {
    return bad(fmt::format("unknown suffix {:?}", std::string(suffix)));
  }
  int64_t out = 0;
  switch (Scale(whole, fraction, multiplier, int64_t{1} << 53, out)) {
    case ScaleResult::kOk: return out;
    case ScaleResult::kTooLarge: return bad("too large");
    case ScaleResult::kNotWhole: return bad("finer than one millicore");
  }
  return bad("unreachable");
}

absl::StatusOr<int64_t> ParseMemoryBytes(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        fmt::format("{:?} is not a memory quantity: {} (write bytes, or a suffix Ki, Mi, Gi, "
                    "Ti, Pi, Ei, k, M, G, T, P, E, e.g. \"16Gi\")",
                    std::string(text), why));
  };
  std::string_view whole, fraction, suffix;
  if (!SplitDecimal(text, whole, fraction, suffix)) return bad("not a non-negative decimal number");
  static constexpr std::array<std::pair<std::string_view, int64_t>, 13> kSuffixes = {{
      {"", 1},
      {"Ki", int64_t{1} << 10},
      {"Mi", int64_t{1} << 20},
      {"Gi", int64_t{1} << 30},
      {"Ti", int64_t{1} << 40},
      {"Pi", int64_t{1} << 50},
      {"Ei", int64_t{1} << 60},
      {"k", 1'000},
      {"M", 1'000'000},
      {"G", 1'000'000'000},
      {"T", 1'000'000'000'000},
      {"P", 1'000'000'000'000'000},
      {"E", 1'000'000'000'000'000'000},
  }};
  const auto it = std::find_if(kSuffixes.begin(), kSuffixes.end(),
                               [&](const auto& s) { return s.first == suffix; });
  if (it == kSuffixes.end()) return bad(fmt::format("unknown suffix {:?}", std::string(suffix)));
  int64_t out = 0;
  switch (Scale(whole, fraction, it->second, int64_t{1} << 62, out)) {
    case ScaleResult::kOk: return out;
    case ScaleResult::kTooLarge: return bad("too large");
    case ScaleResult::kNotWhole: return bad("not a whole number of bytes");
  }
  return bad("unreachable");
}

}  // namespace huygens
