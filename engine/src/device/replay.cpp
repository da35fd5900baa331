// The device figure (device.hpp): every stage's steady-state step through the allocator model,
// the fixed costs of a GPU in the job, and the verdict on their sum against the capacity the
// driver reports.
#include "actmem/device/device.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>

#include "actmem/config/gpu.hpp"
#include "device/stream.hpp"
#include "setup/overflow.hpp"
#include "step/walker.hpp"

namespace actmem {

namespace {

// PYTORCH_CUDA_ALLOC_CONF as the allocator would print it.
std::string alloc_conf_text(const AllocatorConfig& a) {
  std::string s;
  auto add = [&](const std::string& kv) { s += (s.empty() ? "" : ",") + kv; };
  if (a.expandable_segments) add("expandable_segments:True");
  if (a.max_split_size != kMaxBytes)
    add("max_split_size_mb:" + std::to_string(a.max_split_size >> 20));
  bool any = false;
  for (auto d : a.roundup_divisions) any = any || d > 1;
  if (any) {
    std::string list;
    for (std::size_t i = 0; i < a.roundup_divisions.size(); ++i)
      list += (i ? "," : "") + std::to_string(Bytes{1} << i) + ":" +
              std::to_string(a.roundup_divisions[i]);
    add("roundup_power2_divisions:[" + list + "]");
  }
  return s.empty() ? "default" : s;
}

// Each replayed stage's period proofs, for its first and its second step (stream.hpp).
using Proofs = std::vector<std::array<detail::PeriodProof, 2>>;

// A run of fewer micro-batches than the step's `m` that stops at a request failing where its first
// step is the full step's (schedule.hpp shared_forwards); `failed` says whether one did.
struct Shortened {
  std::uint64_t m = 0;
  bool failed = false;
};

// Two steps of every stage (or of stage `only` alone, when >= 0): the first fills the cache, the
// second is measured (a job's reserved memory settles after its first step; docs/validation.md
// 4.3 measures the second). With `proofs`, each stream compares its states at the steady state's
// period boundaries (1F1B and interleaved schedules: period_move()). With `stop_at_oom` (a run
// within a capacity) each stage stops at its first request the capacity cannot serve; with `cut`
// (a shorter run within one), at its first such request in the full step's prefix.
std::optional<Error> simulate(const Setup& e, const Recompute& policy, Bytes capacity,
                              std::int64_t only, std::vector<StageDevice>* out,
                              Proofs* proofs = nullptr, bool stop_at_oom = false,
                              Shortened* cut = nullptr) {
  const std::size_t P = e.ranks.size();
  std::vector<std::unique_ptr<CachingAllocator>> allocs(P);
  std::vector<std::unique_ptr<detail::AllocStream>> streams(P);
  std::vector<detail::Recorder*> recorders(P, nullptr);
  std::vector<std::size_t> ranks;
  for (std::size_t r = 0; r < P; ++r) {
    if (only >= 0 && r != static_cast<std::size_t>(only)) continue;
    allocs[r] = std::make_unique<CachingAllocator>(e.config.alloc, capacity);
    streams[r] = std::make_unique<detail::AllocStream>(e, policy, r, allocs[r].get());
    recorders[r] = streams[r].get();
    if (stop_at_oom) streams[r]->stop_at_oom();
    if (cut)
      streams[r]->stop_in_shared_prefix(
          shared_forwards(effective_schedule(e.config), r, e.config.par.pp,
                          e.ranks[r].chunk_sizes.size(), e.config.grad_accum, cut->m));
    ranks.push_back(r);
    if (proofs) {
      const std::uint64_t p = e.config.par.pp, v = e.ranks[r].chunk_sizes.size();
      const std::uint64_t m = default_micro_batches(e.config);
      streams[r]->watch({p, v, warmup_forwards(r, p, v, m), m * v});
    }
  }
  std::vector<std::uint64_t> before(P, 0);
  Evaluation ev;
  for (int step = 0; step < 2; ++step) {
    for (std::size_t r : ranks) {
      streams[r]->begin_step();
      if (step == 1) allocs[r]->reset_peaks(), before[r] = streams[r]->allocations();
    }
    if (auto err = detail::walk_step(e, policy, recorders.data(), true, &ev)) return err;
    if (cut)
      for (std::size_t r : ranks)
        cut->failed = cut->failed || streams[r]->failed_in_shared_prefix();
    if (proofs) {
      proofs->resize(ranks.size());
      for (std::size_t i = 0; i < ranks.size(); ++i)
        (*proofs)[i][static_cast<std::size_t>(step)] = streams[ranks[i]]->proof();
    }
  }
  out->clear();
  for (std::size_t r : ranks) {
    if (streams[r]->overflowed()) return detail::activation_overflow("device.tensor", e.config);
    StageDevice d;
    const AllocatorStats& st = allocs[r]->stats();
    d.stage = r;
    d.allocated_peak_bytes = st.allocated_peak;
    d.reserved_peak_bytes = st.reserved_peak;
    d.requested_peak_bytes = st.requested_peak;
    d.segments_peak = st.segments_peak;
    d.allocations = streams[r]->allocations() - before[r];
    d.ooms = st.ooms;
    d.side_stream_reserved_bytes = st.reserved_side;
    d.stats = st;
    out->push_back(d);
  }
  return std::nullopt;
}

// The steady state of a 1F1B or interleaved step repeats one period: a forward/backward pair
// (1F1B), or p·v pairs after which the micro-batches have moved by p (interleaved: the chunk
// order cycles; stream.hpp, SteadyBoundaries). A step of m micro-batches, with m' ≡ m modulo that
// move and the same warm-up, is the step of m' with (m - m') / move more periods where the
// shorter one's last period boundary stands. When in both of the shorter step's steps the state
// at that boundary is the state of the boundary `cycle` periods before (the allocator's blocks by
// place and size, every held tensor's block, micro-batches counted from the boundary's:
// PeriodProof), and the periods inserted are whole cycles of both steps, each inserted cycle
// starts from that state and repeats the last one exactly: the full step has the shorter one's
// peaks, its counters moved by a cycle's amounts per cycle. A proof, not a sample. The move is 0
// for the schedules this does not cover.
std::uint64_t period_move(const Setup& e) {
  const Schedule sched = effective_schedule(e.config);
  if (sched != Schedule::k1F1B && sched != Schedule::kInterleaved) return 0;
  return e.ranks.front().chunk_sizes.size() == 1 ? 1 : e.config.par.pp;
}

// The inserted periods a proven run of n micro-batches stands for; 0 when its proofs do not
// cover the step's m (no cycle on some stage or step, or m - n not whole cycles of all).
std::uint64_t whole_cycles(std::uint64_t m, std::uint64_t n, std::uint64_t move,
                           const Proofs& proofs, std::uint64_t* lcm) {
  *lcm = 1;
  for (const auto& st : proofs)
    for (const detail::PeriodProof& p : st) {
      if (p.cycle == 0) return *lcm = 0;
      *lcm = std::lcm(*lcm, p.cycle);
    }
  if (n >= m || (m - n) % (*lcm * move) != 0) return 0;
  return (m - n) / move;
}

// The full step's stages from a proven shorter run: `periods` more, each step's counters moved by
// its cycle's amounts per cycle.
std::optional<Error> extend(const Setup& e, std::uint64_t periods, const Proofs& proofs,
                            std::vector<StageDevice>* out) {
  Checked ck;
  for (std::size_t i = 0; i < out->size(); ++i) {
    StageDevice& d = (*out)[i];
    for (std::size_t step = 0; step < 2; ++step) {
      const detail::PeriodProof& p = proofs[i][step];
      const std::uint64_t cycles = periods / p.cycle;
      auto grow = [&](std::uint64_t* x, std::uint64_t per) {
        *x = ck.add(*x, ck.mul(per, cycles, "device.allocations"), "device.allocations");
      };
      if (step == 1) grow(&d.allocations, p.allocations);  // the reported (second) step's
      grow(&d.stats.device_allocs, p.device_allocs);
      grow(&d.stats.device_frees, p.device_frees);
      grow(&d.stats.retries, p.retries);
      grow(&d.stats.ooms, p.ooms);
    }
    d.ooms = d.stats.ooms;
  }
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), e.config);
  return std::nullopt;
}

// A run of n micro-batches with its proofs; when they cover the full step (perhaps after one more
// run of as many micro-batches modulo the cycles as the step), `*out` is the full step's answer
// and `*proven` is set. With `cut` (a run within a capacity), a run whose request fails where it
// is the full step ends there, `cut->failed` set: the full step fails that request too.
std::optional<Error> run_proving(const Setup& e, const Recompute& policy, Bytes capacity,
                                 std::int64_t only, std::uint64_t n, std::uint64_t move,
                                 std::vector<StageDevice>* out, bool* proven, std::uint64_t* ran,
                                 Shortened* cut) {
  const std::uint64_t m = default_micro_batches(e.config);
  Setup part = e;
  part.config.grad_accum = n;
  Proofs proofs;
  *ran = n;
  const bool watch = move != 0 && n < m;
  if (auto err = simulate(part, policy, capacity, only, out, watch ? &proofs : nullptr, false, cut))
    return err;
  if (!watch || (cut && cut->failed)) return std::nullopt;
  std::uint64_t lcm = 0;
  std::uint64_t periods = whole_cycles(m, n, move, proofs, &lcm);
  if (periods == 0 && lcm != 0) {
    // Cycles found, but m - n is not whole cycles: the run of the next n that is, when it costs
    // no more than the next doubling would.
    const std::uint64_t n2 = n + (m - n) % (lcm * move);
    if (n2 >= m || n2 - n > n) return std::nullopt;
    std::vector<StageDevice> again;
    part.config.grad_accum = n2;
    if (auto err = simulate(part, policy, capacity, only, &again, &proofs, false, cut)) return err;
    if (cut && cut->failed) {
      *out = std::move(again);
      *ran = n2;
      return std::nullopt;
    }
    periods = whole_cycles(m, n2, move, proofs, &lcm);
    if (periods == 0) return std::nullopt;
    *out = std::move(again);
    *ran = n2;
  }
  if (periods == 0) return std::nullopt;
  *proven = true;
  return extend(e, periods, proofs, out);
}

// The micro-batches simulate_settled replays first: min(m, 2·pp·vpp + 8) rounded up to whole
// pipeline rounds (m: the step is replayed whole).
std::uint64_t first_run(const Setup& e) {
  const std::uint64_t m = default_micro_batches(e.config);
  const std::uint64_t pp = e.config.par.pp, pv = pp * e.config.par.vpp;
  return std::min(m, ceil_div(2 * pv + 8, pp) * pp);
}

// The steady state repeats one pattern per micro-batch, so the allocator's peaks settle within a
// few: simulate min(m, 2·pp·vpp + 8) micro-batches, then twice as many, until two runs give the
// same peaks on every stage (or all m are simulated). Bounds the cost of a step of thousands of
// micro-batches without assuming where it settles.
// `stop_above`: a run whose allocated peak passes it ends the search (the step cannot fit, so
// more precision on its reserved memory changes no verdict). `stop_at_oom`: a run of the whole
// step within a capacity stops at its first failed request (the verdict is then decided); a
// shorter run stops at one only where it is the full step (Shortened), and otherwise goes on, its
// peaks compared as they are.
std::optional<Error> simulate_settled(const Setup& e, const Recompute& policy, Bytes capacity,
                                      std::int64_t only, Bytes stop_above, bool stop_at_oom,
                                      std::vector<StageDevice>* out, std::uint64_t* simulated,
                                      bool* proven) {
  const std::uint64_t m = default_micro_batches(e.config);
  const std::uint64_t pp = e.config.par.pp;
  auto round_pp = [&](std::uint64_t x) { return std::min(m, ceil_div(x, pp) * pp); };
  std::uint64_t n = first_run(e);
  *proven = false;
  if (n >= m) {
    *simulated = m;
    return simulate(e, policy, capacity, only, out, nullptr, stop_at_oom);
  }
  // Each run tries the proof first (period_move); where it holds the answer is the full step's.
  // Within a capacity, a run that fails a request where it is the full step ends the search: the
  // full step fails it too (stop_at_oom's verdict, decided).
  const std::uint64_t move = period_move(e);
  std::uint64_t ran = 0;
  Shortened cut{m};
  auto run = [&](std::uint64_t k, std::vector<StageDevice>* o) {
    return run_proving(e, policy, capacity, only, k, move, o, proven, &ran,
                       stop_at_oom ? &cut : nullptr);
  };
  std::vector<StageDevice> a, b;
  if (auto err = run(n, &a)) return err;
  if (*proven || cut.failed) {
    *out = a;
    *simulated = ran;
    return std::nullopt;
  }
  auto over = [&](const std::vector<StageDevice>& v) {
    for (const StageDevice& d : v)
      if (d.allocated_peak_bytes > stop_above) return true;
    return false;
  };
  if (over(a)) {
    *out = a;
    *simulated = n;
    return std::nullopt;
  }
  for (;;) {
    const std::uint64_t next = round_pp(2 * n);
    if (auto err = next == m ? simulate(e, policy, capacity, only, &b, nullptr, stop_at_oom)
                             : run(next, &b))
      return err;
    if (*proven || cut.failed) {
      *out = b;
      *simulated = ran;
      return std::nullopt;
    }
    bool same = true;
    for (std::size_t r = 0; r < a.size(); ++r)
      same = same && a[r].allocated_peak_bytes == b[r].allocated_peak_bytes &&
             a[r].reserved_peak_bytes == b[r].reserved_peak_bytes &&
             (a[r].ooms > 0) == (b[r].ooms > 0);
    if (same || next == m || over(b)) {
      *out = b;
      *simulated = next;
      return std::nullopt;
    }
    a.swap(b);
    n = next;
  }
}

}  // namespace

Bytes device_capacity(const GpuSpec& gpu, std::string* source) {
  if (gpu.reported_bytes != 0) {
    if (source) *source = gpu.reported_source;
    return gpu.reported_bytes;
  }
  if (source)
    *source = gpu.reported_source.empty()
                  ? "the GPU's nominal memory (the total nvidia-smi reports is not known for "
                    "this GPU)"
                  : gpu.reported_source;
  return gpu.memory_bytes;
}

Result<std::vector<StageDevice>> device_replay_full(const Setup& e, const Recompute* policy,
                                                    Bytes capacity) {
  std::vector<StageDevice> out;
  if (auto err = simulate(e, policy ? *policy : e.config.recompute, capacity, -1, &out, nullptr,
                          capacity != 0))
    return *err;
  return out;
}

Bytes device_overhead_bytes(const Setup& s, const GpuSpec* gpu) {
  Checked ck;
  Bytes sum = 0;
  for (const DeviceOverhead& o : device_overheads(s, gpu)) sum = ck.add(sum, o.bytes, "device");
  return ck.overflowed() ? kMaxBytes : sum;
}

namespace {

bool any_oom(const std::vector<StageDevice>& v) {
  for (const StageDevice& s : v)
    if (s.ooms > 0) return true;
  return false;
}

bool any_retry(const std::vector<StageDevice>& v) {
  for (const StageDevice& s : v)
    if (s.stats.retries > 0) return true;
  return false;
}

// The stage to replay: the one with the largest tensor peak (the "most loaded stage"),
// or every one (-1).
Result<std::int64_t> replayed_stage(const Setup& e, const Recompute& r, bool all_stages) {
  if (all_stages || e.ranks.size() <= 1) return std::int64_t{-1};
  Evaluation ev;
  ev.worst_only = true;
  if (auto err = evaluate(e, r, &ev)) return *err;
  return static_cast<std::int64_t>(ev.worst);
}

// Why fewer micro-batches than the step's were replayed.
std::string shortened_note(std::uint64_t simulated, std::uint64_t m, bool past_room, bool proven) {
  return "the allocator replayed " + std::to_string(simulated) + " of the step's " +
         std::to_string(m) + " micro-batches: " +
         (past_room ? std::string("its allocated blocks already pass what the GPU leaves")
          : proven  ? std::string("in both steps its state at a steady-state period boundary "
                                   "repeats an earlier boundary's exactly (the allocator's blocks "
                                   "and every held tensor), so the other micro-batches repeat "
                                   "those periods: the full step's peaks")
                    : std::string("its peaks had settled (the same with half as many)"));
}

// What the runs of one answer share: the setup, the policy, the stage, the room the fixed costs
// leave, and where the replayed count and the period proof are written.
struct Runs {
  const Setup& e;
  const Recompute& r;
  std::int64_t only;
  Bytes room;
  DeviceMemory& d;
  bool proven = false;
  // A settled replay within the room (stopping at its first failed request) or without a limit.
  std::optional<Error> run(bool within, std::vector<StageDevice>* out) {
    return simulate_settled(e, r, within ? room : 0, only, room, within, out,
                            &d.micro_batches_simulated, &proven);
  }
};

// The stages an answer reports and whether a request found no room (d.stages, d.out_of_memory).
//
// With a GPU the step is replayed as a job runs it: within what the fixed costs leave, a new
// segment past it flushing the cache and retrying (release_cached_blocks), the whole step's replay
// ending at the first request that still finds no room; only then is it replayed again without
// the limit, for the figures it would need (not for a verdict alone). Where the limited replay
// never flushes it is the unlimited one, request for request. A report replayed whole runs without
// the limit first: its request stream is the limited replay's, so where its requests alone pass
// the room (requested <= allocated <= reserved) the limited replay has failed one, and where its
// reserved peak stays within the room the two are one replay; else the limited one decides.
std::optional<Error> replay_stages(Runs& x, bool limited, bool verdict_only) {
  DeviceMemory& d = x.d;
  if (limited && !verdict_only && first_run(x.e) == default_micro_batches(x.e.config)) {
    if (auto err = x.run(false, &d.stages)) return err;
    Bytes requested = 0, reserved = 0;
    for (const StageDevice& st : d.stages) {
      requested = std::max(requested, st.stats.requested_peak);
      reserved = std::max(reserved, st.reserved_peak_bytes);
    }
    d.out_of_memory = requested > x.room;
    if (d.out_of_memory || reserved <= x.room) return std::nullopt;
    std::vector<StageDevice> within;
    if (auto err = x.run(true, &within)) return err;
    d.out_of_memory = any_oom(within);
    if (!d.out_of_memory) d.stages = std::move(within);
    return std::nullopt;
  }
  if (limited) {
    if (auto err = x.run(true, &d.stages)) return err;
    d.out_of_memory = any_oom(d.stages);
    if (!d.out_of_memory || verdict_only) return std::nullopt;
  }
  return x.run(false, &d.stages);
}

// The verdict on the stages replayed, with its notes.
void gpu_verdict(const GpuSpec& gpu, bool past_room, DeviceMemory& d) {
  if (gpu.reported_bytes != 0 && gpu.driver_reserved_bytes == 0)
    d.notes.push_back(
        "the driver's reserved memory is not known for this GPU: the total "
        "leaves it out, so the verdict may be a few hundred MiB optimistic");
  if (past_room) {
    d.out_of_memory = true;
    d.notes.push_back(
        "the step's allocated blocks alone pass the GPU's capacity less the fixed costs: it "
        "raises torch.OutOfMemoryError whatever the allocator does");
  } else if (d.out_of_memory) {
    d.notes.push_back(
        "even with its cache released (release_cached_blocks) the allocator finds no room "
        "for a request: the step raises torch.OutOfMemoryError");
  } else if (any_retry(d.stages)) {
    d.notes.push_back(
        "the cache was flushed and requests retried to stay within the GPU "
        "(torch.cuda.memory_stats: num_alloc_retries > 0): it fits, but each retry "
        "synchronizes the device and slows the step");
  }
  d.fits = !d.out_of_memory && d.total_bytes <= d.capacity_bytes;
  d.headroom_bytes =
      static_cast<std::int64_t>(d.capacity_bytes) - static_cast<std::int64_t>(d.total_bytes);
}

// device_memory, and device_verdict when `verdict_only` (the answer ends once the verdict is
// known: replay_stages).
Result<DeviceMemory> replay_device(const Setup& e, const GpuSpec* gpu, const Recompute* policy,
                                   bool all_stages, bool verdict_only) {
  DeviceMemory d;
  const TrainConfig& c = e.config;
  const Recompute& r = policy ? *policy : c.recompute;
  auto only = replayed_stage(e, r, all_stages);
  if (!only.ok()) return only.error();
  d.allocator = alloc_conf_text(c.alloc);
  Checked ck;
  d.overheads = device_overheads(e, gpu);
  for (const DeviceOverhead& o : d.overheads)
    d.overhead_bytes = ck.add(d.overhead_bytes, o.bytes, "device.overheads");
  // With a GPU, a step whose allocated blocks alone pass what the fixed costs leave cannot fit.
  Bytes room = kMaxBytes;
  if (gpu) {
    d.capacity_bytes = device_capacity(*gpu, &d.capacity_source);
    room = d.capacity_bytes > d.overhead_bytes ? d.capacity_bytes - d.overhead_bytes : 0;
  }
  // fragmentation_pct, the manual override: reserved memory is the allocated peak plus that
  // share, instead of the allocator model's cache (so no replay within the capacity).
  const bool manual = c.fragmentation_pct > 0;
  Runs runs{e, r, only.value(), room, d};
  if (auto err = replay_stages(runs, gpu && !manual && room > 0, verdict_only)) return *err;
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), c);
  if (d.out_of_memory && verdict_only) return d;
  d.worst = 0;
  for (std::size_t i = 1; i < d.stages.size(); ++i)
    if (d.stages[i].reserved_peak_bytes > d.stages[d.worst].reserved_peak_bytes) d.worst = i;
  d.allocated_peak_bytes = d.worst_stage().allocated_peak_bytes;
  d.reserved_peak_bytes = d.worst_stage().reserved_peak_bytes;
  if (manual) {
    const Bytes extra = static_cast<Bytes>(static_cast<double>(d.allocated_peak_bytes) *
                                           c.fragmentation_pct / 100.0);
    d.reserved_peak_bytes = ck.add(d.allocated_peak_bytes, extra, "device.reserved_peak_bytes");
    d.notes.push_back(
        "reserved memory is the allocated peak plus fragmentation_pct (the manual "
        "override), not the allocator model's");
  }
  d.total_bytes = ck.add(d.reserved_peak_bytes, d.overhead_bytes, "device.total_bytes");
  const std::uint64_t m = default_micro_batches(c);
  const bool past_room = d.allocated_peak_bytes > room;
  if (d.micro_batches_simulated < m)
    d.notes.push_back(shortened_note(d.micro_batches_simulated, m, past_room, runs.proven));
  if (gpu) gpu_verdict(*gpu, past_room, d);
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), c);
  return d;
}

}  // namespace

Result<DeviceMemory> device_memory(const Setup& e, const GpuSpec* gpu, const Recompute* policy,
                                   bool all_stages) {
  return replay_device(e, gpu, policy, all_stages, false);
}

Result<DeviceMemory> device_verdict(const Setup& e, const GpuSpec& gpu, const Recompute* policy,
                                    bool all_stages) {
  return replay_device(e, &gpu, policy, all_stages, true);
}

}  // namespace actmem
