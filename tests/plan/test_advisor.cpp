// The layout advisor (advisor.hpp) and its criteria: bytes sent per GPU (comm.hpp) by hand, the
// bubble's closed forms (Narayanan et al. 2021), every listed layout re-estimated to its reported
// peak and device verdict, and the front cross-checked against a brute-force search that skips
// none of the advisor's shortcuts.
#include <algorithm>
#include <sstream>

#include <catch2/catch.hpp>

#include "actmem/api/api.hpp"
#include "actmem/device/device.hpp"
#include "actmem/frameworks/emit.hpp"
#include "actmem/json_io.hpp"
#include "actmem/plan/advisor.hpp"
#include "actmem/plan/comm.hpp"
#include "actmem/plan/planner.hpp"
#include "actmem/schedules/schedule.hpp"
#include "actmem/setup/setup.hpp"
#include "actmem/step/evaluation.hpp"
#include "actmem/step/offload.hpp"
#include "helpers.hpp"

using namespace actmem;
using nlohmann::json;

namespace {

ModelSpec preset(const std::string& id) {
  std::vector<std::string> w;
  auto m = model_preset(id, &w);
  REQUIRE(m.ok());
  return m.value();
}

Setup setup_of(const ModelSpec& m, const TrainConfig& c) {
  auto s = make_setup(m, c);
  INFO((s.ok() ? std::string() : s.error().message));
  REQUIRE(s.ok());
  return s.value();
}

CommBytes comm_of(const Setup& s, RecomputeKind k) {
  Recompute r;
  r.kind = k;
  auto cb = comm_per_step(s, r);
  REQUIRE(cb.ok());
  return cb.value();
}

}  // namespace

TEST_CASE(
    "Pipeline bubble: (p-1)/m for 1F1B and GPipe, (p-1)/(v m) interleaved (Narayanan et al. 2021, "
    "Sec. 2.2)",
    "[advisor]") {
  CHECK(bubble_fraction(Schedule::k1F1B, 8, 1, 32) == Approx(7.0 / 32));
  CHECK(bubble_fraction(Schedule::kGpipe, 8, 1, 32) == Approx(7.0 / 32));
  CHECK(bubble_fraction(Schedule::kInterleaved, 8, 4, 32) == Approx(7.0 / 128));
  CHECK(bubble_fraction(Schedule::k1F1B, 1, 1, 32) == 0.0);
}

TEST_CASE("Bytes sent per GPU, GPT-2 with tp=2 (SP), pp=2, dp=2 and ZeRO-1, by hand", "[advisor]") {
  const ModelSpec m = preset("gpt2");
  TrainConfig c;
  c.seq = 1024;
  c.micro_batch = 2;
  c.grad_accum = 4;
  c.par.tp = 2;
  c.par.sp = true;
  c.par.pp = 2;
  c.par.dp = 2;
  c.par.zero = 1;
  const Setup s = setup_of(m, c);
  // One micro-batch's hidden states: 2 x 1024 x 768 x 2 B = 3,145,728 B; a 2-rank all-reduce
  // sends 2 x (1/2) of it per rank. Two blocks per layer (attention, MLP), one collective each
  // way, 6 layers per stage, 4 micro-batches.
  const CommBytes none = comm_of(s, RecomputeKind::kNone);
  CHECK(none.tp == Bytes{3145728} * 2 * 2 * 6 * 4);
  // Full recompute runs each block's forward collective again.
  CHECK(comm_of(s, RecomputeKind::kFull).tp == Bytes{3145728} * 2 * 3 * 6 * 4);
  // Selective recompute re-runs the attention core only: no TP collective.
  CHECK(comm_of(s, RecomputeKind::kSelective).tp == none.tp);
  // Pipeline: each stage sends one tensor per micro-batch (stage 0 forward, stage 1 backward),
  // the SP shard of the hidden states (1,572,864 B).
  CHECK(none.pp == Bytes{1572864} * 4);
  // Data parallel, ZeRO-1: reduce-scatter the bf16 gradients and all-gather the bf16 parameters
  // over dp x cp = 2 ranks: half of each leaves the GPU.
  const std::uint64_t params = s.ranks[none.stage].stat.params;
  CHECK(none.dp == (params * 2 - (params * 2 + 1) / 2) * 2);
  CHECK(none.cp == 0);
  CHECK(none.ep == 0);
  CHECK(none.total == none.tp + none.pp + none.dp);
  // The stage reported is the one that sends the most.
  for (const RankSetup& rs : s.ranks) CHECK(rs.stat.params <= params);
}

TEST_CASE(
    "Bytes sent per GPU: ZeRO stages over the data-parallel group (Rajbhandari et al. 2020, Sec. "
    "7)",
    "[advisor]") {
  const ModelSpec m = preset("gpt2");
  TrainConfig c;
  c.seq = 1024;
  c.grad_accum = 4;
  c.par.dp = 4;
  Bytes by_zero[4];
  for (int z = 0; z < 4; ++z) {
    c.par.zero = z;
    by_zero[z] = comm_of(setup_of(m, c), RecomputeKind::kNone).dp;
  }
  const Setup s = setup_of(m, c);
  const Bytes g = s.ranks[0].stat.params * 2;    // bf16 gradients and parameters alike
  const Bytes share = g - (g + 3) / 4;           // (4-1)/4 of them, floored
  CHECK(by_zero[0] == 2 * share);                // ring all-reduce
  CHECK(by_zero[1] == 2 * share);                // reduce-scatter + all-gather: the same bytes
  CHECK(by_zero[2] == 4 * share + share);        // a reduce-scatter per micro-batch + all-gather
  CHECK(by_zero[3] == 4 * (2 * share + share));  // gather twice, reduce-scatter, per micro-batch
}

TEST_CASE(
    "Bytes sent per GPU: hybrid sharding reduces inside a replica, then all-reduces the shard "
    "across replicas (PyTorch FSDP HYBRID_SHARD)",
    "[advisor]") {
  const ModelSpec m = preset("gpt2");
  TrainConfig c;
  c.seq = 1024;
  c.grad_accum = 4;
  c.par.dp = 8;
  c.par.dp_replicate = 2;
  for (int z = 1; z < 4; ++z) {
    c.par.zero = z;
    const Setup s = setup_of(m, c);
    const Bytes g = s.ranks[0].stat.params * 2;          // bf16 gradients and parameters alike
    const Bytes share = g - (g + 3) / 4;                 // inside a replica of 4 ranks: 3/4 leaves
    const Bytes shard = (g + 3) / 4;                     // the reduced shard
    const Bytes across = 2 * (shard - (shard + 1) / 2);  // ring all-reduce over 2 replicas
    const Bytes dp = comm_of(s, RecomputeKind::kNone).dp;
    if (z == 1) CHECK(dp == 2 * share + across);
    if (z == 2) CHECK(dp == 4 * share + share + 4 * across);
    if (z == 3) CHECK(dp == 4 * (2 * share + share) + 4 * across);
  }
}

TEST_CASE("Bytes sent per GPU: context-parallel ring and expert all-to-all, by hand", "[advisor]") {
  {
    const ModelSpec m = preset("gpt2");
    TrainConfig c;
    c.seq = 1024;
    c.micro_batch = 2;
    c.par.cp = 2;
    const Setup s = setup_of(m, c);
    // K and V of one CP rank: 2 x 512 tokens x 12 heads x (64 + 64) x 2 B = 3,145,728 B, passed
    // once forward and twice backward (K, V and their gradients), 12 attention layers.
    CHECK(comm_of(s, RecomputeKind::kNone).cp == Bytes{3145728} * 3 * 12);
    // A recomputed attention core runs its forward ring again.
    CHECK(comm_of(s, RecomputeKind::kSelective).cp == Bytes{3145728} * 4 * 12);
  }
  {
    const ModelSpec m = preset("mixtral-8x7b");
    TrainConfig c;
    c.seq = 4096;
    c.par.dp = 2;
    c.par.ep = 2;
    const Setup s = setup_of(m, c);
    // 4096 tokens x top-2 x 4096 hidden x 2 B = 67,108,864 B routed; half leaves the GPU in the
    // dispatch and in the combine, forward and backward: 4 x 33,554,432 B per layer, 32 layers.
    CHECK(comm_of(s, RecomputeKind::kNone).ep == Bytes{33554432} * 4 * 32);
    CHECK(comm_of(s, RecomputeKind::kFull).ep == Bytes{33554432} * 6 * 32);
  }
}

namespace {

GpuSpec budget_gpu(Bytes bytes) {
  GpuSpec g;
  g.id = g.name = "custom";
  g.memory_bytes = bytes;
  return g;
}

AdviseRequest request(std::uint64_t lo, std::uint64_t hi, std::uint64_t batch,
                      std::uint64_t limit) {
  AdviseRequest r;
  r.gpus_min = lo;
  r.gpus_max = hi;
  r.global_batch = batch;
  r.limit = limit;
  return r;
}

// Every layout the advisor's dimensions allow, without its shortcuts: sp off and on, GPipe beside
// 1F1B and the split-backward schedules (ZB-H1, ZB-V, DualPipe, DualPipeV) at every micro-batch
// count their code accepts, every micro-batch under every ZeRO stage, every recompute policy it
// names; each screened on its tensor peak against the capacity less its own fixed costs.
std::vector<Layout> brute_force(const ModelSpec& m, const TrainConfig& base, const GpuSpec& gpu,
                                const AdviseRequest& req) {
  std::vector<Layout> out;
  Evaluation ev;
  const Bytes capacity = device_capacity(gpu, nullptr);
  // Offload variants are searched when the GPU's FLOPs, host link and host memory are known.
  const bool link = gpu.host_link_gbs > 0 && gpu.bf16_tflops > 0 && gpu.host_memory_bytes > 0;
  for (std::uint64_t n = req.gpus_min; n <= req.gpus_max; ++n)
    for (std::uint64_t tp = 1; tp <= n; ++tp)
      for (std::uint64_t cp = 1; cp <= n; ++cp)
        for (std::uint64_t pp = 1; pp <= n; ++pp) {
          if (n % (tp * cp * pp) != 0 || tp > base.gpus_per_node) continue;
          const std::uint64_t dp = n / (tp * cp * pp);
          if (req.global_batch % dp != 0) continue;
          for (std::uint64_t vpp = 1; vpp <= m.layers; ++vpp)
            for (std::uint64_t ep = 1; ep <= dp; ++ep)
              for (int zero = 0; zero < 4; ++zero)
                for (std::uint64_t b = 1; b <= req.global_batch / dp; ++b)
                  for (int sp = 0; sp < (tp > 1 ? 2 : 1); ++sp)
                    for (Schedule sch : {Schedule::kGpipe, Schedule::k1F1B, Schedule::kInterleaved,
                                         Schedule::kZbH1, Schedule::kZbV, Schedule::kDualPipe,
                                         Schedule::kDualPipeV})
                      for (int off = 0; off < (link ? 2 : 1); ++off)
                        for (RecomputeKind k : {RecomputeKind::kNone, RecomputeKind::kSelective,
                                                RecomputeKind::kFull}) {
                          if ((req.global_batch / dp) % b != 0) continue;
                          const bool chunked = sch == Schedule::kInterleaved ||
                                               sch == Schedule::kZbV || sch == Schedule::kDualPipeV;
                          if (chunked != (vpp > 1)) continue;
                          TrainConfig c = base;
                          c.par = Parallel{tp, sp == 1, pp, vpp, cp, dp, zero, ep};
                          c.micro_batch = b;
                          c.grad_accum = req.global_batch / dp / b;
                          c.schedule = sch;
                          c.recompute = Recompute{};
                          c.recompute.kind = k;
                          c.recompute.offload = off == 1;
                          if (vpp == 1) c.layer_split = pipeline_split(m.layers, pp);
                          auto s = make_setup(m, c);
                          if (!s.ok()) continue;
                          if (evaluate(s.value(), c.recompute, &ev)) continue;
                          const Bytes over = device_overhead_bytes(s.value(), &gpu);
                          const Bytes budget = capacity > over ? capacity - over : 0;
                          const Bytes peak = ev.worst_stage().peak_bytes;
                          if (peak > budget) continue;
                          Layout l;
                          l.num_gpus = n;
                          l.config = s.value().config;
                          l.peak_bytes = peak;
                          l.screen_headroom_bytes = static_cast<std::int64_t>(budget - peak);
                          l.bubble_pct = 100.0 * bubble_fraction(sch, pp, vpp, c.grad_accum);
                          l.recompute_overhead_pct = ev.recompute_overhead_pct;
                          if (off) {
                            const OffloadTiming t =
                                offload_timing(s.value(), c.recompute, ev.worst, gpu,
                                               ev.worst_stage().host_peak_bytes);
                            if (!t.host_fits) continue;
                            l.offload_exposed_pct = offload_exposed_pct(t);
                          }
                          auto cb = comm_per_step(s.value(), c.recompute);
                          REQUIRE(cb.ok());
                          l.comm = cb.value();
                          out.push_back(l);
                        }
        }
  return out;
}

bool same_criteria(const Layout& a, const Layout& b) {
  return a.num_gpus == b.num_gpus && a.bubble_pct == b.bubble_pct &&
         a.recompute_overhead_pct == b.recompute_overhead_pct &&
         a.offload_exposed_pct == b.offload_exposed_pct && a.comm.total == b.comm.total &&
         a.screen_headroom_bytes == b.screen_headroom_bytes;
}

void cross_check(const ModelSpec& m, const TrainConfig& base, const GpuSpec& gpu,
                 const AdviseRequest& req) {
  auto a = advise(m, base, gpu, req);
  REQUIRE(a.ok());
  const Advice& adv = a.value();
  REQUIRE(adv.device_refused == 0);  // the front below is then the screened one
  const std::vector<Layout> all = brute_force(m, base, gpu, req);
  REQUIRE(!all.empty());
  REQUIRE(!adv.front.empty());
  CHECK(adv.screened_fit <= all.size());
  // Checked as counts, each failure described by its first case (a CHECK per pair costs
  // seconds under the sanitizers).
  auto describe = [](const Layout& x) {
    std::ostringstream o;
    o << "tp " << x.config.par.tp << " pp " << x.config.par.pp << " vpp " << x.config.par.vpp
      << " cp " << x.config.par.cp << " dp " << x.config.par.dp << " zero " << x.config.par.zero
      << " b " << x.config.micro_batch << " sp " << x.config.par.sp << " "
      << schedule_name(x.config.schedule) << " " << recompute_name(x.config.recompute)
      << (x.config.recompute.offload ? " + offload" : "");
    return o.str();
  };
  // No fitting layout beats a front layout on every criterion...
  std::size_t beaten = 0;
  std::string first_beaten;
  for (const Layout& f : adv.front)
    for (const Layout& x : all)
      if (dominates(x, f) && beaten++ == 0) first_beaten = describe(x) + " beats " + describe(f);
  INFO(first_beaten);
  CHECK(beaten == 0);
  // ...and every fitting layout is beaten by, or ties, one on the front.
  std::size_t uncovered = 0;
  std::string first_uncovered;
  for (const Layout& x : all) {
    const bool covered = std::any_of(adv.front.begin(), adv.front.end(), [&](const Layout& f) {
      return dominates(f, x) || same_criteria(f, x);
    });
    if (!covered && uncovered++ == 0) first_uncovered = describe(x);
  }
  INFO(first_uncovered);
  CHECK(uncovered == 0);
}

}  // namespace

TEST_CASE("advise: every listed layout re-estimates to its reported peak and device verdict",
          "[advisor]") {
  const ModelSpec m = preset("llama-3.1-8b");
  TrainConfig base;
  base.seq = 8192;
  auto gpu = gpu_preset("h100-80gb");
  REQUIRE(gpu.ok());
  auto a = advise(m, base, gpu.value(), request(8, 16, 64, 6));
  REQUIRE(a.ok());
  REQUIRE(a.value().layouts.size() == 6);
  for (const Layout& l : a.value().layouts) {
    CHECK(l.device_checked);
    CHECK(l.fits);
    auto e = estimate(m, l.config, &gpu.value(), true);
    REQUIRE(e.ok());
    CHECK(e.value().worst().peak_bytes == l.peak_bytes);
    CHECK(e.value().fits);
    CHECK(e.value().device.total_bytes == l.device_total_bytes);
    CHECK(e.value().headroom_bytes == l.headroom_bytes);
    CHECK(e.value().recompute_overhead_pct == Approx(l.recompute_overhead_pct));
    CHECK(l.config.par.tp * l.config.par.pp * l.config.par.cp * l.config.par.dp == l.num_gpus);
    CHECK(l.config.par.dp * l.config.micro_batch * l.config.grad_accum == 64);
  }
  // Ranked: each listed layout is no later than the next by the documented order.
  const auto& ls = a.value().layouts;
  for (std::size_t i = 1; i < ls.size(); ++i) CHECK_FALSE(ranks_before(ls[i], ls[i - 1]));
}

TEST_CASE("advise: the JSON layout's config, given back to estimate, gives the same peak",
          "[advisor]") {
  using actmem::test::run;
  const json base = {{"gpu", "h100-80gb"}, {"seq", 4096}};
  const json r = run({{"command", "advise"},
                      {"preset", "llama-3.1-8b"},
                      {"config", base},
                      {"advise", {{"num_gpus", "4:8"}, {"global_batch", 32}, {"limit", 3}}}});
  REQUIRE(r["layouts"].size() == 3);
  for (const json& l : r["layouts"]) {
    json c = base;
    c.update(l["config"]);
    const json e = run({{"preset", "llama-3.1-8b"}, {"config", c}, {"summary", true}});
    CHECK(e["peak"]["bytes"] == l["peak_bytes"]);
    CHECK(e["fits"] == true);
    CHECK(e["headroom_bytes"] == l["headroom_bytes"]);
  }
}

TEST_CASE("advise: the front equals a brute-force search's on small cases (GPT-2, Mixtral)",
          "[advisor]") {
  {
    const ModelSpec m = preset("gpt2-medium");
    TrainConfig base;
    base.seq = 1024;
    // A 4 GiB budget: some layouts fit, some do not.
    cross_check(m, base, budget_gpu(Bytes{4} << 30), request(1, 8, 8, 1));
  }
  {
    const ModelSpec m = preset("mixtral-8x7b");
    TrainConfig base;
    base.seq = 4096;
    cross_check(m, base, budget_gpu(Bytes{70} << 30), request(16, 16, 16, 1));
  }
  {
    // An H100's FLOPs and host link, 6 GiB of it: offload variants join the search.
    const ModelSpec m = preset("gpt2-medium");
    TrainConfig base;
    base.seq = 1024;
    auto g = gpu_preset("h100-80gb");
    REQUIRE(g.ok());
    GpuSpec gpu = g.value();
    gpu.memory_bytes = gpu.reported_bytes = Bytes{6} << 30;
    gpu.driver_reserved_bytes = 0;
    auto a = advise(m, base, gpu, request(1, 4, 8, 1));
    REQUIRE(a.ok());
    CHECK(std::any_of(a.value().front.begin(), a.value().front.end(),
                      [](const Layout& l) { return l.config.recompute.offload; }));
    cross_check(m, base, gpu, request(1, 4, 8, 1));
  }
}

TEST_CASE(
    "advise: the front equals a brute-force search's on an MLA model whose 6 layers pp 4 does not "
    "divide (DualPipe and ZB-H1 on the smaller-ends split)",
    "[advisor][deepseek]") {
  // helpers.hpp's MLA model, 6 layers: pp 4 cuts 1 + 2 + 2 + 1.
  const json cfg = actmem::test::mla_model(6);
  std::vector<std::string> w;
  auto m = model_from_json(cfg, "mla", &w);
  REQUIRE(m.ok());
  TrainConfig base;
  base.seq = 2048;
  base.attention = Attention::kFlash;
  // 2 GiB, most of it the fixed costs: pp 4's 1F1B fits with 169 MiB to spare and DualPipe's
  // second copy with 81 MiB; a micro-batch of 16 at pp 1 does not.
  const GpuSpec gpu = budget_gpu(Bytes{2} << 30);
  cross_check(m.value(), base, gpu, request(4, 8, 16, 1));
}

TEST_CASE("advise: requests it cannot serve are refused by field", "[advisor]") {
  auto bad = [](const json& req, const std::string& field) {
    const json r = evaluate_json(req);
    INFO(r.dump());
    REQUIRE_FALSE(r.value("ok", true));
    CHECK(r["error"]["field"] == field);
  };
  const json adv = {{"num_gpus", 8}, {"global_batch", 64}};
  bad({{"command", "advise"}, {"preset", "gpt2"}, {"advise", adv}}, "config.gpu");
  bad({{"command", "advise"},
       {"preset", "gpt2"},
       {"config", {{"gpu", "h100-80gb"}, {"tp", 2}}},
       {"advise", adv}},
      "config.tp");
  bad({{"command", "advise"}, {"preset", "gpt2"}, {"config", {{"gpu", "h100-80gb"}}}}, "advise");
  bad({{"command", "advise"},
       {"preset", "gpt2"},
       {"config", {{"gpu", "h100-80gb"}}},
       {"advise", {{"num_gpus", "9:3"}, {"global_batch", 8}}}},
      "advise.num_gpus");
  bad({{"command", "advise"},
       {"preset", "gpt2"},
       {"config", {{"gpu", "h100-80gb"}}},
       {"advise", {{"num_gpus", "1:1048576"}, {"global_batch", 8}}}},
      "advise.num_gpus");
  bad({{"command", "advise"},
       {"preset", "gpt2"},
       {"config", {{"gpu", "h100-80gb"}}},
       {"advise", {{"num_gpus", 8}, {"global_batch", 0}}}},
      "advise.global_batch");
  bad({{"command", "advise"},
       {"preset", "gpt2"},
       {"config", {{"gpu", "h100-80gb"}}},
       {"advise", {{"num_gpus", 8}, {"global_batch", 8}, {"lmit", 3}}}},
      "advise.lmit");
  bad({{"command", "estimate"}, {"preset", "gpt2"}, {"advise", adv}}, "advise");
}

namespace {

// Every layers:PATTERN of n letters over K, S, C, R (a chunk's first R is a C).
void all_patterns(std::uint64_t n, std::string cur, std::vector<std::string>* out) {
  if (cur.size() == n) {
    out->push_back(cur);
    return;
  }
  for (char ch : std::string("KSCR")) all_patterns(n, cur + ch, out);
}

// plan's search against every policy the engine can express on this layout: no uniform policy
// and no per-layer pattern passes the screen (tensor peak within the capacity less the fixed
// costs) with less recompute than plan's cheapest candidate that does; and plan's choice is that
// candidate, or the first cheapest the device figure accepts.
void plan_no_worse(const ModelSpec& m, TrainConfig c, std::uint64_t longest_chunk,
                   std::uint64_t fifths) {
  // A budget between the no-recompute and full-recompute peaks, so the choice is not trivial.
  Evaluation ev;
  auto s = make_setup(m, c);
  REQUIRE(s.ok());
  auto peak_of = [&](RecomputeKind k) {
    Recompute r;
    r.kind = k;
    REQUIRE_FALSE(evaluate(s.value(), r, &ev));
    return ev.worst_stage().peak_bytes;
  };
  const Bytes lo = peak_of(RecomputeKind::kFull), hi = peak_of(RecomputeKind::kNone);
  REQUIRE(lo < hi);
  const Bytes over = device_overhead_bytes(s.value(), nullptr);
  const GpuSpec gpu = budget_gpu(over + lo + (hi - lo) * fifths / 5);
  const Bytes budget = device_capacity(gpu, nullptr) - device_overhead_bytes(s.value(), &gpu);
  auto p = plan(m, c, gpu);
  REQUIRE(p.ok());
  const double best = p.value().screened_best.recompute_overhead_pct;
  std::vector<std::string> pats;
  all_patterns(longest_chunk, "", &pats);
  std::vector<Recompute> policies;
  for (const std::string& pat : pats) {
    Recompute r;
    r.kind = RecomputeKind::kPattern;
    r.pattern = pat;
    policies.push_back(r);
  }
  for (RecomputeKind k : {RecomputeKind::kNone, RecomputeKind::kSelective, RecomputeKind::kFull}) {
    Recompute r;
    r.kind = k;
    policies.push_back(r);
  }
  std::size_t cheaper = 0;
  std::string first;
  for (const Recompute& r : policies) {
    REQUIRE_FALSE(evaluate(s.value(), r, &ev));
    if (ev.worst_stage().peak_bytes > budget || ev.recompute_overhead_pct >= best - 1e-9) continue;
    if (cheaper++ == 0)
      first = recompute_name(r) + " fits the screen with overhead " +
              std::to_string(ev.recompute_overhead_pct) +
              "; plan's cheapest: " + p.value().screened_best.policy + " " + std::to_string(best);
  }
  INFO(first);
  CHECK(cheaper == 0);
  // The device's choice: the screened cheapest when it fits, else a costlier one.
  if (p.value().found) CHECK(p.value().best.recompute_overhead_pct >= best - 1e-9);
}

}  // namespace

TEST_CASE(
    "plan on uneven and interleaved splits is no worse than any uniform policy or per-layer "
    "pattern (GPT-2, every pattern of K S C R)",
    "[advisor][plan]") {
  const ModelSpec m = preset("gpt2");
  TrainConfig base;
  base.seq = 1024;
  base.micro_batch = 8;
  {
    TrainConfig c = base;  // uneven: 3, 4 and 5 layers
    c.par.pp = 3;
    c.layer_split = {3, 4, 5};
    c.grad_accum = 6;
    for (std::uint64_t f : {1, 2, 3, 4}) plan_no_worse(m, c, 5, f);
  }
  {
    TrainConfig c = base;  // interleaved: 2 ranks x 2 chunks of 3 layers
    c.par.pp = 2;
    c.par.vpp = 2;
    c.grad_accum = 4;
    for (std::uint64_t f : {1, 2, 3, 4}) plan_no_worse(m, c, 3, f);
  }
}

TEST_CASE(
    "Offload timing: each layer's kept bytes over the host link against its neighbour's forward "
    "(GPT-2 on an H100, by hand)",
    "[advisor][offload]") {
  using actmem::test::run;
  // Selective recompute keeps 34·s·b·h bytes per layer (Korthikanti et al. 2022, Table 2); the
  // H100's PCIe Gen5 x16 link carries 63.0 GB/s each way; a layer's forward is
  // 24·b·s·h² + 4·b·s²·h FLOPs (Narayanan et al. 2021, Sec. 5.1) at 40% of 989.4 TFLOP/s.
  const json r =
      run({{"preset", "gpt2"},
           {"config",
            {{"gpu", "h100-80gb"}, {"seq", 1024}, {"recompute", "selective"}, {"offload", true}}}});
  const json& t = r["offload_timing"];
  REQUIRE(t["known"] == true);
  const double s = 1024, b = 1, h = 768;
  const double copy = 12 * 34 * s * b * h / 63e9;
  const double fwd = 12 * (24 * b * s * h * h + 4 * b * s * s * h) / (0.4 * 989.4e12);
  CHECK(t["copy_out_s"].get<double>() == Approx(copy).epsilon(1e-12));
  CHECK(t["forward_s"].get<double>() == Approx(fwd).epsilon(1e-12));
  CHECK(t["exposed_s"].get<double>() == Approx(copy - fwd).epsilon(1e-9));
  CHECK(t["hidden"] == false);
  // Full recompute offloads only each layer's input (2·s·b·h bytes): a copy shorter than a
  // forward, hidden.
  const json f =
      run({{"preset", "llama-3.1-8b"},
           {"config",
            {{"gpu", "h100-80gb"}, {"seq", 8192}, {"recompute", "full"}, {"offload", true}}}});
  CHECK(f["offload_timing"]["hidden"] == true);
  CHECK(f["offload_timing"]["exposed_s"] == 0.0);
  // A GPU without a known host link: said, not guessed.
  const json u =
      run({{"preset", "gpt2"}, {"config", {{"gpu", "b200"}, {"seq", 1024}, {"offload", true}}}});
  CHECK(u["offload_timing"]["known"] == false);
}
