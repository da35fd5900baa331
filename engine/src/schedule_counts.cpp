// Pipeline in-flight counts for the estimate's most-loaded-stage activations.
#include "schedule_counts.hpp"

#include <algorithm>

namespace actmem::detail {

InFlight in_flight(std::uint64_t r, std::uint64_t p, std::uint64_t v, std::uint64_t m) {
  InFlight f;
  if (v <= 1) {
    f.chunks = std::min(p - r, m);
    f.first_chunk = f.chunks;
    f.last_chunk = f.chunks;
    return f;
  }
  const std::uint64_t total = m * v;
  const std::uint64_t warmup = std::min((p - r - 1) * 2 + (v - 1) * p, total);
  f.chunks = std::min(warmup + 1, total);
  for (std::uint64_t k = 0; k < f.chunks; ++k) {
    const std::uint64_t chunk = (k / p) % v;
    if (chunk == 0) ++f.first_chunk;
    if (chunk == v - 1) ++f.last_chunk;
  }
  return f;
}

}  // namespace actmem::detail
