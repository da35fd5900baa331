// The step timeline against closed forms (Korthikanti et al. 2022; Chen et al. 2016; Megatron-LM's
// schedules) and the planner's guarantees.
#include <cmath>

#include "actmem/read/presets.hpp"
#include "actmem/report/timeline.hpp"
#include "helpers.hpp"

using namespace actmem::test;

namespace {

json timeline(const std::string& preset, json config) {
  return run(json{{"command", "timeline"}, {"preset", preset}, {"config", config}});
}

std::uint64_t transient(const json& stage, const std::string& name) {
  for (const auto& t : stage["transients"])
    if (t["name"] == name) return u(t["bytes"]);
  FAIL("no transient " << name);
  return 0;
}

std::uint64_t sum_io(const json& r, const char* side) {
  return sum_tensors(r[side]["tensors"]);
}

// The single-stage closed form: the largest of the step's event kinds (docs/schedules.md).
struct OneStage {
  std::uint64_t stat, in, out, ws, layer_grads, logits, opt;
};

OneStage one_stage(const json& est, const json& tl) {
  const json& s = tl["stages"][0];
  return OneStage{u(s["static_bytes"]),
                  sum_io(est, "input_layer"),
                  sum_io(est, "output_layer"),
                  transient(s, "cublas.workspace"),
                  transient(s, "bwd.layer_grads"),
                  transient(s, "loss.fp32_logits_buffer"),
                  transient(s, "optimizer.step_temp")};
}

}  // namespace

TEST_CASE(
    "Timeline = closed form without recompute: L layers kept, then the loss or the first backward",
    "[timeline][closed-form]") {
  const json cfg = {{"seq", 4096},
                    {"micro_batch", 1},
                    {"attention", "flash"},
                    {"profile", "megatron"},
                    {"grad_accum", 1}};
  const json est = run_preset("llama-3.1-8b", cfg);
  const json tl = timeline("llama-3.1-8b", cfg);
  const OneStage k = one_stage(est, tl);
  const std::uint64_t L = 32, full = u(est["per_layer"]["full_bytes"]);
  const std::uint64_t layers = k.in + L * full;
  const std::uint64_t expect =
      k.stat + std::max({layers + k.ws,                         // last forward
                         layers + k.out + k.ws + 2 * k.logits,  // loss backward
                         layers + k.ws + k.layer_grads,         // first layer backward
                         k.ws + k.opt});                        // optimizer step
  CHECK(u(tl["peak_bytes"]) == expect);
  CHECK(u(est["peak_bytes"]) == expect);
}

TEST_CASE(
    "Timeline = closed form with full recompute: L checkpoints plus one layer recomputed (Chen et "
    "al. 2016)",
    "[timeline][closed-form]") {
  const json cfg = {{"seq", 4096},
                    {"micro_batch", 2},
                    {"profile", "megatron"},
                    {"recompute", "full"},
                    {"grad_accum", 1}};
  const json est = run_preset("llama-3.1-8b", cfg);
  const json tl = timeline("llama-3.1-8b", cfg);
  const OneStage k = one_stage(est, tl);
  const std::uint64_t L = 32, full = u(est["per_layer"]["full_bytes"]);
  const std::uint64_t ckpt = 2ULL * 2 * 4096 * 4096;  // 2sbh at b = 2
  const std::uint64_t alias = ckpt;                   // ln1.in is the layer input itself
  const std::uint64_t expect =
      k.stat + std::max({k.in + (L - 1) * ckpt + full + k.ws,            // last forward
                         k.in + L * ckpt + k.out + k.ws + 2 * k.logits,  // loss backward
                         k.in + L * ckpt + (full - alias) + k.ws + k.layer_grads,
                         // top layer backward
                         k.ws + k.opt});
  CHECK(u(tl["peak_bytes"]) == expect);
}

TEST_CASE("Timeline = closed form with every-k: L/k checkpoints plus one k-layer segment",
          "[timeline][closed-form]") {
  const json cfg = {{"seq", 8192},
                    {"micro_batch", 1},
                    {"profile", "megatron"},
                    {"recompute", "every:4"},
                    {"grad_accum", 1}};
  const json est = run_preset("llama-3.1-8b", cfg);
  const json tl = timeline("llama-3.1-8b", cfg);
  const OneStage k = one_stage(est, tl);
  const std::uint64_t full = u(est["per_layer"]["full_bytes"]), ckpt = 2ULL * 8192 * 4096;
  const std::uint64_t segment = (full - ckpt) + 3 * full;  // the top segment regenerated at once
  const std::uint64_t kept = 8 * ckpt;                     // 32 layers / 4
  const std::uint64_t expect = k.stat + std::max({k.in + kept + k.out + k.ws + 2 * k.logits,
                                                  k.in + kept + segment + k.ws + k.layer_grads,
                                                  k.in + 7 * ckpt + full + k.ws, k.ws + k.opt});
  CHECK(u(tl["peak_bytes"]) == expect);
}

TEST_CASE("1F1B: stage i holds p - i micro-batches (Narayanan et al. 2021), GPipe holds all m",
          "[timeline][schedule]") {
  const json cfg = {
      {"seq", 2048}, {"pp", 4}, {"micro_batches", 8}, {"dropout", 0.0}, {"profile", "megatron"}};
  const json est = run_preset("llama-2-7b", cfg);
  const std::uint64_t full = u(est["per_layer"]["full_bytes"]);
  for (std::uint64_t i = 0; i < 4; ++i) {
    INFO("stage " << i);
    CHECK(u(est["stages"][i]["in_flight_chunks"]) == 4 - i);
    CHECK(u(est["stages"][i]["activations"]["layers_bytes"]) == (4 - i) * 8 * full);
  }
  const json tl = timeline("llama-2-7b", cfg);
  // Stage 0's peak comes with all p micro-batches' activations alive.
  CHECK(u(tl["stages"][0]["at_peak"]["activations"]) == 4 * 8 * full);
  json gp = cfg;
  gp["schedule"] = "gpipe";
  const json g = run_preset("llama-2-7b", gp);
  CHECK(u(g["stages"][0]["in_flight_chunks"]) == 8);
  CHECK(u(g["stages"][3]["in_flight_chunks"]) == 8);
}

TEST_CASE(
    "Interleaved 1F1B: rank r holds min((p-r-1)*2 + (v-1)p + 1, m v) chunks (Megatron-LM "
    "schedules.py)",
    "[timeline][schedule]") {
  const std::uint64_t p = 4, v = 2, m = 8;
  const json cfg = {{"seq", 2048}, {"pp", p}, {"vpp", v}, {"micro_batches", m}, {"dropout", 0.0}};
  const json est = run_preset("llama-2-7b", cfg);
  for (std::uint64_t r = 0; r < p; ++r) {
    INFO("rank " << r);
    CHECK(u(est["stages"][r]["in_flight_chunks"]) ==
          std::min((p - r - 1) * 2 + (v - 1) * p + 1, m * v));
  }
  // Stage 0: L(1 + (p-1)/(pv)) layers' worth = 32 * (1 + 3/8) = 44 (Korthikanti et al. 2022).
  CHECK(u(est["stages"][0]["kept_layer_slots"]) == 44);
  // With m == p Megatron-LM runs every forward first: all m v chunks are in flight.
  json allf = cfg;
  allf["micro_batches"] = p;
  CHECK(u(run_preset("llama-2-7b", allf)["stages"][3]["in_flight_chunks"]) == p * v);
}

TEST_CASE("Uneven splits: Llama-3 405B style 7 + 8 x 14 + 7 layers over 16 stages with vpp = 2",
          "[timeline][schedule]") {
  json split = json::array();
  split.push_back(7);
  for (int i = 0; i < 14; ++i) split.push_back(8);
  split.push_back(7);
  const json r = run_preset("llama-3.1-405b", {{"tp", 8},
                                               {"sp", true},
                                               {"pp", 16},
                                               {"vpp", 2},
                                               {"micro_batches", 64},
                                               {"layer_split", split},
                                               {"attention", "flash"},
                                               {"seq", 8192}});
  CHECK(r["stages"].size() == 16);
  CHECK(u(r["stages"][0]["layers"]) == 7);
  CHECK(u(r["stages"][1]["layers"]) == 8);
  const json bad = actmem::evaluate_json(
      json{{"preset", "llama-3.1-405b"}, {"config", {{"pp", 16}, {"layer_split", {7, 8}}}}});
  CHECK(bad["error"]["field"] == "config.layer_split");
}

TEST_CASE(
    "Chen et al. 2016: the best every-k is near sqrt(L c/f), and the planner never does worse",
    "[planner][chen]") {
  // L uniform layers on one stage: every-k keeps L/k checkpoints (c bytes each) and regenerates one
  // k-layer segment (f bytes per layer), so the peak ~ (L/k) c + k f is least near k* = sqrt(L
  // c/f): Chen's sqrt(n) when a layer's activations are as large as its input (c = f).
  const std::uint64_t L = 1024;
  json model = {{"hidden_size", 256},      {"num_attention_heads", 4},  {"num_hidden_layers", L},
                {"vocab_size", 1000},      {"intermediate_size", 1024}, {"ffn_type", "gelu"},
                {"norm_type", "layernorm"}};
  const json base = {{"seq", 512}, {"micro_batch", 1}, {"attention", "flash"}, {"grad_accum", 1}};
  const json one = run(json{{"model", model}, {"config", base}});
  const double f = static_cast<double>(u(one["per_layer"]["full_bytes"])), ckpt = 2.0 * 512 * 256;
  const double k_star = std::sqrt(static_cast<double>(L) * ckpt / f);
  std::uint64_t best_k = 0, best_peak = ~0ULL;
  double best_overhead = 0;
  for (std::uint64_t k = 1; k <= 64; ++k) {
    json c = base;
    c["recompute"] = "every:" + std::to_string(k);
    const json r = run(json{{"model", model}, {"config", c}});
    if (u(r["peak_bytes"]) < best_peak)
      best_peak = u(r["peak_bytes"]), best_k = k, best_overhead = r["recompute_overhead_pct"];
  }
  INFO("best k = " << best_k << ", k* = " << k_star);
  CHECK(static_cast<double>(best_k) >= k_star / 2);
  CHECK(static_cast<double>(best_k) <= k_star * 2);
  // The GPU is exactly as large as the best every-k needs on the device (its allocator-reserved
  // peak and fixed costs): the planner finds a policy at most as costly that fits there too.
  json c = base;
  c["recompute"] = "every:" + std::to_string(best_k);
  const json at_best = run(json{{"model", model}, {"config", c}});
  c.erase("recompute");
  c["gpu_memory_bytes"] = u(at_best["device"]["total_bytes"]);
  const json plan = run(json{{"command", "plan"}, {"model", model}, {"config", c}});
  REQUIRE(plan["found"].get<bool>());
  CHECK(plan["recompute_overhead_pct"].get<double>() <= best_overhead + 1e-9);
  c["recompute"] = plan["policy"];
  CHECK(run(json{{"model", model}, {"config", c}})["fits"] == true);
}

TEST_CASE(
    "Planner: the policy it returns fits when estimated again, no policy is cheaper among those "
    "that fit",
    "[planner]") {
  const json cfg = {
      {"seq", 8192}, {"tp", 8}, {"sp", true}, {"pp", 4}, {"gpu_memory_bytes", 48ULL << 30}};
  const json plan = run(json{{"command", "plan"}, {"preset", "llama-3.1-70b"}, {"config", cfg}});
  REQUIRE(plan["found"].get<bool>());
  json again = cfg;
  again["recompute"] = plan["policy"];
  const json r = run_preset("llama-3.1-70b", again);
  CHECK(r["fits"].get<bool>());
  CHECK(u(r["peak_bytes"]) == u(plan["peak_bytes"]));
  for (const auto& p : plan["pareto"])
    if (p["fits"].get<bool>())
      CHECK(p["recompute_overhead_pct"].get<double>() >=
            plan["recompute_overhead_pct"].get<double>());
}

TEST_CASE(
    "Properties: peak is monotonic in micro-batch and sequence, offload never raises the GPU peak",
    "[timeline][property]") {
  const json sw = run(json{
      {"command", "sweep"},
      {"preset", "llama-3.1-8b"},
      {"config", {{"attention", "flash"}, {"dp", 8}, {"zero", 3}}},
      {"sweep", {{"micro_batches", {1, 2, 3, 4, 8}}, {"seqs", {256, 512, 1024, 3072, 8192}}}}});
  const json& g = sw["peak_bytes"];
  for (std::size_t i = 0; i < g.size(); ++i)
    for (std::size_t j = 0; j < g[i].size(); ++j) {
      if (i + 1 < g.size()) CHECK(g[i][j].get<std::int64_t>() <= g[i + 1][j].get<std::int64_t>());
      if (j + 1 < g[i].size())
        CHECK(g[i][j].get<std::int64_t>() <= g[i][j + 1].get<std::int64_t>());
    }
  for (const char* rc : {"none", "selective", "full", "every:4"})
    for (const char* preset : {"llama-3.1-8b", "gpt2-xl"}) {
      INFO(rc << " " << preset);
      json c = {{"recompute", rc}, {"seq", 1024}, {"pp", 2}};
      const std::uint64_t gpu = u(run_preset(preset, c)["peak_bytes"]);
      c["offload"] = true;
      CHECK(u(run_preset(preset, c)["peak_bytes"]) <= gpu);
    }
}

TEST_CASE("fit agrees with estimate's fits: max micro-batch fits, one more does not",
          "[planner][fit]") {
  const json cfg = {{"attention", "flash"}, {"recompute", "selective"}, {"dp", 8}, {"zero", 3},
                    {"seq", 4096},          {"gpu", "h100-80gb"}};
  const json f = run(json{{"command", "fit"}, {"preset", "llama-3.1-8b"}, {"config", cfg}});
  const std::uint64_t b = u(f["max_micro_batch"]);
  REQUIRE(b >= 1);
  json c = cfg;
  c["micro_batch"] = b;
  CHECK(run_preset("llama-3.1-8b", c)["fits"].get<bool>());
  c["micro_batch"] = b + 1;
  CHECK_FALSE(run_preset("llama-3.1-8b", c)["fits"].get<bool>());
  json s = cfg;
  s["seq"] = u(f["max_seq"]);
  CHECK(run_preset("llama-3.1-8b", s)["fits"].get<bool>());
  s["seq"] = u(f["max_seq"]) + 1;
  CHECK_FALSE(run_preset("llama-3.1-8b", s)["fits"].get<bool>());
}

TEST_CASE(
    "Recompute overhead: full recompute adds one forward of every layer (about +33%), selective "
    "its attention core",
    "[timeline][flops]") {
  const json full = run_preset("llama-3.1-8b", {{"recompute", "full"}, {"seq", 4096}});
  const double pct = full["recompute_overhead_pct"];
  CHECK(pct > 30.0);
  CHECK(pct < 33.34);  // the logits are not recomputed
  const json sel = run_preset("llama-3.1-8b", {{"recompute", "selective"}, {"seq", 4096}});
  CHECK(sel["recompute_overhead_pct"].get<double>() > 0.0);
  CHECK(sel["recompute_overhead_pct"].get<double>() < 10.0);
  const json flash =
      run_preset("llama-3.1-8b", {{"recompute", "selective"}, {"attention", "flash"}});
  CHECK(flash["recompute_overhead_pct"].get<double>() == 0.0);  // flash keeps no core to redo
}

TEST_CASE(
    "The peak-only fast path equals the layer-by-layer event simulation (every stage, peak and "
    "event)",
    "[timeline][fast-path]") {
  int n = 0;
  // layers:KSCR fits the interleaved runs' 4-layer chunks (a longer pattern is refused).
  for (const char* rc : {"none", "selective", "full", "every:3", "layers:KSCR", "custom"})
    for (const char* sched : {"1f1b", "gpipe", "interleaved"})
      for (bool offload : {false, true}) {
        json c = {{"recompute", rc},    {"schedule", sched}, {"offload", offload}, {"pp", 4},
                  {"micro_batches", 8}, {"seq", 1024},       {"dropout", 0.1}};
        // custom_keep only where the policy reads it (elsewhere it is an error).
        if (std::string(rc) == "custom") c["custom_keep"] = {"attn.qkv_in", "mlp.fc1_in"};
        if (std::string(sched) == "interleaved") c["vpp"] = 2;
        INFO(rc << " " << sched << " offload=" << offload);
        const json est = run_preset("llama-2-7b", c);
        const json tl = timeline("llama-2-7b", c);
        for (std::size_t i = 0; i < 4; ++i) {
          CHECK(u(est["stages"][i]["peak_bytes"]) == u(tl["stages"][i]["peak_bytes"]));
          CHECK(est["stages"][i]["peak_at"] == tl["stages"][i]["peak_at"]);
          std::uint64_t top = 0;
          for (const auto& ev : tl["stages"][i]["events"]) top = std::max(top, u(ev["live_bytes"]));
          CHECK(top == u(tl["stages"][i]["peak_bytes"]));
        }
        ++n;
      }
  CHECK(n == 36);
}

TEST_CASE(
    "docs/schedules.md worked example: toy model, p = 2, m = 3 (numbers as printed in the doc)",
    "[timeline][docs]") {
  const json model = actmem::test::toy_model();
  const json cfg = {{"seq", 16},          {"dtype", "fp32"}, {"pp", 2},
                    {"micro_batches", 3}, {"dropout", 0.0},  {"cublas_workspace_bytes", 0}};
  auto tl = [&](json c) {
    return run(json{{"command", "timeline"}, {"model", model}, {"config", c}});
  };
  const json r = tl(cfg);
  CHECK(u(r["stages"][0]["peak_bytes"]) == 2031616);
  CHECK(r["stages"][0]["peak_at"] == "B mb0 c0 L1");
  CHECK(u(r["stages"][0]["static_bytes"]) == 1728512);
  CHECK(u(r["stages"][0]["at_peak"]["activations"]) == 278528);
  CHECK(u(r["stages"][1]["peak_bytes"]) == 1886208);
  CHECK(r["stages"][1]["peak_at"] == "loss bwd mb0");
  json gpipe = cfg;
  gpipe["schedule"] = "gpipe";
  const json g = tl(gpipe);
  CHECK(u(g["stages"][0]["peak_bytes"]) == 2170880);
  CHECK(u(g["stages"][0]["at_peak"]["activations"]) == 417792);
  CHECK(u(g["stages"][1]["peak_bytes"]) == 2197504);
  json full = cfg;
  full["recompute"] = "full";
  const json f = tl(full);
  CHECK(u(f["stages"][0]["peak_bytes"]) == 1835008);
  CHECK(f["stages"][0]["peak_at"] == "B mb0 c0 L1");
  CHECK(std::abs(f["recompute_overhead_pct"].get<double>() - 32.05128205128205) < 1e-9);
}

TEST_CASE(
    "Per-op events (the page's chart): one event per pipeline op, whose maximum is the stage's "
    "peak",
    "[timeline][fast-path]") {
  const json cfg = {
      {"recompute", "every:2"}, {"pp", 4}, {"vpp", 2}, {"micro_batches", 8}, {"seq", 1024}};
  const json r = run(json{
      {"command", "timeline"}, {"preset", "llama-2-7b"}, {"config", cfg}, {"events", "worst_ops"}});
  const json& w = r["stages"][static_cast<std::size_t>(u(r["peak_stage"]))];
  std::uint64_t top = 0;
  for (const auto& ev : w["events"]) top = std::max(top, u(ev["live_bytes"]));
  CHECK(top == u(w["peak_bytes"]));
  CHECK(w["events"].size() < 2 * 8 * 2 * 4 + 32);  // about one per op, not one per layer
  for (const auto& s : r["stages"])
    if (s["stage"] != r["peak_stage"]) CHECK(s["events"].empty());
}

TEST_CASE(
    "The collapsed walk (skipped steady-state periods, GPipe bulk ops) gives the recorded walk's "
    "peaks, labels, host peak and PCIe bytes on every preset x schedule x policy",
    "[timeline][collapse]") {
  int n = 0;
  for (const auto& p : actmem::all_presets()) {
    if (std::string(p.kind) != "models") continue;
    std::vector<std::string> warnings;
    auto m = actmem::model_preset(p.id, &warnings);
    REQUIRE(m.ok());
    const std::uint64_t L = m.value().layers;
    const std::uint64_t pp = L % 4 == 0 ? 4 : (L % 2 == 0 ? 2 : 1);
    for (const char* sched : {"1f1b", "gpipe", "interleaved"}) {
      if (std::string(sched) == "interleaved" && (pp == 1 || L % (2 * pp) != 0)) continue;
      for (const char* rc : {"none", "selective", "full", "every:3", "layers:KSCRRR"})
        for (std::uint64_t mult : {1, 2, 5, 9})
          for (bool offload : {false, true}) {
            actmem::TrainConfig c;
            c.seq = 512;
            c.par.pp = pp;
            c.par.vpp = std::string(sched) == "interleaved" ? 2 : 1;
            REQUIRE(actmem::parse_schedule(sched, &c.schedule));
            REQUIRE(actmem::parse_recompute(rc, &c.recompute));
            c.recompute.offload = offload;
            // m = p (no steady state), 2p, 5p and 9p (periods skipped, runs bulked), and p + 1
            // for 1F1B and GPipe (a remainder after the skipped periods).
            c.grad_accum = mult * pp + (mult == 9 && c.par.vpp == 1 ? 1 : 0);
            INFO(p.id << " " << sched << " " << rc << " offload=" << offload);
            auto e = actmem::estimate(m.value(), c, nullptr, false);
            REQUIRE(e.ok());
            auto fast = actmem::simulate(e.value(), false);
            auto full = actmem::simulate(e.value(), true);
            REQUIRE(fast.ok());
            REQUIRE(full.ok());
            for (std::size_t i = 0; i < pp; ++i) {
              const auto& a = fast.value().stages[i];
              const auto& b = full.value().stages[i];
              CHECK(a.peak_bytes == b.peak_bytes);
              CHECK(a.peak_at == b.peak_at);
              CHECK(a.host_peak_bytes == b.host_peak_bytes);
              CHECK(a.pcie_bytes == b.pcie_bytes);
              CHECK(e.value().stages[i].peak_bytes == b.peak_bytes);
            }
            ++n;
          }
    }
  }
  CHECK(n > 1500);
}

TEST_CASE(
    "The step model's cost does not grow with micro-batches: 1F1B's peak is the same at 64 "
    "and 4,096 micro-batches (Narayanan et al. 2021: p - r in flight)",
    "[timeline][collapse]") {
  json c = {{"pp", 16},
            {"tp", 8},
            {"sp", true},
            {"seq", 8192},
            {"attention", "flash"},
            {"recompute", "selective"},
            {"micro_batches", 64}};
  c["layer_split"] = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  const json a = run_preset("llama-3.1-405b", c);
  c["micro_batches"] = 4096;
  const json b = run_preset("llama-3.1-405b", c);
  CHECK(u(a["peak_bytes"]) == u(b["peak_bytes"]));
  CHECK(a["peak_at"] == b["peak_at"]);
}

TEST_CASE(
    "The collapsed walk equals the recorded walk over pipeline shapes: p = 2..6, v = 1..3, "
    "m from p to 13p, every schedule, policy and offload (toy model of 24 layers)",
    "[timeline][collapse]") {
  actmem::ModelSpec m;
  m.layers = 24, m.hidden = 64, m.vocab = 128, m.max_positions = 64;
  m.kinds[0].heads = m.kinds[0].kv_heads = 4;
  m.kinds[0].head_dim = 16;
  m.kinds[0].ffn_hidden = 256;
  int n = 0;
  for (std::uint64_t pp : {2, 3, 4, 6})
    for (std::uint64_t vpp : {1, 2, 3}) {
      if (24 % (pp * vpp) != 0) continue;
      for (const char* sched : {"1f1b", "gpipe"})
        for (std::uint64_t mult : {1, 2, 3, 7, 13})
          for (std::uint64_t extra : {0, 1}) {
            if (vpp > 1 && extra) continue;  // the interleaved schedule needs m % p == 0
            for (const char* rc : {"none", "selective", "every:2", "layers:KCR"})
              for (bool offload : {false, true}) {
                actmem::TrainConfig c;
                c.seq = 32;
                c.par.pp = pp;
                c.par.vpp = vpp;
                c.grad_accum = mult * pp + extra;
                REQUIRE(actmem::parse_schedule(sched, &c.schedule));
                REQUIRE(actmem::parse_recompute(rc, &c.recompute));
                c.recompute.offload = offload;
                INFO("p=" << pp << " v=" << vpp << " m=" << c.grad_accum << " " << sched << " "
                          << rc << " offload=" << offload);
                auto e = actmem::estimate(m, c, nullptr, false);
                REQUIRE(e.ok());
                auto full = actmem::simulate(e.value(), true);
                REQUIRE(full.ok());
                for (std::size_t i = 0; i < pp; ++i) {
                  const auto& b = full.value().stages[i];
                  const auto& a = e.value().stages[i];
                  // The in-flight maximum by the full op list (the first maximum; equal weight
                  // with more chunks counts as more in flight).
                  std::vector<std::uint64_t> w;
                  for (const auto& ch : a.chunk_choices) {
                    std::uint64_t sum = 0;
                    for (auto x : ch) sum += actmem::kept_bytes(x, e.value().kinds[0].costs);
                    w.push_back(sum);
                  }
                  std::uint64_t chunks = 0, weight = 0, best_c = 0, best_w = 0;
                  bool first = true;
                  for (const auto& op : actmem::pipeline_ops(actmem::effective_schedule(c), i, pp,
                                                             vpp, c.grad_accum)) {
                    if (op.forward)
                      ++chunks, weight += w[op.chunk];
                    else
                      --chunks, weight -= w[op.chunk];
                    if (first || weight > best_w || (weight == best_w && chunks > best_c))
                      best_c = chunks, best_w = weight, first = false;
                  }
                  CHECK(a.in_flight == best_c);
                  CHECK((offload ? a.act.host_bytes : a.act.layers_bytes) == best_w);
                  CHECK(a.peak_bytes == b.peak_bytes);
                  CHECK(a.peak_at == b.peak_at);
                  CHECK(e.value().eval.stages[i].host_peak_bytes == b.host_peak_bytes);
                  CHECK(e.value().eval.stages[i].pcie_bytes == b.pcie_bytes);
                }
                ++n;
              }
          }
    }
  CHECK(n > 800);
}

TEST_CASE(
    "fit's aimed search is exact: the answer fits and one more step does not, over presets, "
    "attention kinds, recompute policies and budgets",
    "[planner][fit]") {
  int n = 0;
  for (const char* preset : {"gpt2", "llama-3.1-8b", "mixtral-8x7b", "llama-2-70b"})
    for (const char* attn : {"eager", "flash"})
      for (const char* rc : {"none", "full"})
        for (const char* gpu : {"rtx-4090", "h100-80gb", "h200-141gb"}) {
          json cfg = {{"attention", attn}, {"recompute", rc}, {"seq", 1024}, {"gpu", gpu}};
          if (std::string(preset) == "llama-2-70b") cfg["tp"] = 8, cfg["pp"] = 4, cfg["sp"] = true;
          const json f = run(json{{"command", "fit"}, {"preset", preset}, {"config", cfg}});
          INFO(preset << " " << attn << " " << rc << " " << gpu << " " << f.dump());
          const std::uint64_t b = u(f["max_micro_batch"]), s = u(f["max_seq"]);
          const std::uint64_t step = u(f["seq_step"]);
          auto fits = [&](std::uint64_t mb, std::uint64_t seq) {
            json c = cfg;
            c["micro_batch"] = mb;
            c["seq"] = seq;
            const json r = actmem::evaluate_json(json{{"preset", preset}, {"config", c}});
            return r["ok"].get<bool>() && r["fits"].get<bool>();
          };
          if (b > 0) CHECK(fits(b, 1024));
          CHECK_FALSE(fits(b + 1, 1024));
          if (s > 0) CHECK(fits(1, s));
          const json lim = run_preset(preset, json::object());
          const bool at_table = lim["model"]["position_embedding"] == "learned" && s + step > 1024;
          if (!at_table) CHECK_FALSE(fits(1, s + step));
          ++n;
        }
  CHECK(n == 48);
}

TEST_CASE("timeline events written out are capped at kMaxTimelineEvents, the peak is not",
          "[timeline][bounds]") {
  // Llama 3.1 8B, 70,000 micro-batches: 4,480,000 layer events on its one stage (2 per layer per
  // micro-batch) plus the loss and optimizer events. The list keeps the first kMaxTimelineEvents.
  const json big = actmem::evaluate_json({{"command", "timeline"},
                                          {"preset", "llama-3.1-8b"},
                                          {"config", {{"micro_batches", 70000}}}});
  REQUIRE(big.value("ok", false));
  const json& st = big["stages"][0];
  CHECK(st["events"].size() == actmem::kMaxTimelineEvents);
  CHECK(st["events_truncated"] == true);
  CHECK(st["events_total"].get<std::uint64_t>() == 4480000u + 2u * 70000u + 1u);
  CHECK(big["events_limit"] == actmem::kMaxTimelineEvents);
  // The peak is the uncut walk's: the same as without events.
  const json none = actmem::evaluate_json({{"command", "timeline"},
                                           {"preset", "llama-3.1-8b"},
                                           {"events", "none"},
                                           {"config", {{"micro_batches", 70000}}}});
  CHECK(big["peak_bytes"] == none["peak_bytes"]);
  CHECK(big["peak_at"] == none["peak_at"]);
  // Several stages share the limit evenly.
  const json pp = actmem::evaluate_json({{"command", "timeline"},
                                         {"preset", "llama-3.1-8b"},
                                         {"config", {{"pp", 4}, {"micro_batches", 4096}}}});
  REQUIRE(pp.value("ok", false));
  for (const json& s : pp["stages"]) CHECK(s["events"].size() == actmem::kMaxTimelineEvents / 4);
  // A short step is written whole.
  const json small = actmem::evaluate_json(
      {{"command", "timeline"}, {"preset", "gpt2"}, {"config", {{"seq", 512}}}});
  CHECK(small["stages"][0]["events_truncated"] == false);
  CHECK(small["stages"][0]["events"].size() == small["stages"][0]["events_total"]);
}

TEST_CASE("plan sizes its patterns to the stage that binds under an uneven layer_split",
          "[plan][bounds]") {
  // Llama 3.1 8B, pp = 2 split 12 + 20, 8 micro-batches of 8,192 tokens, dp = 8, ZeRO-1, 51.1 GiB.
  // Patterns sized to stage 0's 12 layers cycled over stage 1's 20 and the plan chose
  // layers:SSSSSSCCCCCC at +17.96 %; sized to 20 as well it finds +13.44 % (issue 12).
  const json req = {{"command", "plan"},
                    {"preset", "llama-3.1-8b"},
                    {"config",
                     {{"pp", 2},
                      {"layer_split", {12, 20}},
                      {"micro_batches", 8},
                      {"seq", 8192},
                      {"dp", 8},
                      {"zero", 1},
                      {"gpu_memory", "51.1GiB"}}}};
  // The budget is the tensors' 51.1 GiB plus the fixed costs of this layout (context, driver,
  // the dp and pp communicators), which the device verdict adds (device.hpp).
  json req2 = req;
  const json first = actmem::evaluate_json(req);
  req2["config"].erase("gpu_memory");
  req2["config"]["gpu_memory_bytes"] = static_cast<std::uint64_t>(51.1 * 1073741824.0) +
                                       first["overhead_bytes"].get<std::uint64_t>();
  const json r = actmem::evaluate_json(req2);
  REQUIRE(r.value("found", false));
  // The 20-layer pattern at +13.44 % is among the candidates (screened in by its tensor peak);
  // the allocator's fragmentation refuses it on the device, and the next one (one selective layer
  // fewer) is chosen.
  bool seen = false;
  for (const json& pt : r["pareto"])
    seen = seen || (pt["policy"] == "layers:SSSSSSSSSSSSCCCCCCCC" &&
                    pt["recompute_overhead_pct"].get<double>() < 13.45);
  CHECK(seen);
  CHECK(r["policy"] == "layers:SSSSSSSSSSSCCCCCCCCC");
  CHECK(r["recompute_overhead_pct"].get<double>() < 14.95);
  // Re-estimated with that policy: the same peak, within the budget.
  json est = req2;
  est.erase("command");
  est["config"]["recompute"] = r["policy"];
  const json e = actmem::evaluate_json(est);
  CHECK(e["peak_bytes"] == r["peak_bytes"]);
  CHECK(e["peak_bytes"].get<std::uint64_t>() <= r["budget_bytes"].get<std::uint64_t>());
  CHECK(e["fits"] == true);
}
