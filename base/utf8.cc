#include "base/utf8.h"

#include <cstdint>

namespace huygens {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Length of the well-formed sequence that starts `text` (Unicode table 3-7), or 0 when none does.
size_t SequenceLength(std::string_view text) {
  const auto at = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = at(0);
  if (lead < 0x80) return 1;
  size_t length;
  uint8_t second_min = 0x80, second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong
    if (lead == 0xED) second_max = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong
    if (lead == 0xF4) second_max = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length || at(1) < second_min || at(1) > second_max) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (!IsContinuation(at(i))) return 0;
  }
  return length;
}

}  // namespace

std::string TruncateUtf8(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(text.size() < max_bytes ? text.size() : max_bytes);
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = SequenceLength(text.substr(i));
    const std::string_view piece = length == 0 ? kReplacement : text.substr(i, length);
    if (out.size() + piece.size() > max_bytes) break;
    out += piece;
    i += length == 0 ? 1 : length;
  }
  return out;
}

}  // namespace huygens
