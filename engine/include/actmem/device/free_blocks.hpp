// One pool's cached blocks in the order PyTorch's BlockComparatorSize gives them (stream, then
// size, then address; c10/cuda/CUDACachingAllocator.cpp), answering get_free_block's question:
// the smallest block of a stream at least n bytes long, lowest address first among equals.
//
// Why not a std::set: the replay inserts and erases a cached block for nearly every tensor it
// allocates or frees (135,000 inserts per 405B view, into a pool of 170 blocks on average, up to
// 1,520: perf and a count, 2026-12-05), and the set's pointer-chasing was 40% of a view. A step's
// tensors come in few sizes (8 per stream on average there), so the blocks are kept per size: each
// stream has a sorted array of the sizes it caches, each size a run of its blocks by address
// with room at both ends, so that taking the lowest (what get_free_block takes), adding a new
// lowest or a new highest move nothing; a block between moves the shorter side. (Half the
// inserts of that view found their size empty; a size's run held 42 blocks on average, up to
// 1,079, so an array that moved its whole tail per insert cost more than the set had, in the page's
// WebAssembly above all.) Emptied runs are kept for the next size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "actmem/core/checked.hpp"

namespace actmem {

class FreeBlocks {
 public:
  using Handle = std::uint32_t;
  using Stream = std::uint32_t;

  // A place in the order, for get_free_block's walk past the first fit (expandable segments).
  struct Cursor {
    std::uint32_t stream = 0, size = 0, slot = 0;  // indices: the stream, its size class, the slot
    bool valid = false;
  };

  void insert(Stream stream, Bytes size, Bytes addr, Handle h) {
    runs_[class_of(made(stream), size)].insert(Entry{addr, h});
  }

  // Block h, cached at (stream, size, addr); false if it is not there.
  bool erase(Stream stream, Bytes size, Bytes addr, Handle h) {
    Cursor c = lower_bound(stream, size);
    if (!c.valid || this->size(c) != size) return false;
    const Run& r = run(c);
    const Entry e{addr, h};
    const std::uint32_t at = same(r.v[r.head], e) ? r.head : r.find(e);
    if (at == r.end() || !same(r.v[at], e)) return false;
    c.slot = at;
    erase(c);
    return true;
  }

  void erase(const Cursor& c) {
    PerStream& s = streams_[c.stream];
    const std::uint32_t b = s.sizes[c.size].run;
    runs_[b].erase(c.slot);
    if (!runs_[b].empty()) return;
    spare_.push_back(b);
    s.sizes.erase(s.sizes.begin() + c.size);
  }

  // The first block of `stream` at least `size` long (invalid: none).
  Cursor lower_bound(Stream stream, Bytes size) const {
    Cursor c;
    const std::uint32_t si = stream_at(stream);
    if (si == streams_.size() || streams_[si].stream != stream) return c;
    const std::vector<SizeClass>& sizes = streams_[si].sizes;
    auto it = size_at(sizes, size);
    if (it == sizes.end()) return c;
    c.stream = si;
    c.size = static_cast<std::uint32_t>(it - sizes.begin());
    c.slot = runs_[it->run].head;
    c.valid = true;
    return c;
  }

  // The block after `c` in the order, within its stream.
  Cursor next(Cursor c) const {
    if (++c.slot < run(c).end()) return c;
    const std::vector<SizeClass>& sizes = streams_[c.stream].sizes;
    if (++c.size >= sizes.size()) return Cursor{};
    c.slot = runs_[sizes[c.size].run].head;
    return c;
  }

  Bytes size(const Cursor& c) const { return streams_[c.stream].sizes[c.size].size; }
  Handle handle(const Cursor& c) const { return run(c).v[c.slot].handle; }

  // Every block's handle, in the order (release_cached_blocks walks the pool so).
  template <class F>
  void for_each(F&& f) const {
    for (const PerStream& s : streams_)
      for (const SizeClass& k : s.sizes) {
        const Run& r = runs_[k.run];
        for (std::uint32_t i = r.head; i < r.end(); ++i) f(r.v[i].handle);
      }
  }

 private:
  // Ordered by address, then handle: a replayed trace can place a segment at an address the
  // model reuses (CachingAllocator::set_next_segment_address), and BlockComparatorSize's ties
  // are the set's, whose key ended with the handle.
  struct Entry {
    Bytes addr = 0;
    Handle handle = 0;
  };
  static bool before(const Entry& a, const Entry& b) {
    return a.addr < b.addr || (a.addr == b.addr && a.handle < b.handle);
  }
  static bool same(const Entry& a, const Entry& b) {
    return a.addr == b.addr && a.handle == b.handle;
  }
  // One size's blocks, ascending by address in v[head, v.size()).
  struct Run {
    std::vector<Entry> v;
    std::uint32_t head = 0;

    std::uint32_t end() const { return static_cast<std::uint32_t>(v.size()); }
    bool empty() const { return head == end(); }
    // The first slot not before `e`.
    std::uint32_t find(const Entry& e) const {
      return static_cast<std::uint32_t>(std::lower_bound(v.begin() + head, v.end(), e, before) -
                                        v.begin());
    }
    void insert(const Entry& e) {
      // A new highest or lowest address needs no search (two inserts in three, 2026-12-05).
      if (empty() || before(v.back(), e)) return v.push_back(e);
      if (head > 0 && before(e, v[head])) {
        v[--head] = e;
        return;
      }
      // Not past the last (above), so `at` is a slot in the run.
      const std::uint32_t at = find(e);
      if (head > 0 && at - head <= end() - at) {
        // The shorter side is the front: it moves down into the room before it.
        std::copy(v.begin() + head, v.begin() + at, v.begin() + head - 1);
        --head;
        v[at - 1] = e;
      } else {
        v.insert(v.begin() + at, e);
      }
    }
    void erase(std::uint32_t at) {
      if (at == head) {
        ++head;
      } else if (at - head < end() - at) {
        std::copy_backward(v.begin() + head, v.begin() + at, v.begin() + at + 1);
        ++head;
      } else {
        v.erase(v.begin() + at);
      }
      if (empty()) {
        v.clear(), head = 0;
      } else if (head > 32 && head > end() - head) {
        // Taken from the front more than added: the room there is given back.
        v.erase(v.begin(), v.begin() + head);
        head = 0;
      }
    }
  };
  struct SizeClass {
    Bytes size = 0;
    std::uint32_t run = 0;
  };
  struct PerStream {
    Stream stream = 0;
    std::vector<SizeClass> sizes;  // ascending, each run non-empty
  };

  const Run& run(const Cursor& c) const { return runs_[streams_[c.stream].sizes[c.size].run]; }

  // Where `stream` is or would go in streams_ (ascending by stream: a job has a handful).
  std::uint32_t stream_at(Stream stream) const {
    std::uint32_t i = 0;
    while (i < streams_.size() && streams_[i].stream < stream) ++i;
    return i;
  }
  // The first size class of at least `size`.
  template <class Sizes>
  static auto size_at(Sizes& sizes, Bytes size) -> decltype(sizes.begin()) {
    return std::lower_bound(sizes.begin(), sizes.end(), size,
                            [](const SizeClass& k, Bytes n) { return k.size < n; });
  }
  // The stream's index, its entry made when absent.
  std::uint32_t made(Stream stream) {
    const std::uint32_t i = stream_at(stream);
    if (i == streams_.size() || streams_[i].stream != stream) {
      PerStream s;
      s.stream = stream;
      streams_.insert(streams_.begin() + i, std::move(s));
    }
    return i;
  }

  // The run of `size` in stream `si`, made (or an emptied one reused) when absent.
  std::uint32_t class_of(std::uint32_t si, Bytes size) {
    std::vector<SizeClass>& sizes = streams_[si].sizes;
    auto it = size_at(sizes, size);
    if (it != sizes.end() && it->size == size) return it->run;
    std::uint32_t b;
    if (!spare_.empty()) {
      b = spare_.back();
      spare_.pop_back();
    } else {
      b = static_cast<std::uint32_t>(runs_.size());
      runs_.emplace_back();
    }
    sizes.insert(it, SizeClass{size, b});
    return b;
  }

  std::vector<PerStream> streams_;
  std::vector<Run> runs_;
  std::vector<std::uint32_t> spare_;  // emptied runs, their capacity kept
};

}  // namespace actmem
