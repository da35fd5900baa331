// Per-rank op orders of the pipeline schedules; the single source of in-flight micro-batch counts.
#include "actmem/schedule.hpp"

#include <algorithm>

namespace actmem {

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::kGpipe:
      return "gpipe";
    case Schedule::k1F1B:
      return "1f1b";
    case Schedule::kInterleaved:
      return "interleaved";
  }
  return "?";
}

bool parse_schedule(const std::string& s, Schedule* out) {
  if (s == "gpipe")
    *out = Schedule::kGpipe;
  else if (s == "1f1b")
    *out = Schedule::k1F1B;
  else if (s == "interleaved")
    *out = Schedule::kInterleaved;
  else
    return false;
  return true;
}

std::vector<PipeOp> pipeline_ops(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v,
                                 std::uint64_t m) {
  std::vector<PipeOp> ops;
  auto u32 = [](std::uint64_t x) { return static_cast<std::uint32_t>(x); };
  if (s == Schedule::kGpipe) {
    for (std::uint64_t c = 0; c < v; ++c)
      for (std::uint64_t i = 0; i < m; ++i) ops.push_back({true, u32(i), u32(c)});
    for (std::uint64_t c = v; c-- > 0;)
      for (std::uint64_t i = m; i-- > 0;) ops.push_back({false, u32(i), u32(c)});
    return ops;
  }
  if (s == Schedule::k1F1B || v == 1) {
    const std::uint64_t warm = std::min(p - r - 1, m);
    std::uint64_t f = 0, b = 0;
    for (; f < warm; ++f) ops.push_back({true, u32(f), 0});
    while (f < m) {
      ops.push_back({true, u32(f++), 0});
      ops.push_back({false, u32(b++), 0});
    }
    while (b < m) ops.push_back({false, u32(b++), 0});
    return ops;
  }
  const std::uint64_t total = m * v;
  auto mb_of = [&](std::uint64_t k) { return (k / (p * v)) * p + k % p; };
  auto fchunk = [&](std::uint64_t k) { return (k / p) % v; };
  auto bchunk = [&](std::uint64_t k) { return v - 1 - (k / p) % v; };
  const std::uint64_t warm = m == p ? total : std::min((p - r - 1) * 2 + (v - 1) * p, total);
  std::uint64_t f = 0, b = 0;
  for (; f < warm; ++f) ops.push_back({true, u32(mb_of(f)), u32(fchunk(f))});
  while (f < total) {
    ops.push_back({true, u32(mb_of(f)), u32(fchunk(f))});
    ++f;
    ops.push_back({false, u32(mb_of(b)), u32(bchunk(b))});
    ++b;
  }
  for (; b < total; ++b) ops.push_back({false, u32(mb_of(b)), u32(bchunk(b))});
  return ops;
}

InFlight max_in_flight(const std::vector<PipeOp>& ops,
                       const std::vector<std::uint64_t>& chunk_weight) {
  InFlight cur;
  cur.per_chunk.assign(chunk_weight.size(), 0);
  InFlight best = cur;
  bool first = true;
  for (const PipeOp& o : ops) {
    if (o.forward) {
      ++cur.chunks;
      ++cur.per_chunk[o.chunk];
      cur.weight += chunk_weight[o.chunk];
    } else {
      --cur.chunks;
      --cur.per_chunk[o.chunk];
      cur.weight -= chunk_weight[o.chunk];
    }
    // Ties keep the first moment, so equal weights report the earliest (and largest) count.
    if (first || cur.weight > best.weight ||
        (cur.weight == best.weight && cur.chunks > best.chunks))
      best = cur, first = false;
  }
  return best;
}

}  // namespace actmem
