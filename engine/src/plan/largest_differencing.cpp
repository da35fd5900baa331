// verl's partition of sequences into k micro-batches (data.hpp): Karmarkar and Karp's largest
// differencing method (1982) as verl/utils/seqlen_balancing.py karmarkar_karp runs it at
// volcengine/verl b178a3c (equal_size false), written anew from its rules so that the parts come
// out as verl's do, ties included. The values are verl's workloads (calculate_workload:
// 24576 len + len^2), summed in 128 bits as Python's integers never wrap:
//  - a part compares by its sum, then its item count, then its (index, length) items in order;
//  - a state holds k parts, largest first (Python's stable sort, reverse=True); it compares by
//    spread (largest part less smallest; the larger spread first), then by its largest part;
//  - states live in a binary heap with Python's heapq sift rules; the two first popped merge
//    (the first's i-th part takes the second's (k-1-i)-th) until one state is left.
// Empty parts are kept implicit (they sort last and never differ), so a state of one sequence
// costs one part, not k.
#include <algorithm>
#include <utility>

#include "actmem/plan/data.hpp"

namespace actmem {

namespace {

__extension__ typedef unsigned __int128 Wide;

struct Part {
  Wide sum = 0;
  std::vector<std::pair<std::uint64_t, Wide>> items;  // (index, workload), as appended
};

// Python's Set.__lt__: sum, then item count, then the item lists (tuples compare in order).
bool part_less(const Part& a, const Part& b) {
  if (a.sum != b.sum) return a.sum < b.sum;
  if (a.items.size() != b.items.size()) return a.items.size() < b.items.size();
  return a.items < b.items;
}

struct State {
  std::vector<Part> parts;  // the non-empty parts, largest first; k - size() empty ones follow
  Wide spread(std::uint64_t k) const {
    return parts.front().sum - (parts.size() == k ? parts.back().sum : 0);
  }
};

class Partitioner {
 public:
  explicit Partitioner(std::uint64_t k) : k_(k) {}

  // State.__lt__: the larger spread first, then the larger largest part.
  bool less(const State& a, const State& b) const {
    const Wide sa = a.spread(k_), sb = b.spread(k_);
    if (sa != sb) return sa > sb;
    return part_less(b.parts.front(), a.parts.front());
  }

  // heapq.heappush: append, then _siftdown from the end.
  void push(State s) {
    heap_.push_back(std::move(s));
    sift_down(0, heap_.size() - 1);
  }

  // heapq.heappop: the last element takes the root's place and _siftup moves it.
  State pop() {
    State last = std::move(heap_.back());
    heap_.pop_back();
    if (heap_.empty()) return last;
    State top = std::move(heap_.front());
    heap_.front() = std::move(last);
    sift_up(0);
    return top;
  }

  std::size_t size() const { return heap_.size(); }

  // State.merge: part i takes the other's part k-1-i, then the parts are sorted again.
  void merge(State* into, State&& other) const {
    const std::uint64_t a = into->parts.size(), b = other.parts.size();
    std::vector<Part> out;
    out.reserve(std::min<std::uint64_t>(k_, a + b));
    for (std::uint64_t i = 0; i < k_; ++i) {
      const bool mine = i < a, theirs = k_ - 1 - i < b;
      if (!mine && !theirs) {
        i = std::max(i, k_ - b) - 1;  // skip the empty parts on both sides
        continue;
      }
      Part p = mine ? std::move(into->parts[i]) : Part{};
      if (theirs) {
        Part& o = other.parts[k_ - 1 - i];
        p.sum += o.sum;
        p.items.insert(p.items.end(), o.items.begin(), o.items.end());
      }
      out.push_back(std::move(p));
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const Part& x, const Part& y) { return part_less(y, x); });
    into->parts = std::move(out);
  }

 private:
  void sift_down(std::size_t start, std::size_t pos) {
    State item = std::move(heap_[pos]);
    while (pos > start) {
      const std::size_t parent = (pos - 1) >> 1;
      if (!less(item, heap_[parent])) break;
      heap_[pos] = std::move(heap_[parent]);
      pos = parent;
    }
    heap_[pos] = std::move(item);
  }

  void sift_up(std::size_t pos) {
    const std::size_t end = heap_.size(), start = pos;
    State item = std::move(heap_[pos]);
    for (std::size_t child = 2 * pos + 1; child < end; child = 2 * pos + 1) {
      if (child + 1 < end && !less(heap_[child], heap_[child + 1])) ++child;
      heap_[pos] = std::move(heap_[child]);
      pos = child;
    }
    heap_[pos] = std::move(item);
    sift_down(start, pos);
  }

  std::uint64_t k_;
  std::vector<State> heap_;
};

}  // namespace

std::vector<std::vector<std::uint64_t>> largest_differencing(
    const std::vector<std::uint64_t>& lengths, std::uint64_t k) {
  std::vector<std::pair<Wide, std::uint64_t>> sorted;  // (workload, index), ascending
  sorted.reserve(lengths.size());
  for (std::uint64_t i = 0; i < lengths.size(); ++i) {
    const Wide len = lengths[i];
    sorted.emplace_back(24576 * len + len * len, i);
  }
  std::sort(sorted.begin(), sorted.end());
  Partitioner h(k);
  for (const auto& [w, i] : sorted) {
    State s;
    s.parts.push_back(Part{w, {{i, w}}});
    h.push(std::move(s));
  }
  while (h.size() > 1) {
    State first = h.pop();
    State second = h.pop();
    h.merge(&first, std::move(second));
    h.push(std::move(first));
  }
  std::vector<std::vector<std::uint64_t>> out;
  if (h.size() == 0) return out;
  for (const Part& p : h.pop().parts) {
    std::vector<std::uint64_t> idx;
    for (const auto& it : p.items) idx.push_back(it.first);
    std::sort(idx.begin(), idx.end());  // _check_and_sort_partitions
    out.push_back(std::move(idx));
  }
  return out;
}

}  // namespace actmem
