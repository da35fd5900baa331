// FreeBlocks (free_blocks.hpp) against the structure it replaced: a std::set of (stream, size,
// address, handle), PyTorch 2.11 CUDACachingAllocator.cpp's BlockComparatorSize order with the
// handle as the last tie-break. Seeded random inserts and erases over few sizes and addresses (so
// runs fill, empty, shift at both ends and compact; equal addresses occur, as a replayed trace's
// forced segment address can give them), every query compared after each step.
#include <cstdint>
#include <iterator>
#include <set>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "actmem/device/free_blocks.hpp"

using namespace actmem;

namespace {

using Key = std::tuple<std::uint32_t, Bytes, Bytes, std::uint32_t>;  // stream, size, addr, handle

// The set's answer to lower_bound(stream, size), then every later block of the stream.
std::vector<std::uint32_t> set_walk(const std::set<Key>& s, std::uint32_t stream, Bytes size) {
  std::vector<std::uint32_t> out;
  for (auto it = s.lower_bound(Key{stream, size, 0, 0});
       it != s.end() && std::get<0>(*it) == stream; ++it)
    out.push_back(std::get<3>(*it));
  return out;
}

std::vector<std::uint32_t> index_walk(const FreeBlocks& f, std::uint32_t stream, Bytes size) {
  std::vector<std::uint32_t> out;
  for (FreeBlocks::Cursor c = f.lower_bound(stream, size); c.valid; c = f.next(c))
    out.push_back(f.handle(c));
  return out;
}

}  // namespace

TEST_CASE("FreeBlocks answers as the std::set of (stream, size, address, handle) did",
          "[allocator]") {
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  auto rnd = [&](std::uint64_t n) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x % n;
  };
  std::set<Key> ref;
  FreeBlocks f;
  std::uint32_t next_handle = 0;
  std::size_t equal_addresses = 0, emptied = 0;
  for (int step = 0; step < 20000; ++step) {
    if (ref.empty() || rnd(100) < 55) {
      const std::uint32_t stream = static_cast<std::uint32_t>(rnd(3));
      const Bytes size = (1 + rnd(4)) << 20, addr = rnd(64) << 21;
      const Key k{stream, size, addr, next_handle++};
      for (const Key& o : ref)
        if (std::get<0>(o) == stream && std::get<1>(o) == size && std::get<2>(o) == addr)
          ++equal_addresses;
      ref.insert(k);
      f.insert(stream, size, addr, std::get<3>(k));
    } else {
      // A block taken from anywhere (a merge's neighbour) or the first fit (get_free_block's).
      auto it = std::next(ref.begin(), static_cast<std::ptrdiff_t>(rnd(ref.size())));
      if (rnd(2) == 0) {
        const FreeBlocks::Cursor c = f.lower_bound(std::get<0>(*it), std::get<1>(*it));
        REQUIRE(c.valid);
        const auto first = ref.lower_bound(Key{std::get<0>(*it), std::get<1>(*it), 0, 0});
        REQUIRE(f.handle(c) == std::get<3>(*first));
        f.erase(c);
        it = first;
      } else {
        REQUIRE(f.erase(std::get<0>(*it), std::get<1>(*it), std::get<2>(*it), std::get<3>(*it)));
      }
      const bool last_of_size = set_walk(ref, std::get<0>(*it), std::get<1>(*it)).size() == 1;
      emptied += last_of_size;
      ref.erase(it);
    }
    const std::uint32_t stream = static_cast<std::uint32_t>(rnd(3));
    const Bytes size = rnd(6) << 20;
    REQUIRE(index_walk(f, stream, size) == set_walk(ref, stream, size));
  }
  std::vector<std::uint32_t> all, want;
  f.for_each([&](std::uint32_t h) { all.push_back(h); });
  for (const Key& k : ref) want.push_back(std::get<3>(k));
  CHECK(all == want);
  CHECK_FALSE(f.erase(0, 1 << 20, 1, next_handle));  // not there
  // The run saw equal (stream, size, address) keys and sizes emptied, so both paths were taken.
  CHECK(equal_addresses > 0);
  CHECK(emptied > 0);
}
