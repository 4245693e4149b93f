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
    Requirement r;
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
        r.op = Op::kIn;
      } else if (op == "notin") {
        r.op = Op::kNotIn;
      } else {
        return absl::InvalidArgumentError(fmt::format("labelSelector requirement {:?}: unknown operator {:?}", req, op));
      }
      std::string inner = req.substr(paren + 1, req.size() - paren - 2);
      for (absl::string_view v : absl::StrSplit(inner, ',')) r.values.push_back(Trim(std::string_view(v.data(), v.size())));
    } else if (std::size_t ne = req.find("!="); ne != std::string::npos) {
      r.key = Trim(std::string_view(req).substr(0, ne));
      r.op = Op::kNotEquals;
      r.values = {Trim(std::string_view(req).substr(ne + 2))};
    } else if (std::size_t eq = req.find('='); eq != std::string::npos) {
      r.key = Trim(std::string_view(req).substr(0, eq));
      std::size_t value_at = (req.size() > eq + 1 && req[eq + 1] == '=') ? eq + 2 : eq + 1;
      r.op = Op::kEquals;
      r.values = {Trim(std::string_view(req).substr(value_at))};
    } else if (req[0] == '!') {
      r.key = Trim(std::string_view(req).substr(1));
      r.op = Op::kNotExists;
    } else {
      r.key = req;
      r.op = Op::kExists;
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
    Requirement r;
    std::size_t at = req.find("!=");
    std::size_t width = 2;
    r.op = Op::kNotEquals;
    if (at == std::string::npos) {
      at = req.find("==");
      r.op = Op::kEquals;
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
  static const nlohmann::json kNoLabels = nlohmann::json::object();
  const nlohmann::json* labels = &kNoLabels;
  if (!fields_) {
    auto meta = object.find("metadata");
    if (meta != object.end() && meta->is_object()) {
      auto l = meta->find("labels");
      if (l != meta->end() && l->is_object()) labels = &*l;
    }
  }
  for (const Requirement& r : requirements_) {
    bool present;
    std::string value;
    if (fields_) {
      present = true;
      value = FieldValue(object, r.key);
    } else {
      auto it = labels->find(r.key);
      present = it != labels->end() && it->is_string();
      if (present) value = it->get<std::string>();
    }
    bool listed = std::find(r.values.begin(), r.values.end(), value) != r.values.end();
    bool ok = false;
    switch (r.op) {
      case Op::kEquals: ok = present && value == r.values[0]; break;
      case Op::kNotEquals: ok = !present || value != r.values[0]; break;
      case Op::kExists: ok = present; break;
      case Op::kNotExists: ok = !present; break;
      case Op::kIn: ok = present && listed; break;
      case Op::kNotIn: ok = !present || !listed; break;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace huygens::kube::testing
