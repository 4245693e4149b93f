// CsvTable: a small reader for the trace CSV files (internal to sim/).
//
// What it is: a header row and data rows split on commas; double-quoted fields (with "" as an
// escaped quote) are accepted; blank lines are skipped; "\r\n" line ends are accepted. Each row
// remembers its 1-based line number for error messages.
//
// Thread-safety: plain data.
#ifndef HUYGENS_SIM_CSV_H_
#define HUYGENS_SIM_CSV_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace huygens::sim {

struct CsvTable {
  std::string file_name;
  std::vector<std::string> header;
  struct Row {
    int line = 0;
    std::vector<std::string> fields;
  };
  std::vector<Row> rows;

  // Index of a header column; InvalidArgument "FILE:1: missing column NAME" when absent.
  absl::StatusOr<int> Column(std::string_view name) const;
  // InvalidArgument "FILE:LINE: column NAME: message".
  absl::Status Error(const Row& row, std::string_view column, std::string_view message) const;
  // The field as an integer / a number; empty fields give `if_empty` when set, else an error.
  absl::StatusOr<int64_t> Int(const Row& row, int column, bool allow_empty = false,
                              int64_t if_empty = 0) const;
};

// Parses CSV text. Errors: InvalidArgument "FILE:LINE: ..." for an empty file, an unterminated
// quote, or a row whose field count differs from the header's.
absl::StatusOr<CsvTable> ParseCsv(std::string_view text, std::string_view file_name);

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_CSV_H_
