// PYTORCH_CUDA_ALLOC_CONF as a training setting: the caching allocator's size constants and the
// options that change them. A setting of the training configuration (config.hpp holds one), kept
// apart from the allocator model (device/allocator.hpp) that replays a step under it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "actmem/core/checked.hpp"

namespace actmem {

// The allocator's sizes (CUDACachingAllocator.cpp, namespace Native, PyTorch 2.11).
constexpr Bytes kAllocMinBlock = 512;            // kMinBlockSize: every block is a multiple
constexpr Bytes kAllocSmallSize = 1048576;       // kSmallSize: largest "small" request
constexpr Bytes kAllocSmallBuffer = 2097152;     // kSmallBuffer: small-pool segment
constexpr Bytes kAllocLargeBuffer = 20971520;    // kLargeBuffer: segment for 1-10 MiB requests
constexpr Bytes kAllocMinLargeAlloc = 10485760;  // kMinLargeAlloc: larger ones get their own size
constexpr Bytes kAllocRoundLarge = 2097152;      // kRoundLarge: ... rounded to 2 MiB
constexpr std::size_t kRoundupIntervals = 16;    // kRoundUpPowerOfTwoIntervals (1 MiB .. 32 GiB)

// PYTORCH_CUDA_ALLOC_CONF, the settings that change sizes (CUDAAllocatorConfig.h).
struct AllocatorConfig {
  // max_split_size_mb, in bytes; blocks this large or larger are never split ("oversize").
  Bytes max_split_size = kMaxBytes;
  // roundup_power2_divisions: one entry per power-of-two interval from 1 MiB (index 0: sizes up to
  // 1 MiB, index 1: up to 2 MiB, ...); 0 or 1 means plain 512-byte rounding.
  std::array<std::uint32_t, kRoundupIntervals> roundup_divisions{};
  bool expandable_segments = false;
  // max_non_split_rounding_mb: how much larger than an oversize request a cached oversize block
  // may be and still serve it (default kLargeBuffer).
  Bytes max_non_split_rounding = kAllocLargeBuffer;
};

// Reads PYTORCH_CUDA_ALLOC_CONF text ("expandable_segments:True,max_split_size_mb:512"); returns
// "" and sets `out`, or a message naming the option, its value and what is allowed.
std::string parse_alloc_conf(std::string_view text, AllocatorConfig* out);

}  // namespace actmem
