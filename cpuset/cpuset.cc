#include "cpuset/cpuset.h"

#include <algorithm>
#include <bit>
#include <cstdlib>

#include "absl/base/internal/raw_logging.h"
#include "fmt/format.h"

namespace huygens {
namespace {

constexpr int kWordBits = 64;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view TrimSpace(std::string_view s, size_t& offset) {
  offset = 0;
  while (!s.empty() && IsSpace(s.front())) {
    s.remove_prefix(1);
    ++offset;
  }
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

absl::Status ListError(std::string_view whole, std::string_view token, size_t pos,
                       std::string_view what) {
  return absl::InvalidArgumentError(
      fmt::format("cpu-list {:?}: {} {:?} at position {}", whole, what, token, pos));
}

// Parses a decimal CPU id that must fill `digits` entirely.
bool ParseId(std::string_view digits, int& out) {
  if (digits.empty() || digits.size() > 6) return false;
  int value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  out = value;
  return true;
}

}  // namespace

CpuSet::CpuSet(Words words) : words_(std::move(words)) { Trim(words_); }

CpuSet::CpuSet(std::initializer_list<int> cpus) {
  Builder b;
  for (int cpu : cpus) b.Add(cpu);
  *this = b.Build();
}

void CpuSet::Trim(Words& words) {
  while (!words.empty() && words.back() == 0) words.pop_back();
}

CpuSet CpuSet::Range(int first, int last) {
  ABSL_RAW_CHECK(first >= 0 && last < kMaxCpus, "CpuSet::Range: id out of range");
  Builder b;
  b.AddRange(first, last);
  return b.Build();
}

absl::StatusOr<CpuSet> CpuSet::FromIds(std::span<const int> cpus) {
  Builder b;
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= kMaxCpus) {
      return absl::InvalidArgumentError(
          fmt::format("cpu id {} is outside [0, {})", cpu, kMaxCpus));
    }
    b.Add(cpu);
  }
  return b.Build();
}

CpuSet CpuSet::FromBitmap(std::span<const uint64_t> words) {
  ABSL_RAW_CHECK(words.size() <= kMaxWords, "CpuSet::FromBitmap: more than kMaxWords words");
  return CpuSet(Words(words.begin(), words.end()));
}

absl::StatusOr<CpuSet> CpuSet::Parse(std::string_view cpu_list) {
  size_t lead = 0;
  const std::string_view text = TrimSpace(cpu_list, lead);
  Builder b;
  if (text.empty()) return b.Build();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view token = text.substr(start, comma - start);
    const size_t pos = lead + start;
    if (token.empty()) return ListError(cpu_list, token, pos, "empty entry");
    // Split "a-b:used/group".
    std::string_view range = token;
    int used = 0, group = 0;
    const size_t colon = token.find(':');
    if (colon != std::string_view::npos) {
      range = token.substr(0, colon);
      const std::string_view stride = token.substr(colon + 1);
      const size_t slash = stride.find('/');
      if (slash == std::string_view::npos || !ParseId(stride.substr(0, slash), used) ||
          !ParseId(stride.substr(slash + 1), group)) {
        return ListError(cpu_list, token, pos, "malformed stride (want a-b:used/group) in");
      }
      if (group == 0 || used == 0 || used > group) {
        return ListError(cpu_list, token, pos, "stride needs 0 < used <= group in");
      }
    }
    int first = 0, last = 0;
    const size_t dash = range.find('-');
    if (dash == std::string_view::npos) {
      if (colon != std::string_view::npos) {
        return ListError(cpu_list, token, pos, "stride without a range in");
      }
      if (!ParseId(range, first)) return ListError(cpu_list, token, pos, "bad cpu id");
      last = first;
    } else {
      if (!ParseId(range.substr(0, dash), first) || !ParseId(range.substr(dash + 1), last)) {
        return ListError(cpu_list, token, pos, "bad range");
      }
      if (first > last) return ListError(cpu_list, token, pos, "reversed range");
    }
    if (last >= kMaxCpus) {
      return ListError(cpu_list, token, pos,
                       fmt::format("cpu id above the maximum {} in", kMaxCpus - 1));
    }
    if (colon == std::string_view::npos) {
      b.AddRange(first, last);
    } else {
      for (int lo = first; lo <= last; lo += group) b.AddRange(lo, std::min(last, lo + used - 1));
    }
    start = comma + 1;
    if (comma == text.size()) break;
  }
  return b.Build();
}

absl::StatusOr<CpuSet> CpuSet::ParseMask(std::string_view mask) {
  size_t lead = 0;
  const std::string_view text = TrimSpace(mask, lead);
  auto error = [&](std::string_view group, size_t pos, std::string_view what) {
    return absl::InvalidArgumentError(
        fmt::format("cpu mask {:?}: {} {:?} at position {}", mask, what, group, pos));
  };
  if (text.empty()) return error(text, lead, "empty mask");
  // Groups are numbered from the right (group 0 holds cpus 0-31); count them first so that one
  // left-to-right pass knows each group's index.
  const size_t ngroups = static_cast<size_t>(std::count(text.begin(), text.end(), ',')) + 1;
  Words words;
  size_t start = 0;
  for (size_t i = 0; i < ngroups; ++i) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view group = text.substr(start, comma - start);
    const size_t pos = lead + start;
    start = comma + 1;
    if (group.empty() || group.size() > 8) {
      return error(group, pos, "group must have 1 to 8 hex digits:");
    }
    uint32_t value = 0;
    for (char c : group) {
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return error(group, pos, "not a hex digit in group");
      }
      value = (value << 4) | digit;
    }
    const size_t index = ngroups - 1 - i;  // 32-bit group index, least significant = 0
    if (value == 0) continue;
    if (index * 32 >= static_cast<size_t>(kMaxCpus)) {
      return error(group, pos, fmt::format("bit above cpu {} set in group", kMaxCpus - 1));
    }
    const size_t w = index / 2;
    if (words.size() <= w) words.resize(w + 1, 0);  // the first non-zero group sizes it
    words[w] |= static_cast<uint64_t>(value) << (32 * (index % 2));
  }
  return CpuSet(std::move(words));
}

std::string CpuSet::ToString() const {
  std::string out;
  int cpu = NextFrom(0);
  while (cpu >= 0) {
    const int end = NextAbsentFrom(cpu);  // one past the run's last member
    if (!out.empty()) out += ',';
    out += fmt::format_int(cpu).str();
    if (end - 1 > cpu) {
      out += '-';
      out += fmt::format_int(end - 1).str();
    }
    cpu = NextFrom(end);
  }
  return out;
}

std::string CpuSet::ToMask(int min_groups) const {
  const int needed = Empty() ? 1 : Max() / 32 + 1;
  const int groups = std::max(needed, std::max(min_groups, 1));
  std::string out;
  for (int g = groups - 1; g >= 0; --g) {
    const size_t w = static_cast<size_t>(g / 2);
    const uint64_t word = w < words_.size() ? words_[w] : 0;
    const auto value = static_cast<uint32_t>(word >> (32 * (g % 2)));
    fmt::format_to(std::back_inserter(out), "{:08x}", value);
    if (g > 0) out += ',';
  }
  return out;
}

int CpuSet::Size() const {
  int n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

bool CpuSet::Contains(int cpu) const {
  if (cpu < 0) return false;
  const auto w = static_cast<size_t>(cpu / kWordBits);
  return w < words_.size() && ((words_[w] >> (cpu % kWordBits)) & 1) != 0;
}

int CpuSet::Min() const {
  ABSL_RAW_CHECK(!Empty(), "CpuSet::Min of the empty set");
  return NextFrom(0);
}

int CpuSet::Max() const {
  ABSL_RAW_CHECK(!Empty(), "CpuSet::Max of the empty set");
  const size_t w = words_.size() - 1;
  return static_cast<int>(w) * kWordBits + (kWordBits - 1 - std::countl_zero(words_[w]));
}

int CpuSet::NextFrom(int cpu) const {
  if (cpu < 0) cpu = 0;
  if (cpu >= kMaxCpus) return -1;
  auto w = static_cast<size_t>(cpu / kWordBits);
  if (w >= words_.size()) return -1;
  uint64_t word = words_[w] & (~uint64_t{0} << (cpu % kWordBits));
  while (true) {
    if (word != 0) return static_cast<int>(w) * kWordBits + std::countr_zero(word);
    if (++w >= words_.size()) return -1;
    word = words_[w];
  }
}

int CpuSet::NextAbsentFrom(int cpu) const {
  auto w = static_cast<size_t>(cpu / kWordBits);
  if (w >= words_.size()) return cpu;
  uint64_t word = ~words_[w] & (~uint64_t{0} << (cpu % kWordBits));
  while (true) {
    if (word != 0) return static_cast<int>(w) * kWordBits + std::countr_zero(word);
    if (++w >= words_.size()) return static_cast<int>(w) * kWordBits;
    word = ~words_[w];
  }
}

std::vector<int> CpuSet::ToVector() const {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(Size()));
  for (int cpu : *this) out.push_back(cpu);
  return out;
}

// The loops below work on raw word pointers: InlinedVector's operator[] checks inline-vs-heap
// storage on every access, which keeps the compiler from vectorising them.
CpuSet CpuSet::Union(const CpuSet& other) const {
  const CpuSet& longer = words_.size() >= other.words_.size() ? *this : other;
  const CpuSet& shorter = &longer == this ? other : *this;
  Words words = longer.words_;
  uint64_t* out = words.data();
  const uint64_t* in = shorter.words_.data();
  for (size_t i = 0, n = shorter.words_.size(); i < n; ++i) out[i] |= in[i];
  return CpuSet(std::move(words));
}

CpuSet CpuSet::Intersection(const CpuSet& other) const {
  const uint64_t* a = words_.data();
  const uint64_t* b = other.words_.data();
  size_t n = std::min(words_.size(), other.words_.size());
  while (n > 0 && (a[n - 1] & b[n - 1]) == 0) --n;  // size the result once, already trimmed
  Words words(n);
  uint64_t* out = words.data();
  for (size_t i = 0; i < n; ++i) out[i] = a[i] & b[i];
  return CpuSet(std::move(words));
}

CpuSet CpuSet::Difference(const CpuSet& other) const {
  Words words = words_;
  uint64_t* out = words.data();
  const uint64_t* in = other.words_.data();
  for (size_t i = 0, n = std::min(words.size(), other.words_.size()); i < n; ++i) {
    out[i] &= ~in[i];
  }
  return CpuSet(std::move(words));
}

bool CpuSet::IsSubsetOf(const CpuSet& other) const {
  if (words_.size() > other.words_.size()) return false;
  for (size_t i = 0; i < words_.size(); ++i) {
    if ((words_[i] & ~other.words_[i]) != 0) return false;
  }
  return true;
}

bool CpuSet::Intersects(const CpuSet& other) const {
  const size_t n = std::min(words_.size(), other.words_.size());
  for (size_t i = 0; i < n; ++i) {
    if ((words_[i] & other.words_[i]) != 0) return true;
  }
  return false;
}

int CpuSet::IntersectionSize(const CpuSet& other) const {
  const size_t n = std::min(words_.size(), other.words_.size());
  int count = 0;
  for (size_t i = 0; i < n; ++i) count += std::popcount(words_[i] & other.words_[i]);
  return count;
}

CpuSet CpuSet::First(int n) const {
  ABSL_RAW_CHECK(n >= 0 && n <= Size(), "CpuSet::First: n outside [0, Size()]");
  Words words;
  int left = n;
  for (size_t i = 0; i < words_.size() && left > 0; ++i) {
    uint64_t word = words_[i];
    uint64_t kept = 0;
    while (word != 0 && left > 0) {
      const uint64_t low = word & (~word + 1);
      kept |= low;
      word &= word - 1;
      --left;
    }
    words.push_back(kept);
  }
  return CpuSet(std::move(words));
}

CpuSet CpuSet::UnionAll(std::span<const CpuSet> sets) {
  size_t n = 0;
  for (const CpuSet& s : sets) n = std::max(n, s.words_.size());
  Words words(n, 0);
  for (const CpuSet& s : sets) {
    for (size_t i = 0; i < s.words_.size(); ++i) words[i] |= s.words_[i];
  }
  return CpuSet(std::move(words));
}

bool operator<(const CpuSet& a, const CpuSet& b) {
  if (a.words_.size() != b.words_.size()) return a.words_.size() < b.words_.size();
  for (size_t i = a.words_.size(); i-- > 0;) {
    if (a.words_[i] != b.words_[i]) return a.words_[i] < b.words_[i];
  }
  return false;
}

CpuSet::Builder& CpuSet::Builder::Add(int cpu) {
  ABSL_RAW_CHECK(cpu >= 0 && cpu < kMaxCpus, "CpuSet::Builder::Add: id out of range");
  const auto w = static_cast<size_t>(cpu / kWordBits);
  if (words_.size() <= w) words_.resize(w + 1, 0);
  words_[w] |= uint64_t{1} << (cpu % kWordBits);
  return *this;
}

CpuSet::Builder& CpuSet::Builder::AddRange(int first, int last) {
  ABSL_RAW_CHECK(first >= 0 && last < kMaxCpus, "CpuSet::Builder::AddRange: id out of range");
  if (first > last) return *this;
  const auto last_word = static_cast<size_t>(last / kWordBits);
  if (words_.size() <= last_word) words_.resize(last_word + 1, 0);
  for (auto w = static_cast<size_t>(first / kWordBits); w <= last_word; ++w) {
    const int base = static_cast<int>(w) * kWordBits;
    const int lo = std::max(first, base) - base;
    const int hi = std::min(last, base + kWordBits - 1) - base;
    const uint64_t upper = hi == kWordBits - 1 ? ~uint64_t{0} : ((uint64_t{1} << (hi + 1)) - 1);
    const uint64_t lower = (uint64_t{1} << lo) - 1;
    words_[w] |= upper & ~lower;
  }
  return *this;
}

CpuSet::Builder& CpuSet::Builder::Add(const CpuSet& cpus) {
  if (words_.size() < cpus.words_.size()) words_.resize(cpus.words_.size(), 0);
  for (size_t i = 0; i < cpus.words_.size(); ++i) words_[i] |= cpus.words_[i];
  return *this;
}

CpuSet::Builder& CpuSet::Builder::Remove(int cpu) {
  const auto w = static_cast<size_t>(cpu / kWordBits);
  if (cpu >= 0 && w < words_.size()) words_[w] &= ~(uint64_t{1} << (cpu % kWordBits));
  return *this;
}

CpuSet::Builder& CpuSet::Builder::Remove(const CpuSet& cpus) {
  const size_t n = std::min(words_.size(), cpus.words_.size());
  for (size_t i = 0; i < n; ++i) words_[i] &= ~cpus.words_[i];
  return *this;
}

bool CpuSet::Builder::Contains(int cpu) const {
  const auto w = static_cast<size_t>(cpu / kWordBits);
  return cpu >= 0 && w < words_.size() && ((words_[w] >> (cpu % kWordBits)) & 1) != 0;
}

CpuSet CpuSet::Builder::Build() const { return CpuSet(words_); }

}  // namespace huygens
