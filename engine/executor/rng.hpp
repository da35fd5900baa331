// The counter-based dropout RNG both executors share: keep(i) depends only on (seed, stream, i),
// so recompute (and a fused attention kernel) regenerates exactly the forward's mask, as
// Philox does for Megatron-LM and FlashAttention (Salmon et al. 2011, counter-based RNGs).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ACTMEM_HD __host__ __device__
#else
#define ACTMEM_HD
#endif

namespace actmem::exec {

// SplitMix64's finalizer (Steele et al. 2014) over the combined counter: a bijective mix whose
// output bits pass BigCrush, ample for a dropout mask.
ACTMEM_HD inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

ACTMEM_HD inline bool dropout_keep(std::uint64_t seed, std::uint64_t stream, std::uint64_t i,
                                   double p) {
  const std::uint64_t r = mix64(seed ^ mix64(stream * 0x9e3779b97f4a7c15ULL + i));
  return static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0) >= p;  // uniform in [0, 1)
}

}  // namespace actmem::exec
