// CpuSet: an immutable set of logical CPU ids, with set algebra and the Linux text forms.
//
// What it is: a value type holding logical CPU ids in [0, CpuSet::kMaxCpus). Copies are
// independent; nothing modifies a set in place except assignment and CpuSet::Builder.
//
// Invariants:
//   - every member is in [0, kMaxCpus) (8192, the largest NR_CPUS Linux distributions ship);
//   - the word storage never ends in a zero word, so equal sets have equal storage and
//     equality, hashing and ordering are word-wise;
//   - sets whose largest member is below 512 live inline (no heap allocation at all); larger
//     sets allocate once per set, never per element.
//
// Text forms (the kernel's; see the "cpu lists" section of kernel-parameters.rst):
//   - cpu-list: "0-3,8,10-11"; the empty set is "". Parse also accepts the strided range form
//     "0-15:2/4" (from 0 to 15, the first 2 of every group of 4: 0,1,4,5,8,9,12,13), which
//     isolcpus= and nohz_full= use. ToString always gives the canonical compact list.
//   - mask: the hexadecimal form of sysfs `cpumap`/`thread_siblings` files:
//     "00000000,0000ffff", 32-bit groups separated by commas, most significant group first.
//
// Errors: the parse functions return absl::InvalidArgumentError naming the offending token and
// its byte position; they never crash and never guess.
//
// Thread-safety: a CpuSet is immutable and may be read from any number of threads.
#ifndef HUYGENS_CPUSET_CPUSET_H_
#define HUYGENS_CPUSET_CPUSET_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"

namespace huygens {

class CpuSet {
  static constexpr size_t kInlineWords = 8;  // sets below 512 CPUs never allocate
  using Words = absl::InlinedVector<uint64_t, kInlineWords>;

 public:
  // Largest number of logical CPUs a set can describe: ids are in [0, kMaxCpus).
  static constexpr int kMaxCpus = 8192;
  // Words of the largest membership bitmap (see Bitmap()).
  static constexpr size_t kMaxWords = kMaxCpus / 64;

  // The empty set.
  CpuSet() = default;

  // Copies and moves. A move steals heap storage; inline storage (sets below 512 CPUs) is
  // copied word by word rather than as a whole buffer, which keeps GCC 12 from reporting
  // -Wmaybe-uninitialized on the unused inline words wherever a set is moved.
  CpuSet(const CpuSet&) = default;
  CpuSet& operator=(const CpuSet&) = default;
  CpuSet(CpuSet&& other) noexcept { MoveFrom(other); }
  CpuSet& operator=(CpuSet&& other) noexcept {
    if (this != &other) MoveFrom(other);
    return *this;
  }

  // The set of the given ids. REQUIRES: every id in [0, kMaxCpus) (checked; aborts otherwise,
  // since a bad literal is a programming error; use Parse for untrusted input).
  CpuSet(std::initializer_list<int> cpus);

  // The set of the ids in [first, last]. REQUIRES: 0 <= first, last < kMaxCpus; empty if
  // first > last.
  static CpuSet Range(int first, int last);

  // The set of the given ids; an id outside [0, kMaxCpus) is an InvalidArgument error.
  static absl::StatusOr<CpuSet> FromIds(std::span<const int> cpus);

  // The set whose membership bitmap is `words` (the layout of Bitmap()); trailing zero words
  // are dropped. For word-parallel code that builds a set without visiting each member.
  // REQUIRES: words.size() <= kMaxWords (checked; aborts otherwise, a programming error).
  static CpuSet FromBitmap(std::span<const uint64_t> words);

  // Parses a Linux cpu-list ("0-3,8,10-11", "0-15:2/4", ""); surrounding white space and one
  // trailing newline (as read from sysfs) are accepted. Errors: InvalidArgument naming the token
  // and its byte position in the input, e.g. `cpu-list "3-1": reversed range "3-1" at
  // position 0`.
  static absl::StatusOr<CpuSet> Parse(std::string_view cpu_list);

  // Parses a sysfs hexadecimal mask ("00000000,0000ffff"; the "0x" prefix is not accepted, as
  // the kernel never writes it). Each comma-separated group holds at most 8 hex digits; the
  // first group may be shorter. Errors: InvalidArgument naming the group and position; a bit at
  // or above kMaxCpus is an error.
  static absl::StatusOr<CpuSet> ParseMask(std::string_view mask);

  // Canonical cpu-list: ascending, ranges of two or more consecutive ids as "a-b"
  // ("0-1" for {0,1}), "" for the empty set.
  std::string ToString() const;

  // The sysfs mask form with the given number of 32-bit groups at least (more if needed to hold
  // the largest member), e.g. ToMask(2) of {0..15} is "00000000,0000ffff".
  std::string ToMask(int min_groups = 1) const;

  bool Empty() const { return words_.empty(); }
  int Size() const;                 // number of members
  bool Contains(int cpu) const;     // false for ids out of range
  int Min() const;                  // smallest member; REQUIRES: !Empty()
  int Max() const;                  // largest member; REQUIRES: !Empty()

  // Members in ascending order.
  std::vector<int> ToVector() const;

  // The membership bitmap, for word-parallel code: CPU 64 * w + b is a member exactly when bit
  // b of word w is set. Holds no trailing zero word (the empty set has no words), so it is at
  // most kMaxWords long; words past its end are all zero. Valid while the set is alive and
  // unchanged, like an iterator.
  std::span<const uint64_t> Bitmap() const { return {words_.data(), words_.size()}; }

  // Set algebra. All are O(words) and allocate at most once for the result.
  CpuSet Union(const CpuSet& other) const;
  CpuSet Intersection(const CpuSet& other) const;
  CpuSet Difference(const CpuSet& other) const;  // members of *this not in other
  bool IsSubsetOf(const CpuSet& other) const;
  bool Intersects(const CpuSet& other) const;
  int IntersectionSize(const CpuSet& other) const;  // without building the intersection

  // The n smallest members. REQUIRES: 0 <= n <= Size().
  CpuSet First(int n) const;

  // Union of many sets, in one pass.
  static CpuSet UnionAll(std::span<const CpuSet> sets);

  friend bool operator==(const CpuSet& a, const CpuSet& b) { return a.words_ == b.words_; }
  // Orders by the largest differing member (like comparing masks as numbers); only for use in
  // ordered containers.
  friend bool operator<(const CpuSet& a, const CpuSet& b);
  template <typename H>
  friend H AbslHashValue(H h, const CpuSet& s) {
    return H::combine_contiguous(std::move(h), s.words_.data(), s.words_.size());
  }
  friend std::ostream& operator<<(std::ostream& os, const CpuSet& s) {
    return os << '"' << s.ToString() << '"';
  }

  // Ascending iteration over members: `for (int cpu : set)`. An iterator stays valid as long as
  // the set it came from is alive and unchanged (not assigned to).
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = int;
    using difference_type = std::ptrdiff_t;
    using pointer = const int*;
    using reference = int;
    Iterator() = default;
    int operator*() const { return cpu_; }
    Iterator& operator++() {
      rest_ &= rest_ - 1;  // drop the current member
      while (rest_ == 0) {
        if (++word_ >= nwords_) {
          cpu_ = -1;
          return *this;
        }
        rest_ = words_[word_];
      }
      cpu_ = static_cast<int>(word_ * 64) + std::countr_zero(rest_);
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.cpu_ == b.cpu_; }

   private:
    friend class CpuSet;
    // Positioned on the first member of words[0, nwords) (the end when there is none).
    Iterator(const uint64_t* words, size_t nwords) : words_(words), nwords_(nwords) {
      if (nwords_ == 0) return;
      rest_ = words_[0] | 1;  // a placeholder bit for ++ to drop when bit 0 is not a member
      const bool zero_is_member = (words_[0] & 1) != 0;
      if (zero_is_member) {
        cpu_ = 0;
      } else {
        ++*this;
      }
    }
    const uint64_t* words_ = nullptr;
    size_t nwords_ = 0;
    size_t word_ = 0;    // index of the word holding cpu_
    uint64_t rest_ = 0;  // members of words_[word_] at and above cpu_
    int cpu_ = -1;       // -1 is end()
  };
  Iterator begin() const { return Iterator(words_.data(), words_.size()); }
  Iterator end() const { return Iterator(); }

  // Builds a set by adding and removing members; Build() returns the immutable set.
  // Not thread-safe (it is a local accumulator).
  class Builder {
   public:
    Builder() = default;
    explicit Builder(const CpuSet& start) : words_(start.words_) {}
    // REQUIRES: 0 <= cpu < kMaxCpus.
    Builder& Add(int cpu);
    // Adds [first, last]; nothing when first > last. REQUIRES: 0 <= first, last < kMaxCpus.
    Builder& AddRange(int first, int last);
    Builder& Add(const CpuSet& cpus);
    Builder& Remove(int cpu);
    Builder& Remove(const CpuSet& cpus);
    bool Contains(int cpu) const;
    CpuSet Build() const;

   private:
    Words words_;
  };

 private:
  explicit CpuSet(Words words);
  void MoveFrom(CpuSet& other) noexcept {
    if (other.words_.size() > kInlineWords) {
      words_ = std::move(other.words_);
    } else {
      words_.assign(other.words_.begin(), other.words_.end());
    }
    other.words_.clear();
  }
  static void Trim(Words& words);
  int NextFrom(int cpu) const;  // smallest member >= cpu, or -1
  // Smallest non-member >= cpu (may be words_.size() * 64). REQUIRES: 0 <= cpu.
  int NextAbsentFrom(int cpu) const;

  Words words_;
};

}  // namespace huygens

#endif  // HUYGENS_CPUSET_CPUSET_H_
