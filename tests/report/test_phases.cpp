// The phase of the peak (issue 36): each phase's peak (forward, loss, backward, optimizer step)
// against a brute-force maximum over the layer-by-layer timeline's events, the peak's phase, and
// its three largest lines.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace actmem::test;

namespace {

// The phase an event label belongs to (step/event_label.cpp's wording).
std::string phase_of_label(const std::string& label) {
  if (label.rfind("loss", 0) == 0) return "loss";
  if (label == "optimizer step") return "optimizer_step";
  if (label[0] == 'F') return "forward";
  return "backward";  // B, R (recompute), I and W (split backward)
}

// The allowance the walker adds to a peak (walker.cpp, finish): pct of the live bytes.
std::uint64_t with_allowance(std::uint64_t live, double pct) {
  return live + static_cast<std::uint64_t>(static_cast<double>(live) * pct / 100.0);
}

}  // namespace

TEST_CASE(
    "Each phase's peak is the highest of its events in the layer-by-layer timeline, the step's "
    "peak is the highest phase, and peak.phase is the phase of peak_at (every schedule, "
    "recompute, offload where the schedule takes it, fragmentation allowance)",
    "[phases][timeline]") {
  int n = 0;
  struct Sched {
    const char* name;
    std::uint64_t pp, vpp;
  };
  for (const Sched sc : {Sched{"1f1b", 4, 1}, Sched{"gpipe", 4, 1}, Sched{"interleaved", 4, 2},
                         Sched{"zb-h1", 4, 1}, Sched{"zb-v", 4, 2}, Sched{"dualpipev", 4, 2}})
    for (const char* rc : {"none", "selective", "full"})
      for (bool offload : {false, true}) {
        // Offload runs under the non-split schedules only (split schedules refuse it).
        if (offload && (std::string(sc.name).rfind("zb", 0) == 0 || sc.name[0] == 'd')) continue;
        json c = {{"recompute", rc},          {"schedule", sc.name},
                  {"offload", offload},       {"pp", sc.pp},
                  {"micro_batches", 8},       {"seq", 1024},
                  {"fragmentation_pct", 2.5}, {"dropout", 0.1}};
        if (sc.vpp > 1) c["vpp"] = sc.vpp;
        INFO(sc.name << " " << rc << " offload=" << offload);
        const json est = run_preset("llama-2-7b", c);
        const json tl = run(json{{"command", "timeline"}, {"preset", "llama-2-7b"}, {"config", c}});
        for (const json& st : tl["stages"]) {
          std::map<std::string, std::uint64_t> top;
          for (const json& ev : st["events"]) {
            std::uint64_t& t = top[phase_of_label(ev["label"])];
            t = std::max(t, with_allowance(u(ev["live_bytes"]), 2.5));
          }
          std::uint64_t highest = 0;
          std::vector<std::string> order;
          for (const json& p : st["phases"]) {
            const std::string id = p["phase"];
            order.push_back(id);
            CHECK(u(p["peak_bytes"]) == top.at(id));
            CHECK(u(p["below_peak_bytes"]) == u(st["peak_bytes"]) - u(p["peak_bytes"]));
            highest = std::max(highest, u(p["peak_bytes"]));
          }
          CHECK(order.size() == top.size());  // every phase that has events, and only those
          CHECK(highest == u(st["peak_bytes"]));
          CHECK(st["peak_phase"] == phase_of_label(st["peak_at"]));
        }
        // The estimate's phases are its worst stage's, as the timeline's.
        const json& worst = tl["stages"][static_cast<std::size_t>(u(tl["peak_stage"]))];
        CHECK(est["phases"] == worst["phases"]);
        CHECK(est["peak"]["phase"] == worst["peak_phase"]);
        ++n;
      }
  CHECK(n == 27);
}

TEST_CASE(
    "Only the last stage runs the loss phase, the first stage of a pipeline peaks in forward or "
    "backward",
    "[phases]") {
  const json tl = run(json{{"command", "timeline"},
                           {"preset", "llama-3.1-8b"},
                           {"config", {{"pp", 2}, {"micro_batches", 4}, {"seq", 4096}}}});
  auto ids = [](const json& st) {
    std::vector<std::string> v;
    for (const json& p : st["phases"]) v.push_back(p["phase"]);
    return v;
  };
  CHECK(ids(tl["stages"][0]) == std::vector<std::string>{"forward", "backward", "optimizer_step"});
  CHECK(ids(tl["stages"][1]) ==
        std::vector<std::string>{"forward", "loss", "backward", "optimizer_step"});
}

TEST_CASE(
    "peak.top names the peak's three largest lines, largest first, each equal to its line in "
    "peak",
    "[phases]") {
  for (const char* preset : {"llama-3.1-8b", "gpt2", "mixtral-8x7b"})
    for (const char* fw : {"megatron-lm", "torchtitan"}) {
      INFO(preset << " " << fw);
      const json r = run_preset(preset, {{"seq", 1024}, {"framework", fw}});
      const json& pk = r["peak"];
      REQUIRE(pk["top"].size() == 3);
      std::uint64_t prev = ~std::uint64_t{0};
      for (const json& t : pk["top"]) {
        CHECK(u(t["bytes"]) == u(pk[t["key"].get<std::string>()]));
        CHECK(u(t["bytes"]) <= prev);
        prev = u(t["bytes"]);
      }
      // No line outside the top three is larger than the third.
      std::set<std::string> named;
      for (const json& t : pk["top"]) named.insert(t["key"].get<std::string>());
      for (const char* k : {"params_bytes", "grads_bytes", "master_bytes", "optimizer_bytes",
                            "kept_activations_bytes", "recomputed_bytes", "transient_bytes",
                            "fragmentation_bytes", "gathered_params_bytes", "unsharded_grads_bytes",
                            "ddp_buckets_bytes", "fp8_weights_bytes"})
        if (!named.count(k)) CHECK(u(pk[k]) <= u(pk["top"][2]["bytes"]));
    }
}
