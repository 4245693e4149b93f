#include "base/label_selector.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <utility>

#include "base/enum_names.h"

namespace huygens {
namespace {

constexpr std::array<std::pair<const char*, SelectorOperator>, 6> kOperatorNames = {{
    {"In", SelectorOperator::kIn},
    {"NotIn", SelectorOperator::kNotIn},
    {"Exists", SelectorOperator::kExists},
    {"DoesNotExist", SelectorOperator::kDoesNotExist},
    {"Gt", SelectorOperator::kGt},
    {"Lt", SelectorOperator::kLt},
}};

std::optional<int64_t> ParseInt64(const std::string& s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end || s.empty()) return std::nullopt;
  return v;
}

bool Contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

}  // namespace

const char* ToString(SelectorOperator op) { return NameOf(kOperatorNames, op); }

std::optional<SelectorOperator> ParseSelectorOperator(std::string_view name) {
  return ParseName(kOperatorNames, name);
}

bool LabelRequirement::Matches(const Labels& labels) const {
  auto it = labels.find(key);
  const bool has = it != labels.end();
  switch (op) {
    case SelectorOperator::kIn:
      return !values.empty() && has && Contains(values, it->second);
    case SelectorOperator::kNotIn:
      return !values.empty() && (!has || !Contains(values, it->second));
    case SelectorOperator::kExists: return values.empty() && has;
    case SelectorOperator::kDoesNotExist: return values.empty() && !has;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt: {
      if (values.size() != 1 || !has) return false;
      const std::optional<int64_t> want = ParseInt64(values[0]);
      const std::optional<int64_t> got = ParseInt64(it->second);
      if (!want || !got) return false;
      return op == SelectorOperator::kGt ? *got > *want : *got < *want;
    }
  }
  return false;
}

bool HasLabels(const Labels& labels, const Labels& required) {
  for (const auto& [key, value] : required) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

bool LabelSelector::Matches(const Labels& labels) const {
  return HasLabels(labels, match_labels) &&
         std::all_of(match_expressions.begin(), match_expressions.end(),
                     [&labels](const LabelRequirement& r) { return r.Matches(labels); });
}

}  // namespace huygens
