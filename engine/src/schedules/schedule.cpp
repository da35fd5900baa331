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

}  // namespace actmem
