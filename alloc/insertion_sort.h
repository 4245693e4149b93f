// InsertionSort: a stable, in-place sort for the short lists of the allocators (a machine's
// NUMA nodes, sockets, L3 groups of a NUMA node).
//
// Why: std::stable_sort allocates a temporary buffer on every call, which showed up in the
// profiles of the Huygens allocator; std::sort is not stable. On the lists sorted here (tens
// of entries at most) insertion sort is also the fastest. Quadratic: not for long lists.
//
// Thread-safety: a pure function over its argument.
#ifndef HUYGENS_ALLOC_INSERTION_SORT_H_
#define HUYGENS_ALLOC_INSERTION_SORT_H_

#include <span>
#include <utility>

namespace huygens {

// Sorts `items` by `less` (a strict weak order), keeping equal items in their order.
template <typename T, typename Less>
void InsertionSort(std::span<T> items, Less less) {
  T* data = items.data();  // raw pointers: InlinedVector's operator[] checks its storage
  for (size_t i = 1; i < items.size(); ++i) {
    T item = std::move(data[i]);
    size_t j = i;
    for (; j > 0 && less(item, data[j - 1]); --j) data[j] = std::move(data[j - 1]);
    data[j] = std::move(item);
  }
}

}  // namespace huygens

#endif  // HUYGENS_ALLOC_INSERTION_SORT_H_
