// Fuzzes the event-note path (kube::EventObject, which every scheduler and agent event goes
// through) with arbitrary bytes as the note: the Event always serialises (nlohmann's dump()
// throws on split or malformed UTF-8), its note is at most kMaxEventNoteBytes and reads back
// the same, and a well-formed note is kept as the longest prefix that fits, cut on a character
// boundary.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "base/utf8.h"
#include "kube/event_recorder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using huygens::kube::kMaxEventNoteBytes;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  huygens::kube::EventRecord record{.ns = "default", .name = "p", .reason = "FailedScheduling",
                                    .action = "Scheduling", .note = std::string(text)};
  const nlohmann::json event =
      huygens::kube::EventObject(record, "p.1", "2026-01-01T00:00:00.000000Z");
  std::string wire;
  try {
    wire = event.dump();
  } catch (const std::exception& e) {
    ABSL_RAW_LOG(FATAL, "event does not serialise: %s", e.what());
  }
  const std::string note = nlohmann::json::parse(wire)["note"].get<std::string>();
  ABSL_RAW_CHECK(note == event["note"].get<std::string>(), "note does not read back");
  ABSL_RAW_CHECK(note.size() <= kMaxEventNoteBytes, "note over the API's limit");
  if (huygens::TruncateUtf8(text, text.size()) == text) {  // well-formed input
    ABSL_RAW_CHECK(text.starts_with(note), "a well-formed note is not kept as a prefix");
    ABSL_RAW_CHECK(note.size() == text.size() || note.size() + 4 > kMaxEventNoteBytes,
                   "a well-formed note is cut shorter than it needs to be");
  }
  return 0;
}
