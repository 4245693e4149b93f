#include "sim/csv.h"

#include <cmath>
#include <string>

#include "fmt/format.h"

namespace huygens::sim {

absl::StatusOr<int> CsvTable::Column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return absl::InvalidArgumentError(
      fmt::format("{}:1: missing column {:?}", file_name, std::string(name)));
}

absl::Status CsvTable::Error(const Row& row, std::string_view column,
                             std::string_view message) const {
  return absl::InvalidArgumentError(
      fmt::format("{}:{}: column {}: {}", file_name, row.line, column, message));
}

absl::StatusOr<int64_t> CsvTable::Int(const Row& row, int column, int64_t max, bool allow_empty,
                                      int64_t if_empty) const {
  const std::string& text = row.fields[static_cast<size_t>(column)];
  const std::string& name = header[static_cast<size_t>(column)];
  if (text.empty()) {
    if (allow_empty) return if_empty;
    return Error(row, name, "empty");
  }
  // Some trace columns hold integral values written as floats ("540.0"), so the field is read
  // as a double; it is cast only once known whole and within `max` (<= 2^53, so exact as a
  // double): the cast of anything larger, infinite or NaN would be undefined.
  auto beyond = [&] { return Error(row, name, fmt::format("{} is beyond {}", text, max)); };
  size_t used = 0;
  double d = 0;
  try {
    d = std::stod(text, &used);
  } catch (const std::out_of_range&) {
    return beyond();  // beyond any double
  } catch (const std::invalid_argument&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(d) || d != std::trunc(d)) {
    return Error(row, name, fmt::format("expected an integer, found {:?}", text));
  }
  if (std::fabs(d) > static_cast<double>(max)) return beyond();
  return static_cast<int64_t>(d);
}

absl::StatusOr<CsvTable> ParseCsv(std::string_view text, std::string_view file_name) {
  CsvTable table;
  table.file_name = std::string(file_name);
  int line = 1;
  size_t i = 0;
  while (i <= text.size()) {
    if (i == text.size()) break;
    std::vector<std::string> fields;
    std::string field;
    const int start_line = line;
    bool end_of_row = false;
    while (!end_of_row) {
      if (i < text.size() && text[i] == '"') {
        ++i;
        while (true) {
          if (i >= text.size()) {
            return absl::InvalidArgumentError(
                fmt::format("{}:{}: unterminated quoted field", file_name, start_line));
          }
          if (text[i] == '"') {
            if (i + 1 < text.size() && text[i + 1] == '"') {
              field += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (text[i] == '\n') ++line;
          field += text[i++];
        }
      }
      while (i < text.size() && text[i] != ',' && text[i] != '\n') {
        if (text[i] != '\r') field += text[i];
        ++i;
      }
      fields.push_back(std::move(field));
      field.clear();
      if (i >= text.size() || text[i] == '\n') {
        end_of_row = true;
        ++line;
      }
      ++i;
    }
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    if (table.header.empty()) {
      table.header = std::move(fields);
      continue;
    }
    if (fields.size() != table.header.size()) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: {} fields, but the header has {}", file_name, start_line,
                      fields.size(), table.header.size()));
    }
    table.rows.push_back({start_line, std::move(fields)});
  }
  if (table.header.empty()) {
    return absl::InvalidArgumentError(fmt::format("{}: empty file (no header row)", file_name));
  }
  return table;
}

}  // namespace huygens::sim
