// The caching-allocator model (allocator.hpp), one function per function of PyTorch 2.11's
// c10/cuda/CUDACachingAllocator.cpp that decides sizes: round_size, get_pool, get_allocation_size,
// get_free_block, should_split, alloc_found_block's split, free_block's merge, alloc_block and
// try_allocate_expandable_block, release_cached_blocks. Streams as that code keeps them apart
// (each block and segment belongs to the stream that allocated it); no CUDA graphs, no garbage
// collection threshold (their defaults), no record_stream (the callers modelled never use it:
// FSDP2 holds its buffers until an event instead).
#include "actmem/device/allocator.hpp"

#include <algorithm>

namespace actmem {

namespace {

// Requests above this are refused so that sizes, sums and page counts stay far from wrapping.
constexpr Bytes kMaxRequest = kMaxBytes / 4;

// roundup_power2_next_division (CUDACachingAllocator.cpp): the next of `divisions` equal steps
// between the powers of two around `size`.
Bytes next_division(Bytes size, Bytes divisions) {
  if (size <= 4 || divisions <= 1) return size;
  if ((size & (size - 1)) == 0) return size;
  Bytes floor2 = Bytes{1} << (63 - __builtin_clzll(size));
  const Bytes step = floor2 >> (63 - __builtin_clzll(divisions));
  if (step == 0) return floor2 << 1;
  const Bytes down = size & ~(step - 1);
  return down == size ? size : down + step;
}

}  // namespace

CachingAllocator::CachingAllocator(const AllocatorConfig& cfg, Bytes capacity)
    : cfg_(cfg), capacity_(capacity) {}

Bytes CachingAllocator::round_size(Bytes size) const {
  if (size < kAllocMinBlock) return kAllocMinBlock;
  // CUDAAllocatorConfig::roundup_power2_divisions(size): interval floor(log2(size)) - 20 (1 MiB is
  // interval 0 and everything below shares it), capped at the last.
  const int lg = 63 - __builtin_clzll(size);
  const std::size_t interval =
      std::min(static_cast<std::size_t>(std::max(0, lg - 20)), kRoundupIntervals - 1);
  const Bytes div = cfg_.roundup_divisions[interval];
  if (div > 1 && size > kAllocMinBlock * div) return next_division(size, div);
  return kAllocMinBlock * ceil_div(size, kAllocMinBlock);
}

Bytes CachingAllocator::segment_size(Bytes rounded) const {
  if (rounded <= kAllocSmallSize) return kAllocSmallBuffer;
  if (rounded < kAllocMinLargeAlloc) return kAllocLargeBuffer;
  return kAllocRoundLarge * ceil_div(rounded, kAllocRoundLarge);
}

CachingAllocator::Handle CachingAllocator::new_block(const Block& b) {
  Handle h;
  if (!spare_.empty()) {
    h = spare_.back();
    spare_.pop_back();
    blocks_[h] = b;
  } else {
    h = static_cast<Handle>(blocks_.size());
    blocks_.push_back(b);
  }
  blocks_[h].in_use = true;
  blocks_[h].cached = false;  // a new block joins a free set only through insert_free
  return h;
}

void CachingAllocator::drop_block(Handle h) {
  blocks_[h].in_use = false;
  spare_.push_back(h);
}

void CachingAllocator::insert_free(Handle h) {
  Block& b = blocks_[h];
  if (b.mapped) {
    pool(b.small).insert(b.stream, b.size, b.addr, h);
    b.cached = true;
  } else {
    (b.small ? small_unmapped_ : large_unmapped_).emplace(b.stream, b.addr, h);
  }
}

void CachingAllocator::erase_free(Handle h) {
  Block& b = blocks_[h];
  if (b.cached) {
    pool(b.small).erase(b.stream, b.size, b.addr, h);
    b.cached = false;
  } else if (!b.mapped) {
    (b.small ? small_unmapped_ : large_unmapped_).erase({b.stream, b.addr, h});
  }
}

bool CachingAllocator::should_split(const Block& b, Bytes size) const {
  const Bytes remaining = b.size - size;
  if (b.small || cfg_.expandable_segments) return remaining >= kAllocMinBlock;
  return size < cfg_.max_split_size && remaining > kAllocSmallSize;
}

// get_free_block: the smallest cached block of the stream at least `size` long (ties: lowest
// address), with expandable segments' preference for blocks that cannot grow, and the oversize
// rules.
CachingAllocator::Handle CachingAllocator::find_free(Bytes size, bool small, Stream stream) {
  FreeBlocks& p = pool(small);
  FreeBlocks::Cursor it = p.lower_bound(stream, size);
  if (!it.valid) return kNoHandle;
  if (cfg_.expandable_segments) {
    // "for the purposes of best fit we consider its size to be the size it can expand to".
    auto expandable_size = [&](Handle h) {
      const Block& b = blocks_[h];
      return b.size + (b.next != kNoHandle && !blocks_[b.next].mapped ? blocks_[b.next].size : 0);
    };
    for (FreeBlocks::Cursor next = p.next(it);
         next.valid && expandable_size(p.handle(next)) < expandable_size(p.handle(it));
         next = p.next(next))
      it = next;
  }
  const Bytes found = p.size(it);
  // "Do not return an oversized block for a large request" and "Allow oversized block size to be
  // rounded up but within a limit".
  if (size < cfg_.max_split_size && found >= cfg_.max_split_size) return kNoHandle;
  if (size >= cfg_.max_split_size && found >= size + cfg_.max_non_split_rounding) return kNoHandle;
  const Handle h = p.handle(it);
  p.erase(it);
  blocks_[h].cached = false;
  return h;
}

// alloc_block without expandable segments: one cudaMalloc of get_allocation_size(size).
CachingAllocator::Handle CachingAllocator::new_segment(Bytes size, bool small, Stream stream) {
  const Bytes bytes = segment_size(size);
  if (capacity_ != 0 && stats_.reserved + bytes > capacity_) return kNoHandle;
  Segment seg;
  seg.size = bytes;
  seg.small = small;
  seg.stream = stream;
  seg.live = true;
  if (forced_) {
    seg.addr = next_segment_address_;
    forced_ = false;
  } else {
    seg.addr = next_segment_address_;
    next_segment_address_ += ceil_div(bytes, kAllocSmallBuffer) * kAllocSmallBuffer;
  }
  Block b;
  b.addr = seg.addr;
  b.size = bytes;
  b.small = small;
  b.stream = stream;
  b.segment = static_cast<std::uint32_t>(segments_.size());
  const Handle h = new_block(b);
  seg.first = h;
  segments_.push_back(seg);
  stats_.reserved += bytes;
  if (stream != 0) stats_.reserved_side += bytes;
  stats_.segments += 1;
  stats_.device_allocs += 1;
  note_peaks();
  return h;
}

// try_allocate_expandable_block: the stream's one growing segment in the pool (a virtual range as
// large as the device) maps pages of kSmallBuffer or kLargeBuffer at its lowest unmapped address
// that, with the free mapped block before it, has room; the mapped pages join that free block.
CachingAllocator::Handle CachingAllocator::grow_expandable(Bytes size, bool small, Stream stream) {
  const Bytes page = small ? kAllocSmallBuffer : kAllocLargeBuffer;
  std::set<UnmappedKey>& unmapped = small ? small_unmapped_ : large_unmapped_;
  auto allocatable = [&](Handle h) { return h != kNoHandle && !blocks_[h].allocated; };
  Handle cand = kNoHandle;
  for (auto e = unmapped.lower_bound({stream, 0, 0});
       e != unmapped.end() && std::get<0>(*e) == stream; ++e) {
    Handle c = std::get<2>(*e);
    if (allocatable(blocks_[c].prev)) c = blocks_[c].prev;
    Bytes room = 0;
    for (Handle b = c; room < size && allocatable(b); b = blocks_[b].next) room += blocks_[b].size;
    if (room >= size) {
      cand = c;
      break;
    }
  }
  if (cand == kNoHandle) {
    // A new virtual range: the whole device (unlimited here: a range no request can exhaust).
    Segment seg;
    seg.small = small;
    seg.stream = stream;
    seg.expandable = true;
    seg.live = true;
    seg.size = kMaxRequest * 2;
    seg.addr = next_segment_address_;
    next_segment_address_ += Bytes{1} << 44;
    Block b;
    b.addr = seg.addr;
    b.size = seg.size;
    b.small = small;
    b.stream = stream;
    b.mapped = false;
    b.segment = static_cast<std::uint32_t>(segments_.size());
    cand = new_block(b);
    seg.first = cand;
    segments_.push_back(seg);
    insert_free(cand);
  }
  // map_block: map whole pages at the start of an unmapped block, split off the rest unmapped,
  // merge with free mapped neighbours.
  auto map = [&](Handle h, Bytes want) -> Handle {
    const Bytes bytes = ceil_div(want, page) * page;
    if (capacity_ != 0 && stats_.reserved + bytes > capacity_) return kNoHandle;
    erase_free(h);
    Block& b = blocks_[h];
    b.mapped = true;
    if (bytes < b.size) {
      Block rest;
      rest.addr = b.addr + bytes;
      rest.size = b.size - bytes;
      rest.small = b.small;
      rest.stream = b.stream;
      rest.mapped = false;
      rest.segment = b.segment;
      rest.prev = h;
      rest.next = b.next;
      const Handle r = new_block(rest);
      Block& bb = blocks_[h];  // new_block may have moved the vector
      if (bb.next != kNoHandle) blocks_[bb.next].prev = r;
      bb.next = r;
      bb.size = bytes;
      insert_free(r);
    }
    Handle out = merge(h, blocks_[h].prev);
    out = merge(out, blocks_[out].next);
    insert_free(out);
    stats_.reserved += bytes;
    if (stream != 0) stats_.reserved_side += bytes;
    stats_.device_allocs += 1;
    note_peaks();
    return out;
  };
  if (!blocks_[cand].mapped) {
    cand = map(cand, std::min(blocks_[cand].size, size));
    if (cand == kNoHandle) return kNoHandle;
  }
  while (blocks_[cand].size < size) {
    const Handle nx = blocks_[cand].next;
    const Bytes remaining = size - blocks_[cand].size;
    cand = map(nx, std::min(remaining, blocks_[nx].size));
    if (cand == kNoHandle) return kNoHandle;
  }
  erase_free(cand);
  return cand;
}

// try_merge_blocks: `src`, when it exists, is free and in the same mapped state, joins `dst`;
// returns the merged block's handle (dst's).
CachingAllocator::Handle CachingAllocator::merge(Handle dst, Handle src) {
  if (src == kNoHandle) return dst;
  Block& s = blocks_[src];
  Block& d = blocks_[dst];
  if (s.allocated || s.mapped != d.mapped) return dst;
  erase_free(src);
  if (d.prev == src) {
    d.addr = s.addr;
    d.prev = s.prev;
    if (d.prev != kNoHandle) blocks_[d.prev].next = dst;
    if (segments_[d.segment].first == src) segments_[d.segment].first = dst;
  } else {
    d.next = s.next;
    if (d.next != kNoHandle) blocks_[d.next].prev = dst;
  }
  d.size += s.size;
  last_subsumed_ = s.size;
  drop_block(src);
  return dst;
}

void CachingAllocator::note_peaks() {
  note_block_peaks();
  stats_.reserved_peak = std::max(stats_.reserved_peak, stats_.reserved);
  stats_.segments_peak = std::max(stats_.segments_peak, stats_.segments);
}

void CachingAllocator::note_block_peaks() {
  stats_.allocated_peak = std::max(stats_.allocated_peak, stats_.allocated);
  stats_.requested_peak = std::max(stats_.requested_peak, stats_.requested);
  stats_.inactive_split_peak = std::max(stats_.inactive_split_peak, stats_.inactive_split);
}

void CachingAllocator::reset_peaks() {
  stats_.allocated_peak = stats_.allocated;
  stats_.reserved_peak = stats_.reserved;
  stats_.requested_peak = stats_.requested;
  stats_.inactive_split_peak = stats_.inactive_split;
  stats_.segments_peak = stats_.segments;
}

// release_cached_blocks: every cached block that is a whole segment goes back to the device (with
// expandable segments, free whole pages are unmapped; modelled as the free blocks' full pages).
void CachingAllocator::release_cached() {
  for (bool small : {true, false}) {
    std::vector<Handle> whole;
    pool(small).for_each([&](Handle h) {
      const Block& b = blocks_[h];
      if (b.prev == kNoHandle && b.next == kNoHandle) whole.push_back(h);
    });
    for (Handle h : whole) {
      erase_free(h);
      Segment& seg = segments_[blocks_[h].segment];
      seg.live = false;
      stats_.reserved -= blocks_[h].size;
      if (seg.stream != 0) stats_.reserved_side -= blocks_[h].size;
      stats_.segments -= 1;
      stats_.device_frees += 1;
      drop_block(h);
    }
  }
}

void CachingAllocator::empty_cache() {
  release_cached();
}

// The first `n` bytes of block h become a new block just before it (h keeps the rest): the split
// of alloc_found_block, and the replay's cut in front of a live block.
CachingAllocator::Handle CachingAllocator::split_front(Handle h, Bytes n) {
  Block front = blocks_[h];
  front.size = n;
  front.next = h;
  const Handle f = new_block(front);
  Block& rest = blocks_[h];  // new_block may have moved the vector
  if (rest.prev != kNoHandle) blocks_[rest.prev].next = f;
  if (segments_[rest.segment].first == h) segments_[rest.segment].first = f;
  rest.prev = f;
  rest.addr += n;
  rest.size -= n;
  return f;
}

CachingAllocator::Handle CachingAllocator::malloc(Bytes orig, Stream stream) {
  if (orig > kMaxRequest) return kNoHandle;
  const Bytes size = round_size(orig);
  const bool small = size <= kAllocSmallSize;
  Handle h = find_free(size, small, stream);
  if (h == kNoHandle) {
    auto alloc_block = [&] {
      return cfg_.expandable_segments ? grow_expandable(size, small, stream)
                                      : new_segment(size, small, stream);
    };
    h = alloc_block();
    if (h == kNoHandle) {
      // OOM path: free the cache and retry once (alloc_block with isRetry).
      release_cached();
      stats_.retries += 1;
      h = alloc_block();
    }
    if (h == kNoHandle) {
      // A real run stops here with torch.OutOfMemoryError; the model records it and goes on
      // without the limit so the peaks show the shortfall.
      stats_.ooms += 1;
      const Bytes cap = capacity_;
      capacity_ = 0;
      h = alloc_block();
      capacity_ = cap;
    }
  }
  // alloc_found_block: the request takes the front of the block; a large enough rest stays
  // cached.
  const bool expandable = segments_[blocks_[h].segment].expandable;
  const bool already_split = blocks_[h].prev != kNoHandle || blocks_[h].next != kNoHandle;
  if (should_split(blocks_[h], size)) {
    const Handle f = split_front(h, size);
    insert_free(h);
    if (!expandable) {
      if (already_split)
        stats_.inactive_split -= size;  // an inactive split block shrinks by `size`
      else
        stats_.inactive_split += blocks_[h].size;  // a new inactive split block
    }
    h = f;
  } else if (already_split && !expandable) {
    stats_.inactive_split -= blocks_[h].size;
  }
  Block& b = blocks_[h];
  b.allocated = true;
  b.requested = orig;
  stats_.allocated += b.size;
  stats_.requested += orig;
  // Reserved bytes and segments moved only in alloc_block, which noted their peaks.
  note_block_peaks();
  return h;
}

// free_block: merge with free neighbours, cache; inactive_split follows the net change.
void CachingAllocator::free(Handle h) {
  if (h >= blocks_.size() || !blocks_[h].in_use || !blocks_[h].allocated) return;
  Block& b = blocks_[h];
  const Bytes original = b.size, requested = b.requested;
  b.allocated = false;
  std::int64_t split_delta = 0;
  const Handle cands[2] = {b.prev, b.next};
  for (Handle c : cands) {
    last_subsumed_ = 0;
    merge(h, c);
    if (last_subsumed_ > 0) split_delta -= static_cast<std::int64_t>(last_subsumed_);
  }
  const Block& m = blocks_[h];
  if (m.prev != kNoHandle || m.next != kNoHandle) split_delta += static_cast<std::int64_t>(m.size);
  insert_free(h);
  if (!segments_[m.segment].expandable)
    stats_.inactive_split =
        static_cast<Bytes>(static_cast<std::int64_t>(stats_.inactive_split) + split_delta);
  stats_.allocated -= original;
  stats_.requested -= requested;
  // Only inactive_split can have grown here.
  stats_.inactive_split_peak = std::max(stats_.inactive_split_peak, stats_.inactive_split);
}

void CachingAllocator::recount_inactive_split() {
  stats_.inactive_split = 0;
  for (const Segment& s : segments_)
    if (s.live && !s.expandable)
      for (Handle x = s.first; x != kNoHandle; x = blocks_[x].next) {
        const Block& b = blocks_[x];
        if (!b.allocated && (b.prev != kNoHandle || b.next != kNoHandle))
          stats_.inactive_split += b.size;
      }
  note_peaks();
}

void CachingAllocator::add_segment(Bytes address, Bytes size, bool small, Stream stream) {
  Segment seg;
  seg.addr = address;
  seg.size = size;
  seg.small = small;
  seg.stream = stream;
  seg.live = true;
  Block b;
  b.addr = address;
  b.size = size;
  b.small = small;
  b.stream = stream;
  b.segment = static_cast<std::uint32_t>(segments_.size());
  const Handle h = new_block(b);
  seg.first = h;
  segment_at_[address] = static_cast<std::uint32_t>(segments_.size());
  segments_.push_back(seg);
  insert_free(h);
  stats_.reserved += size;
  if (stream != 0) stats_.reserved_side += size;
  stats_.segments += 1;
  note_peaks();
}

CachingAllocator::Handle CachingAllocator::add_live_block(Bytes address, Bytes size,
                                                          Bytes requested) {
  // The free block of a live segment that holds [address, address + size): the segment by
  // address, its blocks from the last one added (callers add a segment's blocks in address
  // order, so the free tail is the usual answer).
  auto it = segment_at_.upper_bound(address);
  if (it == segment_at_.begin()) return kNoHandle;
  --it;
  {
    const Segment& seg = segments_[it->second];
    if (!seg.live || address - seg.addr >= seg.size) return kNoHandle;
    Handle start = seg.first;
    if (tail_ != kNoHandle && blocks_[tail_].in_use && blocks_[tail_].segment == it->second &&
        blocks_[tail_].addr <= address)
      start = tail_;
    for (Handle f = start; f != kNoHandle; f = blocks_[f].next) {
      const Block& b = blocks_[f];
      if (address < b.addr || address - b.addr >= b.size) continue;
      if (b.allocated || size > b.size - (address - b.addr)) return kNoHandle;
      erase_free(f);
      // Cut [b.addr, address) off the front, [address + size, end) off the back; both stay free.
      Handle mid = f;
      if (address > b.addr) insert_free(split_front(f, address - b.addr));
      Block& bm = blocks_[mid];
      if (bm.size > size) {
        Block back = bm;
        back.addr = address + size;
        back.size = bm.size - size;
        back.prev = mid;
        const Handle bk = new_block(back);
        Block& b2 = blocks_[mid];
        if (b2.next != kNoHandle) blocks_[b2.next].prev = bk;
        b2.next = bk;
        b2.size = size;
        insert_free(bk);
        tail_ = bk;
      }
      Block& live = blocks_[mid];
      live.allocated = true;
      live.requested = requested;
      stats_.allocated += size;
      stats_.requested += requested;
      // The free pieces of split segments are inactive split bytes: recounted by the caller once
      // every live block is in (recount_inactive_split), not here (that is quadratic).
      note_peaks();
      return mid;
    }
  }
  return kNoHandle;
}

void CachingAllocator::rank_segments() {
  by_addr_.clear();
  for (std::uint32_t i = 0; i < segments_.size(); ++i)
    if (segments_[i].live) by_addr_.push_back(i);
  // The model's segments are made at rising addresses, so they are in order already unless a
  // replayed trace placed them (add_segment, set_next_segment_address).
  auto by_address = [&](std::uint32_t x, std::uint32_t y) {
    return segments_[x].addr < segments_[y].addr;
  };
  if (!std::is_sorted(by_addr_.begin(), by_addr_.end(), by_address))
    std::sort(by_addr_.begin(), by_addr_.end(), by_address);
  rank_of_.resize(segments_.size());
  for (std::uint32_t k = 0; k < by_addr_.size(); ++k) rank_of_[by_addr_[k]] = k;
}

std::vector<AllocatorSegment> CachingAllocator::snapshot() const {
  std::vector<AllocatorSegment> out;
  for (const Segment& seg : segments_) {
    if (!seg.live) continue;
    if (seg.expandable) {
      // As the snapshot shows expandable segments: each mapped run is a segment.
      AllocatorSegment cur;
      bool open = false;
      for (Handle h = seg.first; h != kNoHandle; h = blocks_[h].next) {
        const Block& b = blocks_[h];
        if (!b.mapped) {
          if (open) out.push_back(cur), open = false;
          continue;
        }
        if (!open) cur = AllocatorSegment{b.addr, 0, seg.small, seg.stream, {}}, open = true;
        cur.size += b.size;
        cur.blocks.push_back(AllocatorBlock{b.addr, b.size, b.requested, b.allocated});
      }
      if (open) out.push_back(cur);
      continue;
    }
    AllocatorSegment s{seg.addr, seg.size, seg.small, seg.stream, {}};
    for (Handle h = seg.first; h != kNoHandle; h = blocks_[h].next) {
      const Block& b = blocks_[h];
      s.blocks.push_back(AllocatorBlock{b.addr, b.size, b.requested, b.allocated});
    }
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const AllocatorSegment& a, const AllocatorSegment& b) {
    return a.address < b.address;
  });
  return out;
}

}  // namespace actmem
