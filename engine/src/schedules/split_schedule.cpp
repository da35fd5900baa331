// Split-backward pipeline schedules (split_schedule.hpp): ZB-H1, ZB-V, DualPipe, DualPipeV.
#include "actmem/schedules/split_schedule.hpp"

#include <algorithm>
#include <deque>
#include <set>
#include <utility>

namespace actmem {

namespace {

// One rank's ops with per-chunk counters and the FIFO queue of weight gradients (DualPipe's
// WeightGradStore: one entry per input-only backward, popped oldest first).
struct Builder {
  std::vector<SplitOp> ops;
  std::uint32_t f[2] = {0, 0}, b[2] = {0, 0}, w[2] = {0, 0};
  std::deque<std::pair<std::uint32_t, std::uint32_t>> queue;
  void F(std::uint32_t c) { ops.push_back({SplitOp::kF, c, f[c]++}); }
  void I(std::uint32_t c) {
    queue.emplace_back(c, b[c]);
    ops.push_back({SplitOp::kI, c, b[c]++});
  }
  void B(std::uint32_t c) { ops.push_back({SplitOp::kB, c, b[c]++}); }
  // Either a whole backward or, once the zero-bubble switch is on, an input-only one.
  void back(std::uint32_t c, bool zb) { zb ? I(c) : B(c); }
  void W_queued() {
    const auto [c, mb] = queue.front();
    queue.pop_front();
    ops.push_back({SplitOp::kW, c, mb});
  }
  void W_next(std::uint32_t c) { ops.push_back({SplitOp::kW, c, w[c]++}); }
};

Error bad_m(const char* what) {
  return make_error("invalid_value", "config.micro_batches",
                    std::string("config.micro_batches: ") + what);
}

// DualPipe and DualPipeV share their steps 1-8 (DualPipe.step / DualPipeV.step): `h` ranks on the
// rank's side, `hr` its distance from its end, `n` micro-batches per direction (DualPipe) or in
// all (DualPipeV, whose step 4 count is n - 2h + hr + 1), `phase` maps a phase to a chunk.
std::vector<SplitOp> dual_steps(std::uint64_t h, std::uint64_t hr, std::uint64_t steady,
                                std::uint32_t flip) {
  Builder s;
  auto c = [&](std::uint32_t phase) { return phase ^ flip; };
  for (std::uint64_t i = 0; i < (h - hr - 1) * 2; ++i) s.F(c(0));                     // step 1
  for (std::uint64_t i = 0; i < hr + 1; ++i) s.F(c(0)), s.F(c(1));                    // step 2
  for (std::uint64_t i = 0; i < h - hr - 1; ++i) s.I(c(1)), s.W_queued(), s.F(c(1));  // step 3
  // Step 4: overlapped forward-and-backward pairs; the forward's activation exists before the
  // backward frees its own (the pair is one op).
  for (std::uint64_t i = 0; i < steady; ++i) s.F(c(0)), s.B(c(1)), s.F(c(1)), s.B(c(0));
  for (std::uint64_t i = 0; i < h - hr - 1; ++i) s.B(c(1)), s.F(c(1)), s.B(c(0));  // step 5
  // Step 6: backwards of both phases; the zero-bubble switch turns on halfway, before the first
  // phase's backward when hr is odd, between the two when even.
  bool zb = false;
  const std::uint64_t n6 = hr + 1;
  for (std::uint64_t i = 0; i < n6; ++i) {
    if (i == n6 / 2 && hr % 2 == 1) zb = true;
    s.back(c(1), zb);
    if (i == n6 / 2 && hr % 2 == 0) zb = true;
    s.back(c(0), zb);
  }
  for (std::uint64_t i = 0; i < h - hr - 1; ++i) s.W_queued(), s.I(c(0));  // step 7
  for (std::uint64_t i = 0; i < hr + 1; ++i) s.W_queued();                 // step 8
  return s.ops;
}

}  // namespace

std::vector<SplitOp> zb_h1_ops(std::uint64_t r, std::uint64_t p, std::uint64_t m) {
  // Written without the Builder's weight queue: W(k) runs right after I(k + r), so the step walk
  // (which lists these ops for every evaluation it has not cached) pays 3m appends and nothing
  // else.
  std::vector<SplitOp> ops;
  ops.reserve(3 * m);
  auto u32 = [](std::uint64_t x) { return static_cast<std::uint32_t>(x); };
  const std::uint64_t warm = std::min(p - 1 - r, m);
  std::uint64_t f = 0, i = 0, w = 0;
  for (; f < warm; ++f) ops.push_back({SplitOp::kF, 0, u32(f)});
  auto input_then_weight = [&] {
    ops.push_back({SplitOp::kI, 0, u32(i)});
    if (i++ >= r) ops.push_back({SplitOp::kW, 0, u32(w++)});  // W lags its I by r backwards
  };
  while (f < m) ops.push_back({SplitOp::kF, 0, u32(f++)}), input_then_weight();
  while (i < m) input_then_weight();
  while (w < m) ops.push_back({SplitOp::kW, 0, u32(w++)});
  return ops;
}

std::vector<SplitOp> zb_v_ops(std::uint64_t r, std::uint64_t p, std::uint64_t m) {
  // PyTorch pads the step to n = max(2p-1, m) micro-batches and drops the ops of the padding.
  const std::uint64_t n = std::max(2 * p - 1, m);
  Builder s;
  auto IW = [&](std::uint32_t c) { s.I(c), s.W_next(c); };
  for (std::uint64_t i = 0; i < 2 * (p - r) - 1; ++i) s.F(0);
  for (std::uint64_t i = 0; i < r; ++i) s.F(1), s.F(0);
  for (std::uint64_t i = 0; i < p - r; ++i) s.F(1), IW(1);
  while (s.f[1] < s.f[0] || s.f[0] < n) {
    if (s.f[0] < n) s.F(0);
    IW(0);
    s.F(1);
    IW(1);
  }
  // Cool-down: r pairs of input backwards with their weights deferred, then p-r with them.
  for (std::uint64_t i = 0; i < r; ++i) s.I(0), s.I(1);
  for (std::uint64_t i = 0; i < p - r; ++i) IW(0);
  while (s.w[1] < s.b[1]) s.W_next(1);
  while (s.w[0] < s.b[0]) s.W_next(0);
  std::vector<SplitOp> out;
  for (const SplitOp& o : s.ops)
    if (o.mb < m) out.push_back(o);
  return out;
}

Result<std::vector<SplitOp>> dualpipe_ops(std::uint64_t r, std::uint64_t p, std::uint64_t m) {
  if (p < 2 || p % 2 != 0)
    return make_error("invalid_value", "config.pp", "config.pp: DualPipe needs an even pp");
  if (m % 2 != 0 || m < 2 * p)
    return bad_m("DualPipe needs an even number of micro-batches, at least 2 x pp");
  const std::uint64_t h = p / 2, hr = std::min(r, p - 1 - r);
  return dual_steps(h, hr, m / 2 - p + hr + 1, r >= h ? 1 : 0);
}

Result<std::vector<SplitOp>> dualpipev_ops(std::uint64_t r, std::uint64_t p, std::uint64_t m) {
  if (m < 2 * p) return bad_m("DualPipeV needs at least 2 x pp micro-batches");
  return dual_steps(p, r, m - 2 * p + r + 1, 0);
}

void split_ops(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t m,
               std::vector<SplitOp>* out) {
  switch (s) {
    case Schedule::kZbH1:
      *out = zb_h1_ops(r, p, m);
      return;
    case Schedule::kZbV:
      *out = zb_v_ops(r, p, m);
      return;
    case Schedule::kDualPipe: {
      auto ops = dualpipe_ops(r, p, m);
      *out = ops.ok() ? std::move(ops.value()) : std::vector<SplitOp>{};
      return;
    }
    case Schedule::kDualPipeV: {
      auto ops = dualpipev_ops(r, p, m);
      *out = ops.ok() ? std::move(ops.value()) : std::vector<SplitOp>{};
      return;
    }
    default:
      out->clear();
  }
}

std::vector<SplitRun> split_runs(const std::vector<SplitOp>& ops) {
  std::vector<SplitRun> runs;
  std::size_t i = 0;
  while (i < ops.size()) {
    SplitRun best{i, 1, 1};
    // The schedules' repeating patterns: forwards (1), F I or I W pairs (2), ZB-H1's F I W (3),
    // DualPipe's F B F B (4), ZB-V's F I W F I W (6).
    for (std::size_t period = 1; period <= 6; ++period) {
      std::size_t j = i;  // ops[k + period] repeats ops[k] for k in [i, j)
      while (j + period < ops.size()) {
        const SplitOp &a = ops[j], &b = ops[j + period];
        if (a.kind != b.kind || a.chunk != b.chunk || b.mb != a.mb + 1) break;
        ++j;
      }
      const std::size_t reps = (j - i) / period + 1;
      if (reps >= 3 && reps * period > best.reps * best.period) best = SplitRun{i, period, reps};
    }
    if (best.reps < 3) best = SplitRun{i, 1, 1};
    runs.push_back(best);
    i += best.period * best.reps;
  }
  return runs;
}

namespace {
int kind_index(SplitOp::Kind k) {
  return k == SplitOp::kF ? 0 : k == SplitOp::kB ? 1 : k == SplitOp::kI ? 2 : 3;
}
}  // namespace

std::uint32_t SplitPlan::later_mb(const SplitOp& o) const {
  return static_cast<std::uint32_t>(o.mb + extra * shift[kind_index(o.kind)][o.chunk & 1]);
}

std::uint64_t split_plan_m0(Schedule s, std::uint64_t p, std::uint64_t m) {
  const std::uint64_t unit = s == Schedule::kDualPipe ? 2 : 1;
  // Long enough for every schedule's steady state to hold three periods (warm-up and cool-down
  // take at most 2p micro-batches per direction).
  std::uint64_t m0 = 4 * p + 8;
  if (m0 % unit != m % unit) ++m0;
  return m0;
}

SplitPlan split_plan(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t m) {
  SplitPlan plan;
  const std::uint64_t unit = s == Schedule::kDualPipe ? 2 : 1;
  const std::uint64_t m0 = split_plan_m0(s, p, m);
  plan.m0 = m0;
  plan.unit = unit;
  auto whole = [&] {
    plan.listed_m = m;
    split_ops(s, r, p, m, &plan.ops);
    plan.runs = split_runs(plan.ops);
    return plan;
  };
  if (m <= m0 + unit) return whole();
  std::vector<SplitOp> a, b;
  split_ops(s, r, p, m0, &a);
  split_ops(s, r, p, m0 + unit, &b);
  const std::vector<SplitRun> ra = split_runs(a), rb = split_runs(b);
  if (ra.size() != rb.size()) return whole();
  std::size_t grow = ra.size();
  for (std::size_t i = 0; i < ra.size(); ++i) {
    if (ra[i].period != rb[i].period) return whole();
    if (ra[i].reps == rb[i].reps) continue;
    if (rb[i].reps != ra[i].reps + 1 || grow != ra.size()) return whole();
    grow = i;
  }
  if (grow == ra.size()) return whole();
  // Ops up to the grown run's end are equal; each later op of b is a's with its micro-batch moved
  // by the micro-batches one more period starts in its chunk (its forwards): every later op, of
  // whatever kind, names a micro-batch after the added ones (DualPipe's queued W and its I share
  // the backward's counter, so a period of F and B moves later I and W ops too).
  const SplitRun& g = ra[grow];
  std::uint32_t starts[2] = {0, 0};
  for (std::size_t k = 0; k < g.period; ++k) {
    const SplitOp& o = a[g.start + k];
    if (o.chunk > 1) return whole();
    if (o.kind == SplitOp::kF) ++starts[o.chunk];
  }
  std::uint32_t shift[4][2] = {};
  for (auto& row : shift) row[0] = starts[0], row[1] = starts[1];
  const std::size_t end_a = g.start + g.period * g.reps;
  if (b.size() != a.size() + g.period) return whole();
  for (std::size_t i = 0; i < end_a; ++i)
    if (a[i].kind != b[i].kind || a[i].chunk != b[i].chunk || a[i].mb != b[i].mb) return whole();
  for (std::size_t i = end_a; i < a.size(); ++i) {
    const SplitOp &x = a[i], &y = b[i + g.period];
    if (x.kind != y.kind || x.chunk != y.chunk || y.mb != x.mb + shift[kind_index(x.kind)][x.chunk])
      return whole();
  }
  plan.ops = std::move(a);
  plan.runs = ra;
  plan.grow = grow;
  plan.set_m(m);
  std::copy(&shift[0][0], &shift[0][0] + 8, &plan.shift[0][0]);
  return plan;
}

std::uint64_t peak_alive(const std::vector<SplitOp>& ops, bool until_input) {
  std::set<std::pair<std::uint32_t, std::uint32_t>> alive;
  std::uint64_t peak = 0;
  for (const SplitOp& o : ops) {
    const auto key = std::make_pair(o.chunk, o.mb);
    if (o.kind == SplitOp::kF) alive.insert(key);
    const bool ends =
        o.kind == SplitOp::kB || (until_input ? o.kind == SplitOp::kI : o.kind == SplitOp::kW);
    peak = std::max<std::uint64_t>(peak, alive.size());
    if (ends) alive.erase(key);
  }
  return peak;
}

}  // namespace actmem
