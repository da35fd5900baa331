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
// costs one part, not k; a part's items are a linked list, so a merge costs O(parts), not
// O(items).
#include <algorithm>
#include <utility>

#include "actmem/plan/data.hpp"

namespace actmem {

namespace {

__extension__ typedef unsigned __int128 Wide;

// A part's items are a list threaded through `next` (one slot per sequence): merging two parts
// links them in O(1), in the order Python appends them.
struct Part {
  Wide sum = 0;
  std::uint64_t count = 0, head = 0, tail = 0;
};

// Python's Set.__lt__: sum, then item count, then the item lists. Two parts compared never share
// a sequence, so their first (index, workload) items already differ, in the index.
bool part_less(const Part& a, const Part& b) {
  if (a.sum != b.sum) return a.sum < b.sum;
  if (a.count != b.count) return a.count < b.count;
  return a.head < b.head;
}

struct State {
  std::vector<Part> parts;  // the non-empty parts, largest first; k - size() empty ones follow
  Wide spread = 0;          // the largest part less the smallest (an empty one counts 0)
};

class Partitioner {
 public:
  Partitioner(std::uint64_t k, std::uint64_t n) : k_(k), next_(n, kEnd) {}

  static constexpr std::uint64_t kEnd = ~std::uint64_t{0};

  // State.__lt__: the larger spread first, then the larger largest part.
  bool less(const State& a, const State& b) const {
    if (a.spread != b.spread) return a.spread > b.spread;
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
  void merge(State* into, State&& other) {
    const std::uint64_t a = into->parts.size(), b = other.parts.size();
    scratch_.clear();
    for (std::uint64_t i = 0; i < k_; ++i) {
      const bool mine = i < a, theirs = k_ - 1 - i < b;
      if (!mine && !theirs) {
        i = std::max(i, k_ - b) - 1;  // skip the empty parts on both sides
        continue;
      }
      Part p = mine ? into->parts[i] : other.parts[k_ - 1 - i];
      if (mine && theirs) {
        const Part& o = other.parts[k_ - 1 - i];
        next_[p.tail] = o.head;
        p.tail = o.tail;
        p.sum += o.sum;
        p.count += o.count;
      }
      scratch_.push_back(p);
    }
    // The parts are distinct (part_less is a strict total order): no stability needed.
    std::sort(scratch_.begin(), scratch_.end(),
              [](const Part& x, const Part& y) { return part_less(y, x); });
    into->parts.swap(scratch_);
    into->spread =
        into->parts.front().sum - (into->parts.size() == k_ ? into->parts.back().sum : 0);
  }

  // A part's sequence indices, sorted (_check_and_sort_partitions).
  std::vector<std::uint64_t> indices(const Part& p) const {
    std::vector<std::uint64_t> idx;
    idx.reserve(p.count);
    for (std::uint64_t i = p.head; i != kEnd; i = next_[i]) idx.push_back(i);
    std::sort(idx.begin(), idx.end());
    return idx;
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
  std::vector<std::uint64_t> next_;  // each sequence's successor in its part, or kEnd
  std::vector<State> heap_;
  std::vector<Part> scratch_;
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
  Partitioner h(k, lengths.size());
  for (const auto& [w, i] : sorted) {
    State s;
    s.parts.push_back(Part{w, 1, i, i});
    s.spread = k == 1 ? 0 : w;
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
  for (const Part& p : h.pop().parts) out.push_back(h.indices(p));
  return out;
}

}  // namespace actmem
