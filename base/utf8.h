// UTF-8-safe cutting of text that is bounded in bytes (Kubernetes event notes, error messages
// quoted from a server's body).
//
// What it is: one function that cuts text to a byte budget without splitting a character and
// returns well-formed UTF-8, so that the result can always be written into JSON (nlohmann's
// dump() throws type_error 316 on a split or malformed sequence, and the API server rejects
// one).
//
// Thread-safety: pure function.
#ifndef HUYGENS_BASE_UTF8_H_
#define HUYGENS_BASE_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace huygens {

// Returns the longest well-formed UTF-8 prefix of `text` of at most `max_bytes` bytes; a
// character that would straddle the limit is left out whole. A byte that does not start a
// well-formed sequence (Unicode 15, table 3-7: no overlong forms, no surrogates, nothing above
// U+10FFFF, no truncated sequence) is replaced by one U+FFFD (3 bytes, counted against the
// budget), as a JSON encoder's replace mode does.
// Examples: ("héllo", 2) -> "h" (the 2-byte "é" does not fit), ("a\xff", 8) -> "a\uFFFD".
std::string TruncateUtf8(std::string_view text, size_t max_bytes);

}  // namespace huygens

#endif  // HUYGENS_BASE_UTF8_H_
