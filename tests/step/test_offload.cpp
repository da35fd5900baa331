// Per-layer offload (lower-case letters of layers:PATTERN, policy.hpp): what stays on the GPU and
// what lives in host memory, each offloaded layer's copy against the forwards it hides behind
// (offload.cpp), and plan's joint keep / recompute / offload choice ranked by lost compute.
#include "helpers.hpp"

using namespace actmem;
using actmem::test::run;
using actmem::test::u;
using nlohmann::json;

namespace {

json gpt2(const json& extra) {
  json c = {{"gpu", "h100-80gb"}, {"seq", 1024}};
  for (auto it = extra.begin(); it != extra.end(); ++it) c[it.key()] = it.value();
  return run({{"preset", "gpt2"}, {"config", c}});
}

}  // namespace

TEST_CASE(
    "Per-layer offload: every layer lower-case is the offload switch, and half of them keeps the "
    "other half on the GPU (GPT-2, selective, by hand)",
    "[offload]") {
  // Every layer offloaded, by the switch or by letters: the same walk and the same answer.
  const json all_switch = gpt2({{"recompute", "selective"}, {"offload", true}});
  const json all_letters = gpt2({{"recompute", "layers:s"}});
  CHECK(all_letters["peak_bytes"] == all_switch["peak_bytes"]);
  CHECK(all_letters["activations"] == all_switch["activations"]);
  CHECK(all_letters["device"]["reserved_peak_bytes"] ==
        all_switch["device"]["reserved_peak_bytes"]);
  CHECK(all_letters["offload_timing"] == all_switch["offload_timing"]);
  // Selective keeps 34·s·b·h bytes per layer (Korthikanti et al. 2022, Table 2): 26,738,688 B at
  // s = 1024, b = 1, h = 768. layers:sS offloads layers 0, 2, ..., 10 of GPT-2's 12: six layers'
  // bytes in host memory; the GPU keeps the other six and the one in transit.
  const std::uint64_t layer = 34ull * 1024 * 768;
  const json half = gpt2({{"recompute", "layers:sS"}});
  CHECK(u(half["activations"]["host_bytes"]) == 6 * layer);
  CHECK(u(half["activations"]["layers_bytes"]) == 7 * layer);
  const json none = gpt2({{"recompute", "selective"}});
  CHECK(u(none["activations"]["layers_bytes"]) == 12 * layer);
  // The walk: half the layers' bytes leave the GPU, so the peak falls by what they kept, less
  // nothing (the walk counts an offloaded layer on the GPU during its own forward and backward).
  CHECK(u(half["peak_bytes"]) < u(none["peak_bytes"]));
  CHECK(u(half["peak_bytes"]) > u(all_switch["peak_bytes"]));
}

TEST_CASE(
    "Per-layer offload timing: each offloaded layer's copy hides behind the forwards up to the "
    "next offloaded layer (GPT-2 on an H100, by hand)",
    "[offload]") {
  // As offload's own case (test_advisor.cpp): a copy is 34·s·b·h bytes over 63.0 GB/s, a forward
  // 24·b·s·h² + 4·b·s²·h FLOPs at 40% of 989.4 TFLOP/s.
  const double s = 1024, b = 1, h = 768;
  const double copy = 34 * s * b * h / 63e9;
  const double fwd = (24 * b * s * h * h + 4 * b * s * s * h) / (0.4 * 989.4e12);
  REQUIRE(copy > 2 * fwd);
  // layers:sS: layers 0..8 of the even ones have two forwards (the next layer's and the next
  // offloaded one's); layer 10, the chunk's last offloaded, has layer 11's.
  const json t = gpt2({{"recompute", "layers:sS"}})["offload_timing"];
  REQUIRE(t["known"] == true);
  CHECK(t["copy_out_s"].get<double>() == Approx(6 * copy).epsilon(1e-12));
  CHECK(t["forward_s"].get<double>() == Approx(12 * fwd).epsilon(1e-12));
  CHECK(t["exposed_s"].get<double>() == Approx(5 * (copy - 2 * fwd) + (copy - fwd)).epsilon(1e-9));
  // Every third layer: windows of three forwards, the last offloaded (layer 9) two.
  const json t3 = gpt2({{"recompute", "layers:sSS"}})["offload_timing"];
  CHECK(t3["copy_out_s"].get<double>() == Approx(4 * copy).epsilon(1e-12));
  CHECK(t3["exposed_s"].get<double>() ==
        Approx(3 * (copy - 3 * fwd) + (copy - 2 * fwd)).epsilon(1e-9));
  // No layer offloaded: no timing is reported.
  CHECK_FALSE(gpt2({{"recompute", "layers:SS"}}).contains("offload_timing"));
}

TEST_CASE(
    "plan chooses keep, recompute and offload per layer jointly, by lost compute (Llama 3.1 8B "
    "on 8 H100s, ZeRO-3, s 8192, micro-batch 2)",
    "[offload]") {
  const json cfg = {{"gpu", "h100-80gb"}, {"seq", 8192},      {"dp", 8},
                    {"zero", 3},          {"micro_batch", 2}, {"attention", "flash"}};
  const json p = run({{"command", "plan"}, {"preset", "llama-3.1-8b"}, {"config", cfg}});
  REQUIRE(p["found"] == true);
  // Every layer offloaded exposes its copy at every layer (a copy longer than one forward);
  // every other layer offloaded hides all copies but the chunk's last: 1/32 of that exposure,
  // and no recompute, against the cheapest on-GPU policy's FLOPs.
  double all_exposed = -1, half_exposed = -1, best_gpu = 1e9;
  for (const json& pt : p["offload_points"]) {
    if (pt["policy"] == "none" && pt["offload"] == true)
      all_exposed = pt["offload_exposed_pct"].get<double>();
    if (pt["policy"] == "layers:kK") half_exposed = pt["offload_exposed_pct"].get<double>();
  }
  for (const json& pt : p["pareto"])
    if (pt["fits"] == true)
      best_gpu = std::min(best_gpu, pt["recompute_overhead_pct"].get<double>());
  REQUIRE(all_exposed > 0);
  CHECK(half_exposed == Approx(all_exposed / 32).epsilon(1e-9));
  CHECK(half_exposed < best_gpu);
  CHECK(p["policy"] == "layers:kK");
  CHECK(p["offload"] == false);  // the letters say it; the switch is off
  CHECK(p["host_layers"] == true);
  CHECK(p["offload_exposed_pct"].get<double>() == Approx(half_exposed).epsilon(1e-12));
  // The choice re-estimates to its peak, and fits.
  json chosen = cfg;
  chosen["recompute"] = p["policy"];
  chosen["offload"] = p["offload"];
  const json e = run({{"preset", "llama-3.1-8b"}, {"config", chosen}});
  CHECK(e["peak_bytes"] == p["peak_bytes"]);
  CHECK(e["fits"] == true);
}

TEST_CASE("Per-layer offload is refused where it is not modelled or cannot be said", "[offload]") {
  auto err = [](const json& req) {
    const json r = evaluate_json(req);
    INFO(r.dump().substr(0, 300));
    REQUIRE_FALSE(r.value("ok", true));
    return r["error"];
  };
  const json base = {{"preset", "llama-3.1-8b"}};
  auto with = [&](const json& config, const char* emit = nullptr) {
    json r = base;
    r["config"] = config;
    if (emit) r["emit"] = emit;
    return r;
  };
  // A lower-case r: a recomputed layer keeps nothing to offload.
  CHECK(err(with({{"recompute", "layers:kr"}}))["field"] == "config.recompute");
  // Split-backward schedules (when W's inputs come back is not modelled).
  CHECK(err(with({{"recompute", "layers:kK"},
                  {"pp", 2},
                  {"schedule", "zb-h1"},
                  {"micro_batches", 4}}))["field"] == "config.recompute");
  // No launcher says it.
  for (const char* emit : {"megatron", "sac"})
    CHECK(err(with({{"recompute", "layers:kK"}}, emit))["field"] == "emit");
}
