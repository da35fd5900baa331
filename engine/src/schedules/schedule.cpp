// Pipeline schedule op lists (names: names.cpp; the in-flight maximum: walker.cpp).
#include "actmem/schedules/schedule.hpp"

namespace actmem {

std::vector<PipeOp> pipeline_ops(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v,
                                 std::uint64_t m) {
  std::vector<PipeOp> ops;
  ops.reserve(2 * m * v);
  for_each_op(s, r, p, v, m, [&](const PipeOp& o) { ops.push_back(o); });
  return ops;
}

std::uint64_t shared_forwards(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v,
                              std::uint64_t n, std::uint64_t m) {
  if (is_split_backward(s) || n >= m) return 0;
  const std::vector<PipeOp> shorter = pipeline_ops(s, r, p, v, n);
  std::size_t i = 0;
  std::uint64_t forwards = 0;
  bool apart = false;
  for_each_op(s, r, p, v, m, [&](const PipeOp& o) {
    if (apart || i == shorter.size()) {
      apart = true;
      return;
    }
    const PipeOp& a = shorter[i++];
    apart = a.forward != o.forward || a.micro_batch != o.micro_batch || a.chunk != o.chunk;
    if (!apart && o.forward) ++forwards;
  });
  return forwards;
}

}  // namespace actmem
