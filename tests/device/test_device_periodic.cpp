// The device replay's period proof (device/replay.cpp, stream.hpp): where a 1F1B or interleaved
// step's allocator state at a steady-state period boundary repeats an earlier boundary's in both
// steps, device_memory replays a shorter step and extends it; its stages must equal, field for
// field, the replay of every micro-batch (device_replay_full), which is the definition they stand
// for. The configurations cover one stage, 1F1B over four and the interleaved schedule, the
// per-tensor gradients of the pytorch profile, expandable segments, and step lengths that are
// not whole cycles (a second, longer run makes them so).
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "actmem/config/config.hpp"
#include "actmem/device/device.hpp"
#include "actmem/json_io.hpp"
#include "actmem/setup/setup.hpp"
#include "helpers.hpp"

using namespace actmem;

namespace {

struct Case {
  std::string model;  // a preset id, or "toy" (helpers.hpp's toy model, 12 layers)
  Profile profile;
  std::uint64_t pp, vpp, m;
  std::string recompute;
  bool expandable = false;  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
};

bool noted(const DeviceMemory& d, const char* text) {
  for (const std::string& n : d.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE(
    "device: a replay shortened by its period proof equals the replay of every micro-batch, "
    "stage by stage and counter by counter") {
  const std::vector<Case> cases = {
      {"llama-3.1-8b", Profile::kPytorch, 1, 1, 64, "full"},
      {"llama-3.1-8b", Profile::kHf, 1, 1, 37, "none"},
      {"toy", Profile::kMegatron, 4, 1, 50, "selective"},
      {"toy", Profile::kPytorch, 4, 1, 41, "none"},
      {"llama-3.1-8b", Profile::kMegatron, 4, 1, 48, "selective"},
      {"llama-3.1-8b", Profile::kMegatron, 4, 1, 48, "selective", true},
      {"llama-3.1-8b", Profile::kHf, 4, 2, 200, "full", true},
      {"llama-3.1-8b", Profile::kMegatron, 4, 2, 200, "full", true},
  };
  for (const Case& k : cases) {
    const ModelSpec m = test::model_of(k.model);
    TrainConfig c;
    c.seq = k.model == "toy" ? 16 : 1024;
    c.attention = Attention::kFlash;
    c.profile = k.profile;
    c.par.pp = k.pp;
    c.par.vpp = k.vpp;
    c.grad_accum = k.m;
    c.par.dp = 8;
    c.par.zero = 1;
    c.alloc.expandable_segments = k.expandable;
    REQUIRE(parse_recompute(k.recompute, &c.recompute));
    INFO(k.model << " pp " << k.pp << " vpp " << k.vpp << " m " << k.m << " " << k.recompute
                 << (k.expandable ? " expandable" : ""));
    auto s = make_setup(m, c);
    INFO((s.ok() ? std::string() : s.error().message));
    REQUIRE(s.ok());
    // The interleaved cases replay the most loaded stage alone (as searches do): there the
    // early stages find no cycle within the 16 periods the stream keeps.
    auto d = device_memory(s.value(), nullptr, nullptr, k.vpp == 1);
    REQUIRE(d.ok());
    CHECK(d.value().micro_batches_simulated < k.m);
    CHECK(noted(d.value(), "repeats an earlier boundary's exactly"));
    auto full = device_replay_full(s.value());
    REQUIRE(full.ok());
    REQUIRE(full.value().size() == k.pp);
    for (const StageDevice& a : d.value().stages) {
      const StageDevice& b = full.value()[a.stage];
      INFO("stage " << a.stage);
      CHECK(a.allocated_peak_bytes == b.allocated_peak_bytes);
      CHECK(a.reserved_peak_bytes == b.reserved_peak_bytes);
      CHECK(a.requested_peak_bytes == b.requested_peak_bytes);
      CHECK(a.segments_peak == b.segments_peak);
      CHECK(a.allocations == b.allocations);
      CHECK(a.ooms == b.ooms);
      CHECK(a.stats.inactive_split_peak == b.stats.inactive_split_peak);
      CHECK(a.stats.device_allocs == b.stats.device_allocs);
      CHECK(a.stats.device_frees == b.stats.device_frees);
      CHECK(a.stats.retries == b.stats.retries);
      CHECK(a.stats.allocated == b.stats.allocated);
      CHECK(a.stats.reserved == b.stats.reserved);
    }
  }
}
