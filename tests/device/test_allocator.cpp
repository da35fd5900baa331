// The caching-allocator model against hand-worked sequences (each following the rule of PyTorch
// 2.11's CUDACachingAllocator.cpp it names) and against a real allocation stream: the H200 training
// step of docs/validation.md §4.3, replayed event by event from its torch.cuda.memory._snapshot().
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "actmem/device/allocator.hpp"

using actmem::AllocatorConfig;
using actmem::Bytes;
using actmem::CachingAllocator;

namespace {
constexpr Bytes kMiB = 1048576;
}

TEST_CASE("allocator round_size: 512-byte multiples, roundup_power2_divisions by interval") {
  CachingAllocator a;
  CHECK(a.round_size(1) == 512);  // size < kMinBlockSize
  CHECK(a.round_size(512) == 512);
  CHECK(a.round_size(513) == 1024);
  CHECK(a.round_size(1200000) == 1200128);  // 2344 x 512 - no divisions by default
  AllocatorConfig c;
  c.roundup_divisions.fill(4);
  CachingAllocator d(c);
  // 1,200,000 lies in [1 MiB, 2 MiB): four steps of 256 KiB, the next is 1,310,720
  // (roundup_power2_next_division's worked example scaled: 1200 -> 1280 with 4 divisions).
  CHECK(d.round_size(1200000) == 1310720);
  CHECK(d.round_size(2 * kMiB) == 2 * kMiB);  // a power of two stays
  // Below 1 MiB the first interval applies; 1,200 is not above 512 x 4, so plain rounding.
  CHECK(d.round_size(1200) == 1536);
  CHECK(d.round_size(3000) == 3072);  // above 2048: steps of 512 between 2048 and 4096
}

TEST_CASE(
    "allocator get_allocation_size: 2 MiB small segments, 20 MiB below 10 MiB, else 2 MiB "
    "multiples") {
  CachingAllocator a;
  CHECK(a.segment_size(512) == 2 * kMiB);
  CHECK(a.segment_size(kMiB) == 2 * kMiB);         // <= kSmallSize: small pool
  CHECK(a.segment_size(kMiB + 512) == 20 * kMiB);  // < kMinLargeAlloc
  CHECK(a.segment_size(10 * kMiB - 512) == 20 * kMiB);
  CHECK(a.segment_size(10 * kMiB) == 10 * kMiB);  // kRoundLarge multiples from here
  CHECK(a.segment_size(10 * kMiB + 1) == 12 * kMiB);
}

TEST_CASE("allocator small pool: blocks split down to 512 B, freed neighbours merge") {
  CachingAllocator a;
  const auto x = a.malloc(100);  // 512 B from a new 2 MiB segment
  CHECK(a.stats().reserved == 2 * kMiB);
  CHECK(a.stats().allocated == 512);
  CHECK(a.stats().requested == 100);
  const auto y = a.malloc(1000);  // 1024 B right after it
  CHECK(a.address(y) == a.address(x) + 512);
  CHECK(a.stats().segments == 1);
  // The rest of the segment is one inactive split block.
  CHECK(a.stats().inactive_split == 2 * kMiB - 1536);
  a.free(x);
  CHECK(a.stats().inactive_split == 2 * kMiB - 1024);
  a.free(y);  // merges with both sides: the segment is one unsplit free block again
  CHECK(a.stats().inactive_split == 0);
  CHECK(a.stats().allocated == 0);
  CHECK(a.stats().reserved == 2 * kMiB);
  const auto z = a.malloc(2 * kMiB - 512 + 1);  // above kSmallSize: the large pool, a new segment
  CHECK(a.block_size(z) == 2 * kMiB);
  CHECK(a.stats().reserved == 2 * kMiB + 20 * kMiB);
}

TEST_CASE("allocator large pool: a rest of 1 MiB or less stays in the block, best fit reuses") {
  CachingAllocator a;
  const auto p = a.malloc(19 * kMiB + 512);  // 20 MiB segment, rest 0.5 MiB: not split
  CHECK(a.block_size(p) == 20 * kMiB);
  CHECK(a.stats().allocated == 20 * kMiB);
  const auto q = a.malloc(12 * kMiB);  // own 12 MiB segment
  const auto r = a.malloc(12 * kMiB);
  CHECK(a.stats().reserved == 44 * kMiB);
  a.free(q);
  a.free(p);
  // 11 MiB fits both free blocks (12 MiB and 20 MiB): best fit takes the 12 MiB one and keeps
  // the whole block, since the 1 MiB rest is not larger than kSmallSize.
  const auto s = a.malloc(11 * kMiB);
  CHECK(a.block_size(s) == 12 * kMiB);
  // 5 MiB: the 20 MiB block is split, its 15 MiB rest cached.
  const auto t = a.malloc(5 * kMiB);
  CHECK(a.block_size(t) == 5 * kMiB);
  CHECK(a.stats().reserved == 44 * kMiB);
  CHECK(a.stats().inactive_split == 15 * kMiB);
  a.free(r);
  a.free(s);
  a.free(t);
  CHECK(a.stats().allocated == 0);
  a.empty_cache();
  CHECK(a.stats().reserved == 0);
  CHECK(a.stats().reserved_peak == 44 * kMiB);
}

TEST_CASE(
    "allocator max_split_size: oversize blocks are never split nor given to smaller "
    "requests") {
  AllocatorConfig c;
  c.max_split_size = 64 * kMiB;
  CachingAllocator a(c);
  const auto big = a.malloc(100 * kMiB);
  a.free(big);
  // 30 MiB < max_split_size may not take the cached 100 MiB oversize block: a new segment.
  const auto small = a.malloc(30 * kMiB);
  CHECK(a.stats().reserved == 130 * kMiB);
  // 90 MiB >= max_split_size takes it whole (within size + kLargeBuffer) without splitting.
  const auto over = a.malloc(90 * kMiB);
  CHECK(a.block_size(over) == 100 * kMiB);
  CHECK(a.stats().reserved == 130 * kMiB);
  a.free(over);
  // 70 MiB: 100 MiB >= 70 MiB + 20 MiB, too much waste: a new segment.
  a.malloc(70 * kMiB);
  CHECK(a.stats().reserved == 200 * kMiB);
  a.free(small);
}

TEST_CASE("allocator expandable_segments: one growing segment per pool mapped in 20 MiB pages") {
  AllocatorConfig c;
  c.expandable_segments = true;
  CachingAllocator a(c);
  const auto x = a.malloc(12 * kMiB);  // one 20 MiB page: 12 MiB + 8 MiB free
  CHECK(a.stats().reserved == 20 * kMiB);
  const auto y = a.malloc(12 * kMiB);  // the free 8 MiB grows by a page into 28 MiB: 12 + 16
  CHECK(a.address(y) == a.address(x) + 12 * kMiB);
  CHECK(a.stats().reserved == 40 * kMiB);
  const auto z = a.malloc(12 * kMiB);  // fits the free 16 MiB: 12 + 4, no new page
  CHECK(a.stats().reserved == 40 * kMiB);
  CHECK(a.address(z) == a.address(y) + 12 * kMiB);
  // Without expandable segments the same three requests take three 12 MiB segments.
  CachingAllocator plain;
  for (int i = 0; i < 3; ++i) plain.malloc(12 * kMiB);
  CHECK(plain.stats().reserved == 36 * kMiB);
  // Large blocks split down to 512 B in this mode (should_split), and inactive_split is not kept.
  const Bytes y_at = a.address(y);
  a.free(y);
  CHECK(a.stats().inactive_split == 0);
  const auto w = a.malloc(kMiB + 512);
  CHECK(a.block_size(w) == kMiB + 512);
  CHECK(a.address(w) == y_at);
  // Small requests use their own pool, in 2 MiB pages.
  a.malloc(100);
  CHECK(a.stats().reserved == 42 * kMiB);
  CHECK(a.stats().segments == 0);  // segment stats count cudaMalloc segments only
}

TEST_CASE(
    "allocator streams: a block is cached for its own stream only (BlockComparatorSize orders by "
    "stream first, get_free_block returns no other stream's block)") {
  CachingAllocator a;
  const auto x = a.malloc(40 * kMiB, 1);  // stream 1's own 40 MiB segment
  CHECK(a.stats().reserved_side == 40 * kMiB);
  const Bytes x_at = a.address(x);
  a.free(x);
  // The default stream cannot take stream 1's cached block: a segment of its own.
  const auto y = a.malloc(30 * kMiB);
  CHECK(a.stats().reserved == 70 * kMiB);
  CHECK(a.address(y) != x_at);
  // Stream 1 takes its block again (split: 30 MiB + 10 MiB cached).
  const auto z = a.malloc(30 * kMiB, 1);
  CHECK(a.address(z) == x_at);
  CHECK(a.stats().reserved == 70 * kMiB);
  // A third stream finds neither.
  a.free(y);
  a.malloc(8 * kMiB, 2);  // below 10 MiB: a 20 MiB large segment
  CHECK(a.stats().reserved == 90 * kMiB);
  CHECK(a.stats().reserved_side == 60 * kMiB);
  // The snapshot names each segment's stream.
  std::map<Bytes, std::uint32_t> streams;
  for (const auto& seg : a.snapshot()) streams[seg.size] = seg.stream;
  CHECK(streams == std::map<Bytes, std::uint32_t>{{20 * kMiB, 2}, {30 * kMiB, 0}, {40 * kMiB, 1}});
  // release_cached_blocks frees every stream's whole cached segments: the default stream's 30.
  a.empty_cache();
  CHECK(a.stats().reserved == 60 * kMiB);
  CHECK(a.stats().reserved_side == 60 * kMiB);
}

TEST_CASE("allocator streams with expandable segments: one growing segment per stream and pool") {
  AllocatorConfig c;
  c.expandable_segments = true;
  CachingAllocator a(c);
  const auto x = a.malloc(12 * kMiB, 1);  // stream 1: one 20 MiB page, 8 MiB free
  const auto y = a.malloc(6 * kMiB);      // the default stream maps a page of its own
  CHECK(a.stats().reserved == 40 * kMiB);
  CHECK(a.address(y) != a.address(x) + 12 * kMiB);
  const auto z = a.malloc(6 * kMiB, 1);  // stream 1's free 8 MiB serves it
  CHECK(a.address(z) == a.address(x) + 12 * kMiB);
  CHECK(a.stats().reserved == 40 * kMiB);
  CHECK(a.stats().reserved_side == 20 * kMiB);
}

TEST_CASE(
    "allocator with a capacity: cached segments are released and the request retried, "
    "then an OOM is counted") {
  CachingAllocator a({}, 64 * kMiB);
  const auto p = a.malloc(40 * kMiB);
  a.free(p);
  a.malloc(30 * kMiB);  // the cached 40 MiB block is split: 30 + 10 cached
  CHECK(a.stats().reserved == 40 * kMiB);
  const auto q = a.malloc(24 * kMiB);  // 40 + 24 = 64 MiB: fits exactly
  a.free(q);
  // 50 MiB: 40 + 24 + 50 > 64: the unsplit cached 24 MiB segment is released, 40 + 50 is still
  // too much: an OOM, recorded.
  a.malloc(50 * kMiB);
  CHECK(a.stats().retries == 1);
  CHECK(a.stats().ooms == 1);
  CHECK(a.stats().reserved == 90 * kMiB);
}

namespace {

// tests/data/snapshots/*.trace (tests/reference/snapshot_trace.py): segments and live blocks at
// the start, the recorded allocations and frees, the final segments and blocks.
struct Replay {
  CachingAllocator alloc;
  std::map<Bytes, CachingAllocator::Handle> live;
  std::vector<std::string> final_lines;
  std::uint64_t allocs = 0, misplaced = 0, segments_expected = 0, segments_made = 0;
  std::string first_miss;
};

void replay(const std::string& path, Replay* r) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::string line;
  bool started = false;
  Bytes pending_segment = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string op;
    ls >> op;
    if (op.empty() || op[0] == '#') continue;
    Bytes addr = 0, size = 0, req = 0;
    if (op == "segment") {
      std::string pool;
      ls >> addr >> size >> pool;
      r->alloc.add_segment(addr, size, pool == "small");
    } else if (op == "block") {
      ls >> addr >> size >> req;
      const auto h = r->alloc.add_live_block(addr, size, req);
      REQUIRE(h != CachingAllocator::kNoHandle);
      r->live[addr] = h;
    } else if (op == "segment_alloc") {
      ls >> addr >> size;
      r->alloc.set_next_segment_address(addr);
      pending_segment = size;
      r->segments_expected += 1;
    } else if (op == "alloc" || op == "free") {
      if (!started) r->alloc.recount_inactive_split(), r->alloc.reset_peaks(), started = true;
      ls >> addr;
      if (op == "free") {
        REQUIRE(r->live.count(addr) == 1);
        r->alloc.free(r->live[addr]);
        r->live.erase(addr);
        continue;
      }
      ls >> req;
      const std::uint64_t before = r->alloc.stats().device_allocs;
      const auto h = r->alloc.malloc(req);
      REQUIRE(h != CachingAllocator::kNoHandle);
      r->allocs += 1;
      if (r->alloc.stats().device_allocs != before) {
        r->segments_made += 1;
        CHECK(pending_segment != 0);
      }
      pending_segment = 0;
      if (r->alloc.address(h) != addr) {
        if (r->misplaced++ == 0)
          r->first_miss = line + " -> model " + std::to_string(r->alloc.address(h));
      }
      r->live[r->alloc.address(h)] = h;
    } else if (op == "final_segment" || op == "final_block") {
      r->final_lines.push_back(line);
    }
  }
}

}  // namespace

TEST_CASE(
    "allocator replays the H200 step (docs/validation.md 4.3): every block at its measured "
    "address, the measured peaks") {
  Replay r;
  replay(std::string(ACTMEM_SOURCE_DIR) + "/tests/data/snapshots/h200-llama-step2.trace", &r);
  INFO("first misplaced allocation: " << r.first_miss);
  CHECK(r.allocs == 561);
  CHECK(r.misplaced == 0);
  CHECK(r.segments_made == r.segments_expected);
  CHECK(r.segments_expected == 2);
  // The second step's torch.cuda.memory_stats() (tests/reference/gpu/step.json, "default").
  const auto& st = r.alloc.stats();
  CHECK(st.allocated_peak == 5025073152u);
  CHECK(st.reserved_peak == 5146411008u);
  CHECK(st.requested_peak == 5020873032u);
  CHECK(st.inactive_split_peak == 1290639872u);
  CHECK(st.segments_peak == 77);
  // The snapshot's final segments and blocks, one for one.
  std::vector<std::string> model;
  for (const auto& seg : r.alloc.snapshot()) {
    model.push_back("final_segment " + std::to_string(seg.address) + " " +
                    std::to_string(seg.size) + " " + (seg.small ? "small" : "large"));
    for (const auto& b : seg.blocks)
      model.push_back("final_block " + std::to_string(b.address) + " " + std::to_string(b.size) +
                      " " + (b.allocated ? "active_allocated" : "inactive"));
  }
  CHECK(model == r.final_lines);
}
