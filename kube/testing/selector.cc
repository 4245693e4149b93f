#include "kube/testing/selector.h"

#include <algorithm>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fmt/format.h"

namespace huygens::kube::testing {
namespace {

std::string Trim(std::string_view s) {
  absl::string_view a(s.data(), s.size());
  a = absl::StripAsciiWhitespace(a);
  return std::string(a.data(), a.size());
}

// Splits on commas that are not inside parentheses (`a in (x,y),b`).
std::vector<std::string> SplitTop(std::string_view text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(Trim(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!Trim(current).empty() || !out.empty()) out.push_back(Trim(current));
  return out;
}

// The string value a field path names in the object; "" when absent.
std::string FieldValue(const nlohmann::json& object, const std::string& path) {
  const nlohmann::json* node = &object;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    if (!node->is_object()) return "";
    auto it = node->find(std::string(part.data(), part.size()));
    if (it == node->end()) return "";
    node = &*it;
  }
  if (node->is_string()) return node->get<std::string>();
  if (node->is_null()) return "";
  return node->dump();
}

}  // namespace

absl::StatusOr<Selector> Selector::ParseLabels(std::string_view text) {
  Selector s;
  for (const std::string& req : SplitTop(text)) {
    if (req.empty()) return absl::InvalidArgumentError(fmt::format("labelSelector {:?}: empty requirement", text));
    LabelRequirement r;
    std::size_t paren = req.find('(');
    if (paren != std::string::npos) {
      if (req.back() != ')') {
        return absl::InvalidArgumentError(fmt::format("labelSelector requirement {:?}: missing ')'", req));
      }
      std::string head = Trim(std::string_view(req).substr(0, paren));
      std::size_t space = head.rfind(' ');
      if (space == std::string::npos) {
        return absl::InvalidArgumentError(fmt::format("labelSelector requirement {:?}: expected 'key in (...)'", req));
      }
      std::string op = Trim(std::string_view(head).substr(space + 1));
      r.key = Trim(std::string_view(head).substr(0, space));
      if (op == "in") {
        r.op = SelectorOperator::kIn;
      } else if (op == "notin") {
        r.op = SelectorOperator::kNotIn;
      } else {
        return absl::InvalidArgumentError(fmt::format("labelSelector requirement {:?}: unknown operator {:?}", req, op));
      }
      std::string inner = req.substr(paren + 1, req.size() - paren - 2);
      for (absl::string_view v : absl::StrSplit(inner, ',')) r.values.push_back(Trim(std::string_view(v.data(), v.size())));
    } else if (std::size_t ne = req.find("!="); ne != std::string::npos) {
      r.key = Trim(std::string_view(req).substr(0, ne));
      r.op = SelectorOperator::kNotIn;
      r.values = {Trim(std::string_view(req).substr(ne + 2))};
    } else if (std::size_t eq = req.find('='); eq != std::string::npos) {
      r.key = Trim(std::string_view(req).substr(0, eq));
      std::size_t value_at = (req.size() > eq + 1 && req[eq + 1] == '=') ? eq + 2 : eq + 1;
      r.op = SelectorOperator::kIn;
      r.values = {Trim(std::string_view(req).substr(value_at))};
    } else if (req[0] == '!') {
      r.key = Trim(std::string_view(req).substr(1));
      r.op = SelectorOperator::kDoesNotExist;
    } else {
      r.key = req;
      r.op = SelectorOperator::kExists;
    }
    if (r.key.empty() || r.key.find(' ') != std::string::npos) {
      return absl::InvalidArgumentError(fmt::format("labelSelector requirement {:?}: bad key", req));
    }
    s.requirements_.push_back(std::move(r));
  }
  return s;
}

absl::StatusOr<Selector> Selector::ParseFields(std::string_view text) {
  Selector s;
  s.fields_ = true;
  for (const std::string& req : SplitTop(text)) {
    LabelRequirement r;
    std::size_t at = req.find("!=");
    std::size_t width = 2;
    r.op = SelectorOperator::kNotIn;
    if (at == std::string::npos) {
      at = req.find("==");
      r.op = SelectorOperator::kIn;
    }
    if (at == std::string::npos) {
      at = req.find('=');
      width = 1;
    }
    if (at == std::string::npos || at == 0) {
      return absl::InvalidArgumentError(fmt::format("fieldSelector requirement {:?}: expected path=value", req));
    }
    r.key = Trim(std::string_view(req).substr(0, at));
    r.values = {Trim(std::string_view(req).substr(at + width))};
    s.requirements_.push_back(std::move(r));
  }
  return s;
}

bool Selector::Matches(const nlohmann::json& object) const {
  // What the requirements are matched against: the object's string labels, or each named field
  // (always present: a missing field is "").
  Labels values;
  if (fields_) {
    for (const LabelRequirement& r : requirements_) values[r.key] = FieldValue(object, r.key);
  } else {
    auto meta = object.find("metadata");
    if (meta != object.end() && meta->is_object()) {
      auto labels = meta->find("labels");
      if (labels != meta->end() && labels->is_object()) {
        for (const auto& [k, v] : labels->items()) {
          if (v.is_string()) values[k] = v.get<std::string>();
        }
      }
    }
  }
  return std::all_of(requirements_.begin(), requirements_.end(),
                     [&values](const LabelRequirement& r) { return r.Matches(values); });
}

}  // namespace huygens::kube::testing
