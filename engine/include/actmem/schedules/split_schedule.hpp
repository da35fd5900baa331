// Pipeline schedules that split the backward (zero-bubble and DualPipe): each rank's op order with
// the input-gradient backward (I) and the weight-gradient backward (W) as separate ops, for the
// step walker to come (docs/schedules.md, "Split-backward schedules"). The orders follow the code
// that runs them: PyTorch's torch.distributed.pipelining (2.6: ScheduleInterleavedZeroBubble with
// one stage per rank, ScheduleZBVZeroBubble) and deepseek-ai/DualPipe at 3da1bbea (DualPipe.step,
// DualPipeV.step).
#pragma once

#include <cstdint>
#include <vector>

#include "actmem/core/error.hpp"
#include "actmem/schedules/schedule.hpp"

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

// A split-backward op list cut into runs: ops[start .. start + period·reps) is one period of
// `period` ops repeated `reps` times (each repeat the same kinds and chunks, every micro-batch one
// higher). Along a run the live bytes and the in-flight counts move in a straight line (each
// period changes them by the same amount), so a walk tracking a first maximum walks a run's first
// and last periods and applies the ones between in bulk. Ops in no run of 3 or more periods are
// runs of one period, reps 1. Cut once per op list: O(n) times the longest period tried (6).
struct SplitRun {
  std::size_t start = 0, period = 1, reps = 1;
};
std::vector<SplitRun> split_runs(const std::vector<SplitOp>& ops);

// A split-backward step for the peak walk without listing all m micro-batches' ops: the runs of
// a shorter step (m0, congruent to m modulo the schedule's unit u: 2 for DualPipe, whose steady
// state takes one micro-batch from each end, else 1) with one run, `grow`, repeated `extra` more
// times. It is used only after checking, on the lists for m0 and m0 + u, that one more unit adds
// exactly one period to that run and moves every later op's micro-batch by the forwards that
// period holds in its chunk; otherwise (and for m at most m0 + u) the plan is the whole list.
struct SplitPlan {
  std::vector<SplitOp> ops;  // m0's ops (or all of m's)
  std::vector<SplitRun> runs;
  std::size_t grow = ~std::size_t{0};  // the run index that repeats `extra` more times
  std::uint64_t extra = 0;
  std::uint64_t m0 = 0, unit = 1;  // the shorter step and the micro-batches one period adds
  std::uint64_t listed_m = 0;      // a plan that does not grow lists exactly this step
  std::uint32_t shift[4][2] = {};  // per kind (F, B, I, W) and chunk: one grow period's move
  bool grows() const { return grow != ~std::size_t{0}; }
  // The plan of the same schedule, rank and p at m micro-batches (m congruent to m0 modulo
  // unit, above m0 + unit): only `extra` changes.
  void set_m(std::uint64_t m) { extra = (m - m0) / unit; }
  // The true micro-batch of ops[i] for an op after the grown run.
  std::uint32_t later_mb(const SplitOp& o) const;
};
SplitPlan split_plan(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t m);
// The m above which split_plan can grow a shorter step (the plan then depends on m only
// through `extra`), and the unit.
std::uint64_t split_plan_m0(Schedule s, std::uint64_t p, std::uint64_t m);

// The most (chunk, micro-batch) pairs alive at once on a rank: forward done, weight gradient (W or
// B) not yet; `until_input` counts until the input gradient (I or B) instead.
std::uint64_t peak_alive(const std::vector<SplitOp>& ops, bool until_input = false);

}  // namespace actmem
