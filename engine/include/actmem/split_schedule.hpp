// Pipeline schedules that split the backward (zero-bubble and DualPipe): each rank's op order with
// the input-gradient backward (I) and the weight-gradient backward (W) as separate ops, for the
// step walker to come (docs/schedules.md, "Split-backward schedules"). The orders follow the code
// that runs them: PyTorch's torch.distributed.pipelining (2.6: ScheduleInterleavedZeroBubble with
// one stage per rank, ScheduleZBVZeroBubble) and deepseek-ai/DualPipe at 3da1bbea (DualPipe.step,
// DualPipeV.step).
#pragma once

#include <cstdint>
#include <vector>

#include "actmem/error.hpp"
#include "actmem/schedule.hpp"

namespace actmem {

struct SplitOp {
  // F forward; B the whole backward; I the backward for the inputs only (its weight gradient is
  // queued); W a queued weight gradient.
  enum Kind : char { kF = 'F', kB = 'B', kI = 'I', kW = 'W' };
  Kind kind = kF;
  // ZB-V and DualPipeV: the rank's chunk, 0 = stage r, 1 = stage 2p-1-r (the V). DualPipe: the
  // direction, 0 = micro-batches entering at rank 0, 1 = entering at rank p-1.
  std::uint32_t chunk = 0;
  std::uint32_t mb = 0;  // micro-batch index within its chunk or direction
};

// ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism"; PyTorch 2.6 ScheduleInterleavedZero-
// Bubble with one stage per rank): 1F1B's warm-up (p-1-r forwards), steady F, I; each W runs r
// backwards after its I. Micro-batches m >= 1.
std::vector<SplitOp> zb_h1_ops(std::uint64_t r, std::uint64_t p, std::uint64_t m);
// ZB-V (same authors; PyTorch 2.6 ScheduleZBVZeroBubble): two chunks per rank in a V.
std::vector<SplitOp> zb_v_ops(std::uint64_t r, std::uint64_t p, std::uint64_t m);
// DualPipe (DeepSeek-V3 report, Sec. 3.2.1): p even, m micro-batches in all (even, at least 2p),
// half entering at each end; every rank holds stages r and p-1-r.
Result<std::vector<SplitOp>> dualpipe_ops(std::uint64_t r, std::uint64_t p, std::uint64_t m);
// DualPipeV: DualPipe cut in half; p ranks hold 2p stages in a V; m >= 2p micro-batches.
Result<std::vector<SplitOp>> dualpipev_ops(std::uint64_t r, std::uint64_t p, std::uint64_t m);

// Rank r's ops under split-backward schedule `s` into `out` (reusing its storage), for the step
// walker; the config was validated (validate.cpp), so DualPipe's and DualPipeV's shapes hold.
void split_ops(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t m,
               std::vector<SplitOp>* out);

// The most (chunk, micro-batch) pairs alive at once on a rank: forward done, weight gradient (W or
// B) not yet; `until_input` counts until the input gradient (I or B) instead.
std::uint64_t peak_alive(const std::vector<SplitOp>& ops, bool until_input = false);

}  // namespace actmem
