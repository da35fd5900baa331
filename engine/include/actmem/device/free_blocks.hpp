// One pool's cached blocks in the order PyTorch's BlockComparatorSize gives them (stream, then
// size, then address; c10/cuda/CUDACachingAllocator.cpp), answering get_free_block's question:
// the smallest block of a stream at least n bytes long, lowest address first among equals.
//
// Why not a std::set: the replay inserts and erases a cached block for nearly every tensor it
// allocates or frees (135,000 inserts per 405B view, into a pool of 170 blocks on average, up to
// 1,520: perf and a count, 2026-12-05), and the set's pointer-chasing was 40% of a view. A step's
// tensors come in few sizes, so the blocks are kept per size: each stream has a sorted array of
// the sizes it caches, each size an array of its blocks by address, highest first, so the lowest
// (the one get_free_block takes) comes off the back. Emptied arrays are kept for the next size.
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

  // A place in the order, for get_free_block's walk over the blocks past the first fit
  // (expandable segments).
  struct Cursor {
    std::uint32_t stream = 0, size = 0, slot = 0;  // indices: stream, its size class, the block
    bool valid = false;
  };

  void insert(Stream stream, Bytes size, Bytes addr, Handle h) {
    std::vector<Entry>& v = buckets_[class_of(of(stream, true), size)];
    const Entry e{addr, h};
    v.insert(std::upper_bound(v.begin(), v.end(), e, higher), e);
  }

  void erase(Stream stream, Bytes size, Bytes addr) {
    Cursor c;
    if (!find(stream, size, addr, &c)) return;
    erase(c);
  }

  void erase(const Cursor& c) {
    PerStream& s = streams_[c.stream];
    const std::uint32_t b = s.sizes[c.size].bucket;
    std::vector<Entry>& v = buckets_[b];
    v.erase(v.begin() + c.slot);
    if (!v.empty()) return;
    spare_.push_back(b);
    s.sizes.erase(s.sizes.begin() + c.size);
  }

  // The first block of `stream` at least `size` long (invalid: none).
  Cursor lower_bound(Stream stream, Bytes size) const {
    Cursor c;
    const std::uint32_t si = of(stream);
    if (si == kNone) return c;
    const std::vector<SizeClass>& sizes = streams_[si].sizes;
    auto it = std::lower_bound(sizes.begin(), sizes.end(), size,
                               [](const SizeClass& k, Bytes n) { return k.size < n; });
    if (it == sizes.end()) return c;
    c.stream = si;
    c.size = static_cast<std::uint32_t>(it - sizes.begin());
    c.slot = static_cast<std::uint32_t>(buckets_[it->bucket].size() - 1);
    c.valid = true;
    return c;
  }

  // The block after `c` in the order, within its stream.
  Cursor next(Cursor c) const {
    if (c.slot > 0) {
      --c.slot;
      return c;
    }
    const std::vector<SizeClass>& sizes = streams_[c.stream].sizes;
    if (++c.size >= sizes.size()) return Cursor{};
    c.slot = static_cast<std::uint32_t>(buckets_[sizes[c.size].bucket].size() - 1);
    return c;
  }

  Bytes size(const Cursor& c) const { return streams_[c.stream].sizes[c.size].size; }
  Handle handle(const Cursor& c) const {
    return buckets_[streams_[c.stream].sizes[c.size].bucket][c.slot].handle;
  }

  // Every block's handle, in the order (release_cached_blocks walks the pool so).
  template <class F>
  void for_each(F&& f) const {
    for (const PerStream& s : streams_)
      for (const SizeClass& k : s.sizes) {
        const std::vector<Entry>& v = buckets_[k.bucket];
        for (auto e = v.rbegin(); e != v.rend(); ++e) f(e->handle);
      }
  }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Entry {
    Bytes addr = 0;
    Handle handle = 0;
  };
  static bool higher(const Entry& a, const Entry& b) { return a.addr > b.addr; }
  struct SizeClass {
    Bytes size = 0;
    std::uint32_t bucket = 0;
  };
  struct PerStream {
    Stream stream = 0;
    std::vector<SizeClass> sizes;  // ascending, each non-empty
  };

  // The stream's index (streams_ ascending by stream), made when `make`; kNone if absent.
  std::uint32_t of(Stream stream, bool make = false) {
    auto it = std::lower_bound(streams_.begin(), streams_.end(), stream,
                               [](const PerStream& s, Stream x) { return s.stream < x; });
    if (it == streams_.end() || it->stream != stream) {
      if (!make) return kNone;
      PerStream s;
      s.stream = stream;
      it = streams_.insert(it, std::move(s));
    }
    return static_cast<std::uint32_t>(it - streams_.begin());
  }
  std::uint32_t of(Stream stream) const {
    auto it = std::lower_bound(streams_.begin(), streams_.end(), stream,
                               [](const PerStream& s, Stream x) { return s.stream < x; });
    return it == streams_.end() || it->stream != stream
               ? kNone
               : static_cast<std::uint32_t>(it - streams_.begin());
  }

  // The bucket of `size` in stream `si` (made when absent).
  std::uint32_t class_of(std::uint32_t si, Bytes size) {
    std::vector<SizeClass>& sizes = streams_[si].sizes;
    auto it = std::lower_bound(sizes.begin(), sizes.end(), size,
                               [](const SizeClass& k, Bytes n) { return k.size < n; });
    if (it != sizes.end() && it->size == size) return it->bucket;
    std::uint32_t b;
    if (!spare_.empty()) {
      b = spare_.back();
      spare_.pop_back();
    } else {
      b = static_cast<std::uint32_t>(buckets_.size());
      buckets_.emplace_back();
    }
    sizes.insert(it, SizeClass{size, b});
    return b;
  }
  bool find(Stream stream, Bytes size, Bytes addr, Cursor* c) const {
    *c = lower_bound(stream, size);
    if (!c->valid || this->size(*c) != size) return false;
    const std::vector<Entry>& v = buckets_[streams_[c->stream].sizes[c->size].bucket];
    auto it = std::lower_bound(v.begin(), v.end(), Entry{addr, 0}, higher);
    if (it == v.end() || it->addr != addr) return false;
    c->slot = static_cast<std::uint32_t>(it - v.begin());
    return true;
  }

  std::vector<PerStream> streams_;
  std::vector<std::vector<Entry>> buckets_;
  std::vector<std::uint32_t> spare_;  // emptied buckets, their capacity kept
};

}  // namespace actmem
