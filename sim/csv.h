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
  // The field as an integer in [-max, max] ("540.0" is 540); empty fields give `if_empty` when
  // `allow_empty`, else an error. Errors name the row and column: not an integer (words, "1.5",
  // "nan"), or beyond `max` (so that the callers' unit conversions cannot overflow).
  // REQUIRES: 0 <= max <= 2^53.
  absl::StatusOr<int64_t> Int(const Row& row, int column, int64_t max, bool allow_empty = false,
                              int64_t if_empty = 0) const;
};

// Bounds of the trace and node-list columns: far above any real value, low enough that the
// conversions to bytes, microseconds and milli-CPU sums stay inside int64.
inline constexpr int64_t kMaxCpuMilli = 1'000'000'000'000;     // 10^9 CPUs
inline constexpr int64_t kMaxMemoryMib = int64_t{1} << 40;      // 1 EiB
inline constexpr int64_t kMaxTraceSeconds = 1'000'000'000'000;  // about 31,700 years

// Parses CSV text. Errors: InvalidArgument "FILE:LINE: ..." for an empty file, an unterminated
// quote, or a row whose field count differs from the header's.
absl::StatusOr<CsvTable> ParseCsv(std::string_view text, std::string_view file_name);

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_CSV_H_
