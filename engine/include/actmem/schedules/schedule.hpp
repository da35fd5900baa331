// Pipeline schedules as per-stage op sequences (GPipe, 1F1B, Megatron-LM interleaved 1F1B); the
// split-backward ones (zero-bubble, DualPipe) list their ops in split_schedule.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace actmem {

enum class Schedule { kGpipe, k1F1B, kInterleaved, kZbH1, kZbV, kDualPipe, kDualPipeV };

// Schedules that split each backward into its input-gradient (I) and weight-gradient (W) parts.
inline bool is_split_backward(Schedule s) {
  return s == Schedule::kZbH1 || s == Schedule::kZbV || s == Schedule::kDualPipe ||
         s == Schedule::kDualPipeV;
}
// Schedules whose rank holds two chunks in a V: chunk 0 = stage r, chunk 1 = stage 2p-1-r.
inline bool is_v_shape(Schedule s) {
  return s == Schedule::kZbV || s == Schedule::kDualPipeV;
}

const char* schedule_name(Schedule s);
bool parse_schedule(const std::string& s, Schedule* out);

// The pipeline bubble as a fraction of the ideal step (the time of m micro-batches' forwards and
// backwards with no idle rank): (p - 1) / m for GPipe and 1F1B (Narayanan et al. 2021, Sec. 2.2.1),
// (p - 1) / (v·m) for the interleaved schedule (Sec. 2.2.2). The split-backward schedules follow
// the bubbles deepseek-ai/DualPipe's README tabulates (3da1bbea; F a forward, B a whole backward,
// W its weight part, F&B an overlapped pair): ZB-H1 (p-1)(F+B-2W), DualPipe (p/2-1)(F&B+B-3W),
// DualPipeV the same with 2p stages on p ranks, and ZB-V none (the ZB authors' README table,
// zero-bubble-pipeline-parallelism main@39f2c18). Assumed, as both READMEs do: B = 2F, W = F, and
// F&B = F + B (no credit for overlapping the pair). So ZB-H1 (p-1)/(3m), DualPipe (p-2)/(3m),
// DualPipeV (p-1)/(3m). 0 without pipelining.
inline double bubble_fraction(Schedule s, std::uint64_t p, std::uint64_t v, std::uint64_t m) {
  if (p <= 1 || m == 0) return 0.0;
  const double b = static_cast<double>(p - 1) / static_cast<double>(m);
  switch (s) {
    case Schedule::kInterleaved:
      return b / static_cast<double>(v);
    case Schedule::kZbH1:
    case Schedule::kDualPipeV:
      return b / 3.0;
    case Schedule::kZbV:
      return 0.0;
    case Schedule::kDualPipe:
      return static_cast<double>(p - 2) / (3.0 * static_cast<double>(m));
    default:
      return b;
  }
}

// One forward or backward of one micro-batch through one model chunk on one pipeline rank.
struct PipeOp {
  bool forward = true;
  std::uint32_t micro_batch = 0;
  std::uint32_t chunk = 0;  // virtual stage index on this rank, 0..v-1
};

// Forwards rank r runs before its first backward (1F1B and interleaved; see for_each_op): p - r - 1
// (at most m) for 1F1B; (p - r - 1)·2 + (v - 1)·p virtual micro-batches (at most m·v, and all of
// them when m == p) for the interleaved schedule.
inline std::uint64_t warmup_forwards(std::uint64_t r, std::uint64_t p, std::uint64_t v,
                                     std::uint64_t m) {
  if (v == 1) return p - r - 1 < m ? p - r - 1 : m;
  const std::uint64_t total = m * v, want = (p - r - 1) * 2 + (v - 1) * p;
  return m == p ? total : (want < total ? want : total);
}

// Calls f(PipeOp) for each op of rank `r` of `p` with `v` chunks per rank and `m` micro-batches,
// in order, without building a list (the hot path):
// - GPipe (Huang et al. 2019): all m forwards, then all m backwards (last micro-batch first).
// - 1F1B (Narayanan et al. 2021, Sec. 2.2): p - r - 1 warm-up forwards, then one forward / one
//   backward, then the remaining backwards.
// - Interleaved (Megatron-LM schedules.py, forward_backward_pipelining_with_interleaving):
//   warm-up (p - r - 1) * 2 + (v - 1) * p virtual micro-batches (all of them when m == p); virtual
//   micro-batch k runs chunk (k / p) % v of micro-batch (k / (p v)) p + k % p; backwards visit the
//   chunks in reverse.
template <class F>
void for_each_op(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v, std::uint64_t m,
                 F&& f) {
  auto u32 = [](std::uint64_t x) { return static_cast<std::uint32_t>(x); };
  if (s == Schedule::kGpipe) {
    for (std::uint64_t c = 0; c < v; ++c)
      for (std::uint64_t i = 0; i < m; ++i) f(PipeOp{true, u32(i), u32(c)});
    for (std::uint64_t c = v; c-- > 0;)
      for (std::uint64_t i = m; i-- > 0;) f(PipeOp{false, u32(i), u32(c)});
    return;
  }
  if (v == 1) {
    const std::uint64_t warm = warmup_forwards(r, p, v, m);
    std::uint64_t fw = 0, bw = 0;
    for (; fw < warm; ++fw) f(PipeOp{true, u32(fw), 0});
    while (fw < m) {
      f(PipeOp{true, u32(fw++), 0});
      f(PipeOp{false, u32(bw++), 0});
    }
    while (bw < m) f(PipeOp{false, u32(bw++), 0});
    return;
  }
  const std::uint64_t total = m * v;
  auto mb_of = [&](std::uint64_t k) { return (k / (p * v)) * p + k % p; };
  auto fchunk = [&](std::uint64_t k) { return (k / p) % v; };
  auto bchunk = [&](std::uint64_t k) { return v - 1 - (k / p) % v; };
  const std::uint64_t warm = warmup_forwards(r, p, v, m);
  std::uint64_t fw = 0, bw = 0;
  for (; fw < warm; ++fw) f(PipeOp{true, u32(mb_of(fw)), u32(fchunk(fw))});
  while (fw < total) {
    f(PipeOp{true, u32(mb_of(fw)), u32(fchunk(fw))});
    ++fw;
    f(PipeOp{false, u32(mb_of(bw)), u32(bchunk(bw))});
    ++bw;
  }
  for (; bw < total; ++bw) f(PipeOp{false, u32(mb_of(bw)), u32(bchunk(bw))});
}

// The same op sequence with its repetition collapsed, for consumers that track a first maximum
// (the peak, the in-flight maximum). Two facts make it exact:
// - A run of consecutive ops that all do the same thing (forwards of one chunk; backwards of one
//   chunk; forward/backward pairs of one chunk pair) changes the state by the same amount each
//   time, so its events move in a straight line: only its first or last op can hold a first
//   maximum. f is called for the first and last; the ones between go to bulk(forward, chunk, n),
//   which applies their net change (a pair run calls bulk for its forwards, then its backwards).
// - The steady state of 1F1B (period 1 pair) and of the interleaved schedule (p·v pairs: the chunk
//   order cycles every p·v virtual micro-batches) repeats, and a whole period frees what it adds,
//   so the state after it is the state before it and its events repeat earlier ones. The first
//   period is walked; whole periods after it are skipped without any call, and the pairs left
//   over (repeats too) are applied in bulk.
// Every op passed to f carries its true micro-batch index, so peak labels are the full walk's.
// The walk is O(v) runs per rank whatever m is; tests/report/test_timeline.cpp asserts the
// collapsed walk gives the full walk's peaks, labels, host peaks and PCIe bytes.
//
// `ends(forward_chunk, backward_chunk)` (kNoChunk for the side a run does not have) says which end
// of a run can hold the consumer's first maximum: bit 1 the first op (or pair), bit 2 the last.
// A run whose state only grows needs its last op, one that shrinks or stays its first; only the
// ends asked for are walked, the rest goes to bulk. A consumer that returns 3 walks both.
constexpr std::uint32_t kNoChunk = ~std::uint32_t{0};

template <class F, class B, class E>
void for_each_op_collapsed(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v,
                           std::uint64_t m, F&& f, B&& bulk, E&& ends) {
  auto u32 = [](std::uint64_t x) { return static_cast<std::uint32_t>(x); };
  if (s == Schedule::kGpipe) {
    for (std::uint64_t c = 0; c < v; ++c) {
      f(PipeOp{true, 0, u32(c)});
      if (m > 2) bulk(true, u32(c), m - 2);
      if (m > 1) f(PipeOp{true, u32(m - 1), u32(c)});
    }
    for (std::uint64_t c = v; c-- > 0;) {
      f(PipeOp{false, u32(m - 1), u32(c)});
      if (m > 2) bulk(false, u32(c), m - 2);
      if (m > 1) f(PipeOp{false, 0, u32(c)});
    }
    return;
  }
  const std::uint64_t total = m * v;
  // The run of virtual micro-batches that starts at k: its chunk (forwards visit chunk (k/p) % v,
  // backwards the chunks in reverse), the micro-batch of k ((k / pv)·p + k % p, one more for each
  // op of the run) and where it ends (the next multiple of p, or limit). Three divisions a run.
  struct Run {
    std::uint32_t chunk;
    std::uint64_t mb, end;
  };
  auto run_at = [&](std::uint64_t k, bool forward, std::uint64_t limit) {
    if (v == 1) return Run{0, k, limit};
    const std::uint64_t q = k / p, c = q % v, end = (q + 1) * p;
    return Run{u32(forward ? c : v - 1 - c), (q / v) * p + (k - q * p), end < limit ? end : limit};
  };
  const std::uint64_t warm = warmup_forwards(r, p, v, m);
  // Ops of one direction, run by run, from k to limit: the ends the consumer needs walked, the
  // rest in bulk (before the last op, after the first).
  auto singles = [&](bool forward, std::uint64_t k, std::uint64_t limit) {
    while (k < limit) {
      const Run a = run_at(k, forward, limit);
      const std::uint64_t len = a.end - k;
      const int e = len == 1 ? 1 : (forward ? ends(a.chunk, kNoChunk) : ends(kNoChunk, a.chunk));
      const std::uint64_t mid = len - ((e & 1) ? 1 : 0) - ((e & 2) ? 1 : 0);
      if (e & 1) f(PipeOp{forward, u32(a.mb), a.chunk});
      if (mid) bulk(forward, a.chunk, mid);
      if (e & 2) f(PipeOp{forward, u32(a.mb + len - 1), a.chunk});
      k = a.end;
    }
  };
  // n steady forward/backward pairs from (fw, bw), run by run (a run: both chunks constant);
  // `walk` false applies them in bulk only.
  std::uint64_t fw = warm, bw = 0;
  auto pairs = [&](std::uint64_t n, bool walk) {
    const std::uint64_t stop = bw + n;
    while (bw < stop) {
      const Run a = run_at(fw, true, fw + (stop - bw));
      const Run b = run_at(bw, false, stop);
      const std::uint64_t len = std::min(a.end - fw, b.end - bw);
      const int e = !walk ? 0 : (len == 1 ? 1 : ends(a.chunk, b.chunk));
      const std::uint64_t mid = len - ((e & 1) ? 1 : 0) - ((e & 2) ? 1 : 0);
      if (e & 1) f(PipeOp{true, u32(a.mb), a.chunk}), f(PipeOp{false, u32(b.mb), b.chunk});
      if (mid) bulk(true, a.chunk, mid), bulk(false, b.chunk, mid);
      if (e & 2) {
        f(PipeOp{true, u32(a.mb + len - 1), a.chunk});
        f(PipeOp{false, u32(b.mb + len - 1), b.chunk});
      }
      fw += len, bw += len;
    }
  };
  singles(true, 0, warm);
  // The first period is walked; every later pair repeats the state and events of the pair one or
  // more periods before it, so whole periods are skipped and the rest applied in bulk.
  const std::uint64_t period = v == 1 ? 1 : p * v;
  const std::uint64_t steady = total - warm;
  const std::uint64_t first = steady < period ? steady : period;
  pairs(first, true);
  const std::uint64_t skip = (steady - first) / period * period;
  fw += skip, bw += skip;
  pairs(steady - first - skip, false);
  singles(false, bw, total);
}

// The same ops as a list (tests, the timeline's event mode).
std::vector<PipeOp> pipeline_ops(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v,
                                 std::uint64_t m);

// How far a step of n micro-batches runs as the step of m > n does (GPipe, 1F1B, interleaved):
// the forwards of rank r's op sequence for n that come, with every op before them, first in the
// sequence for m too. A run of n micro-batches starts from the same state as the step of m, so
// whatever it does before its op after them the step of m does as well (device/replay.cpp stops
// a shortened run's verdict at its first failed request there). 0 for the split-backward
// schedules (split_schedule.hpp).
std::uint64_t shared_forwards(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v,
                              std::uint64_t n, std::uint64_t m);

}  // namespace actmem
