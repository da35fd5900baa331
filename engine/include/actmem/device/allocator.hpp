// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp as of PyTorch
// 2.11): what `torch.cuda.memory_allocated` and `memory_reserved` would report for a stream of
// tensor allocations and frees on one device. It rounds, picks the small or large pool, finds the
// best-fitting cached block of the request's CUDA stream, splits and merges blocks and reserves
// segments exactly as that code does, so reserved - allocated is the fragmentation of the run, not
// a percentage. Each stream's blocks are cached apart (BlockComparatorSize orders by stream first,
// get_free_block takes only a block of the request's stream): a block freed by one stream's
// tensor is never reused by another's.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "actmem/config/allocator_config.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/device/free_blocks.hpp"

namespace actmem {

// What torch.cuda.memory_stats() calls allocated_bytes, reserved_bytes, requested_bytes and
// inactive_split_bytes ("all" pools), with their peaks, and the segment counts.
struct AllocatorStats {
  Bytes allocated = 0, reserved = 0, requested = 0, inactive_split = 0;
  Bytes allocated_peak = 0, reserved_peak = 0, requested_peak = 0, inactive_split_peak = 0;
  std::uint64_t segments = 0, segments_peak = 0, device_allocs = 0, device_frees = 0;
  std::uint64_t ooms = 0, retries = 0;  // with a capacity: cache flushes, and requests that failed
  Bytes reserved_side = 0;  // of `reserved`, the segments of streams other than the default (0)
};

// One block as the snapshot shows it (segment by segment, in address order).
struct AllocatorBlock {
  Bytes address = 0, size = 0, requested = 0;
  bool allocated = false;
};
struct AllocatorSegment {
  Bytes address = 0, size = 0;
  bool small = false;
  std::uint32_t stream = 0;
  std::vector<AllocatorBlock> blocks;
};

class CachingAllocator {
 public:
  using Handle = std::uint32_t;
  static constexpr Handle kNoHandle = ~Handle{0};
  // A CUDA stream, numbered by the caller (0: the default stream).
  using Stream = std::uint32_t;

  // `capacity`: the bytes the device can still give (0: unlimited). When a new segment would pass
  // it, the allocator frees its cached whole segments and retries (release_cached_blocks), and a
  // request that still cannot be served counts as an OOM and is then served anyway, so the stream
  // goes on and the peaks say by how much it is short.
  explicit CachingAllocator(const AllocatorConfig& cfg = {}, Bytes capacity = 0);

  // The size a request becomes (round_size) and the segment it would need (get_allocation_size).
  Bytes round_size(Bytes size) const;
  Bytes segment_size(Bytes rounded) const;

  // Allocates `size` bytes on `stream`; the handle names the block until free(). A request over
  // kMaxBytes / 2 is refused (kNoHandle) so no sum in the model can wrap.
  Handle malloc(Bytes size, Stream stream = 0);
  void free(Handle h);
  // torch.cuda.empty_cache(): every segment with no allocated block goes back to the device.
  void empty_cache();

  // Replay: the address the next new segment gets (a recorded trace's segment_alloc), instead of
  // the model's own increasing addresses.
  void set_next_segment_address(Bytes address) { next_segment_address_ = address, forced_ = true; }
  // Replay: a segment that exists before the stream starts, and a live block inside one such
  // segment (add_live_block looks only among add_segment's segments).
  void add_segment(Bytes address, Bytes size, bool small, Stream stream = 0);
  // Blocks are found by address; a segment's blocks are best added in address order. Call
  // recount_inactive_split() once all are in.
  Handle add_live_block(Bytes address, Bytes size, Bytes requested);
  void recount_inactive_split();

  Bytes address(Handle h) const { return blocks_[h].addr; }
  Bytes block_size(Handle h) const { return blocks_[h].size; }
  const AllocatorStats& stats() const { return stats_; }
  void reset_peaks();
  // The segments and blocks in address order, as torch.cuda.memory._snapshot() lists them.
  std::vector<AllocatorSegment> snapshot() const;

  // The state every later decision depends on, as words given to `put` in order: the current
  // stats (not the peaks or counters), then each live segment in address order with its blocks,
  // every address written as (the segment's rank by address, the offset in it). Two states with
  // equal words answer every later request stream alike: each decision compares sizes and the
  // order of addresses, and a new segment always lands above every existing one (device/replay.cpp
  // proves a step's steady state periodic with it). Sets the ranks place() reads.
  template <class Put>
  void canonical(Put&& put) {
    rank_segments();
    const AllocatorStats& st = stats_;
    for (Bytes w : {st.allocated, st.reserved, st.requested, st.inactive_split, st.segments})
      put(w);
    put(by_addr_.size());
    for (std::uint32_t i : by_addr_) {
      const Segment& seg = segments_[i];
      put(seg.size);
      put(std::uint64_t{seg.small} | std::uint64_t{seg.expandable} << 1 |
          std::uint64_t{seg.stream} << 2);
      for (Handle h = seg.first; h != kNoHandle; h = blocks_[h].next) {
        const Block& b = blocks_[h];
        put(b.addr - seg.addr);
        put(b.size);
        put(b.allocated ? b.requested : 0);  // a free block's last request decides nothing
        put(std::uint64_t{b.allocated} | std::uint64_t{b.mapped} << 1);
      }
      put(kMaxBytes);  // the segment's end (no block's offset reaches it)
    }
  }
  // Block h's place as of the last canonical(): the segment's rank and the offset.
  template <class Put>
  void place(Handle h, Put&& put) const {
    if (h == kNoHandle || h >= blocks_.size() || !blocks_[h].in_use) {
      put(~std::uint64_t{0});
      put(~std::uint64_t{0});
      return;
    }
    const Block& b = blocks_[h];
    put(rank_of_[b.segment]);
    put(b.addr - segments_[b.segment].addr);
  }

 private:
  // Expandable segments' unmapped ranges as BlockComparatorAddress orders them: stream, address.
  using UnmappedKey = std::tuple<Stream, Bytes, Handle>;
  struct Block {
    Bytes addr = 0, size = 0, requested = 0;
    std::uint32_t segment = 0;
    Stream stream = 0;
    Handle prev = kNoHandle, next = kNoHandle;
    bool allocated = false, small = false, in_use = false;  // in_use: the slot holds a block
    bool mapped = true;   // false: unmapped pages of an expandable segment
    bool cached = false;  // mapped and in its pool's free blocks
  };
  struct Segment {
    Bytes addr = 0, size = 0;
    bool small = false, expandable = false, live = false;
    Stream stream = 0;
    Handle first = kNoHandle;
  };
  Handle new_block(const Block& b);
  void drop_block(Handle h);
  FreeBlocks& pool(bool small) { return small ? small_free_ : large_free_; }
  void insert_free(Handle h);
  void erase_free(Handle h);
  Handle find_free(Bytes size, bool small, Stream stream);
  Handle new_segment(Bytes size, bool small, Stream stream);
  Handle grow_expandable(Bytes size, bool small, Stream stream);
  Handle merge(Handle dst, Handle src);
  Handle split_front(Handle h, Bytes n);
  bool should_split(const Block& b, Bytes size) const;
  void release_cached();
  void note_peaks();
  void note_block_peaks();  // allocated, requested and inactive_split only (malloc's changes)
  void rank_segments();     // canonical(): the live segments in address order, their ranks

  AllocatorConfig cfg_;
  Bytes capacity_ = 0;
  std::vector<Block> blocks_;
  std::vector<Handle> spare_;
  std::vector<Segment> segments_;
  FreeBlocks small_free_, large_free_;  // each pool's cached blocks (free_blocks.hpp)
  // Expandable segments' unmapped ranges by address (BlockPool::unmapped).
  std::set<UnmappedKey> small_unmapped_, large_unmapped_;
  Bytes last_subsumed_ = 0;  // the size merge() last absorbed (free_block's stats)
  // add_segment's segments by address (add_live_block): the model's own segments stay out, a map
  // insert per new segment being 2% of a view's replays.
  std::map<Bytes, std::uint32_t> segment_at_;
  Handle tail_ = kNoHandle;  // the free rest add_live_block last cut
  AllocatorStats stats_;
  std::vector<std::uint32_t> rank_of_;  // canonical(): each segment's rank by address
  std::vector<std::uint32_t> by_addr_;  // canonical()'s scratch: live segments in address order
  Bytes next_segment_address_ = Bytes{1} << 40;
  bool forced_ = false;
};

}  // namespace actmem
