// Pipeline schedule op lists and the weighted in-flight maximum of a rank (names: names.cpp).
#include "actmem/schedule.hpp"

namespace actmem {

std::vector<PipeOp> pipeline_ops(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v,
                                 std::uint64_t m) {
  std::vector<PipeOp> ops;
  ops.reserve(2 * m * v);
  for_each_op(s, r, p, v, m, [&](const PipeOp& o) { ops.push_back(o); });
  return ops;
}

InFlight max_in_flight(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v,
                       std::uint64_t m, const std::vector<std::uint64_t>& w) {
  InFlight cur;
  cur.per_chunk.assign(w.size(), 0);
  InFlight best = cur;
  bool first = true;
  auto consider = [&] {
    // The first maximum wins; equal weight with more chunks counts as more in flight.
    if (first || cur.weight > best.weight ||
        (cur.weight == best.weight && cur.chunks > best.chunks)) {
      best = cur;
      first = false;
    }
  };
  auto apply = [&](bool forward, std::uint32_t chunk, std::uint64_t n) {
    if (forward) {
      cur.chunks += n;
      cur.per_chunk[chunk] += n;
      cur.weight += n * w[chunk];
    } else {
      cur.chunks -= n;
      cur.per_chunk[chunk] -= n;
      cur.weight -= n * w[chunk];
    }
  };
  // The collapsed walk: skipped ops repeat earlier states, GPipe's bulk ops lie between their
  // neighbours' states, so neither can hold a new first maximum.
  for_each_op_collapsed(
      s, r, p, v, m,
      [&](const PipeOp& o) {
        apply(o.forward, o.chunk, 1);
        consider();
      },
      [&](bool forward, std::uint32_t chunk, std::uint64_t n) { apply(forward, chunk, n); });
  return best;
}

}  // namespace actmem
