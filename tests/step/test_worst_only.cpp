// The worst-stage-only walk (evaluation.hpp, worst_only and stop_above), which the advisor and the
// device figure use: on every configuration here it finds the same most loaded stage, with the
// same peak, host peak and recompute overhead, as the walk of every stage, while walking fewer
// ranks; and a walk told to stop above a budget says "over" exactly when the full walk does.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "actmem/api/api.hpp"
#include "actmem/config/config.hpp"
#include "actmem/json_io.hpp"
#include "actmem/schedules/schedule.hpp"
#include "actmem/setup/setup.hpp"
#include "actmem/step/evaluation.hpp"
#include "helpers.hpp"

using namespace actmem;

namespace {

struct Case {
  std::string model;  // a preset id, or "toy" (helpers.hpp's toy model, 12 layers)
  Schedule schedule;
  std::uint64_t pp, vpp, m;
  std::vector<std::uint64_t> split;  // empty: the even split
  std::string recompute;
  bool offload = false;
};

}  // namespace

TEST_CASE(
    "The worst-stage walk skips interior ranks that cannot peak higher and finds the full walk's "
    "worst stage, peak and host peak (GPipe, 1F1B and interleaved, where the split schedules walk "
    "every "
    "rank)",
    "[timeline][advisor]") {
  const std::vector<Case> cases = {
      {"toy", Schedule::k1F1B, 4, 1, 8, {}, "none"},
      {"toy", Schedule::k1F1B, 4, 1, 8, {2, 4, 4, 2}, "selective"},
      {"toy", Schedule::k1F1B, 5, 1, 3, {2, 3, 3, 2, 2}, "full"},
      {"toy", Schedule::kGpipe, 5, 1, 6, {1, 3, 3, 3, 2}, "every:2"},
      {"toy", Schedule::k1F1B, 6, 1, 12, {1, 2, 3, 2, 3, 1}, "none"},
      {"toy", Schedule::k1F1B, 4, 1, 16, {2, 4, 4, 2}, "none", true},
      {"toy", Schedule::kZbH1, 4, 1, 8, {2, 4, 4, 2}, "none"},
      {"toy", Schedule::kDualPipe, 4, 1, 8, {2, 4, 4, 2}, "selective"},
      {"llama-3.1-8b", Schedule::kInterleaved, 4, 2, 8, {}, "selective"},
      {"llama-3.1-8b", Schedule::kInterleaved, 4, 4, 12, {}, "full"},
      {"llama-3.1-8b", Schedule::k1F1B, 8, 1, 32, {}, "none", true},
      {"llama-3.1-405b",
       Schedule::k1F1B,
       16,
       1,
       64,
       {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7},
       "selective"},
      // Layer kinds that differ along the stack: rank windows of different kinds are not pruned
      // against each other.
      {"deepseek-v3", Schedule::k1F1B, 4, 1, 8, {14, 16, 16, 15}, "selective"},
      {"nemotron-h-56b", Schedule::k1F1B, 4, 1, 8, {29, 30, 30, 29}, "none"},
      {"gemma-2-9b-it", Schedule::kInterleaved, 3, 2, 6, {}, "full"},
  };
  std::uint64_t skipped = 0;
  for (const Case& k : cases) {
    const ModelSpec m = test::model_of(k.model);
    TrainConfig c;
    c.seq = k.model == "toy" ? 16 : 1024;  // the toy model has 16 positions
    c.attention = Attention::kFlash;
    c.par.pp = k.pp;
    c.par.vpp = k.vpp;
    c.grad_accum = k.m;
    c.schedule = k.schedule;
    c.layer_split = k.split;
    REQUIRE(parse_recompute(k.recompute, &c.recompute));
    c.recompute.offload = k.offload;
    INFO(k.model << " " << schedule_name(k.schedule) << " pp " << k.pp << " vpp " << k.vpp << " m "
                 << k.m << " " << k.recompute << (k.offload ? " offload" : ""));
    auto s = make_setup(m, c);
    INFO((s.ok() ? std::string() : s.error().message));
    REQUIRE(s.ok());
    Evaluation full, worst;
    worst.worst_only = true;
    REQUIRE_FALSE(evaluate(s.value(), c.recompute, &full));
    REQUIRE_FALSE(evaluate(s.value(), c.recompute, &worst));
    CHECK(worst.worst == full.worst);
    CHECK(worst.worst_stage().peak_bytes == full.worst_stage().peak_bytes);
    CHECK(worst.worst_stage().host_peak_bytes == full.worst_stage().host_peak_bytes);
    CHECK(worst.worst_stage().in_flight == full.worst_stage().in_flight);
    CHECK(worst.recompute_overhead_pct == full.recompute_overhead_pct);
    for (const StageEval& st : worst.stages) skipped += st.peak_bytes == 0 ? 1 : 0;
    if (is_split_backward(k.schedule) || k.schedule == Schedule::kDualPipe)
      for (const StageEval& st : worst.stages) CHECK(st.peak_bytes > 0);

    // Told to stop above a budget: over it exactly when the full walk is, and then a stage over
    // it is named; at or under it, the full walk's answer.
    const Bytes peak = full.worst_stage().peak_bytes;
    Evaluation over, at;
    over.worst_only = at.worst_only = true;
    over.stop_above = peak - 1;
    at.stop_above = peak;
    REQUIRE_FALSE(evaluate(s.value(), c.recompute, &over));
    REQUIRE_FALSE(evaluate(s.value(), c.recompute, &at));
    CHECK(over.worst_stage().peak_bytes > peak - 1);
    CHECK(at.worst == full.worst);
    CHECK(at.worst_stage().peak_bytes == peak);
  }
  // The 405B case alone has 14 interior ranks of 8 layers: 13 of them are not walked.
  CHECK(skipped >= 13);
}
