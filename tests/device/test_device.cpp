// The device figure (device.hpp): the step through the allocator model against the H200
// measurement of docs/validation.md 4.3, the fixed costs per layout, the verdict on the total, and
// the settings that feed them (alloc_conf, optimizer_dtype).
#include <cmath>
#include <string>

#include "helpers.hpp"

using namespace actmem::test;

namespace {

constexpr std::uint64_t kMiB = 1048576;

// The measured step (tests/reference/step_snapshot.py, tests/reference/gpu/step.json):
// transformers LlamaForCausalLM, 4 layers, h 2048, 16 heads, 4 KV heads, f 5632, V 32000, SDPA on
// an H200 (flash), bf16 with torch.optim.AdamW on bf16 parameters, b = 2, s = 2048.
json step_request(const json& extra = json::object()) {
  json model = {{"model_type", "llama"},    {"vocab_size", 32000},
                {"hidden_size", 2048},      {"intermediate_size", 5632},
                {"num_hidden_layers", 4},   {"num_attention_heads", 16},
                {"num_key_value_heads", 4}, {"max_position_embeddings", 4096},
                {"rms_norm_eps", 1e-5},     {"tie_word_embeddings", false},
                {"attention_dropout", 0.0}, {"torch_dtype", "bfloat16"}};
  json config = {{"micro_batch", 2},          {"seq", 2048},          {"dtype", "bf16"},
                 {"param_dtype", "bf16"},     {"grad_dtype", "bf16"}, {"master_weights", false},
                 {"optimizer_dtype", "bf16"}, {"profile", "hf"},      {"attention", "flash"},
                 {"gpu", "h200-141gb"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) config[it.key()] = it.value();
  return json{{"model", model}, {"config", config}};
}

double err_pct(std::uint64_t predicted, std::uint64_t measured) {
  return 100.0 * (static_cast<double>(predicted) - static_cast<double>(measured)) /
         static_cast<double>(measured);
}

bool has_overhead(const json& r, const std::string& name) {
  for (const json& o : r["device"]["overheads"])
    if (o["name"] == name) return true;
  return false;
}

}  // namespace

TEST_CASE(
    "device: the H200 step (validation.md 4.3) - allocated and reserved within 10 % of the "
    "measured second step, fixed costs equal to the measured NVML excess") {
  // Measured: torch.cuda.memory_stats() of step 2 (step.json) per variant.
  struct Row {
    json extra;
    std::uint64_t allocated, reserved;
  };
  const Row rows[] = {
      {json::object(), 5025073152u, 5146411008u},
      {{{"alloc_conf", "expandable_segments:True"}}, 5020878848u, 5416943616u},
      {{{"recompute", "full"}}, 3646076928u, 5039456256u},
  };
  for (const Row& row : rows) {
    const json r = run(step_request(row.extra));
    const json& d = r["device"];
    INFO(row.extra.dump() << " allocated " << u(d["allocated_peak_bytes"]) << " reserved "
                          << u(d["reserved_peak_bytes"]));
    CHECK(std::abs(err_pct(u(d["allocated_peak_bytes"]), row.allocated)) < 10.0);
    CHECK(std::abs(err_pct(u(d["reserved_peak_bytes"]), row.reserved)) < 10.0);
  }
  // The prediction itself, pinned (docs/validation.md 4.3 lists it beside the measurement).
  const json r = run(step_request());
  CHECK(u(r["device"]["allocated_peak_bytes"]) == 5251594752u);
  CHECK(u(r["device"]["reserved_peak_bytes"]) == 5584715776u);
  // Context + kernels (648,871,936 + 155,189,248) and the driver's 644,939,776: the measured NVML
  // used after the step less reserved memory, 6,595,411,968 - 5,146,411,008.
  CHECK(u(r["device"]["overhead_bytes"]) == 6595411968u - 5146411008u);
  CHECK(u(r["device"]["total_bytes"]) ==
        u(r["device"]["reserved_peak_bytes"]) + u(r["device"]["overhead_bytes"]));
  // The H200's total as nvidia-smi reports it: 143,771 MiB.
  CHECK(u(r["device"]["capacity_bytes"]) == 143771 * kMiB);
  CHECK(r["fits"] == true);
}

TEST_CASE("device: with expandable segments reserved memory is whole 20 MiB and 2 MiB pages") {
  const json r = run(step_request({{"alloc_conf", "expandable_segments:True"}}));
  // The large pool maps 20 MiB pages, the small pool 2 MiB pages (CUDACachingAllocator.cpp
  // find_expandable_block); the measured run reserved 258 large pages and 3 small ones.
  CHECK(u(r["device"]["reserved_peak_bytes"]) % (2 * kMiB) == 0);
  CHECK(r["device"]["stages"][0]["segments_peak"] == 0);
  CHECK(r["device"]["allocator"] == "expandable_segments:True");
}

TEST_CASE("device: NCCL communicators follow the layout (one per group the step talks in)") {
  // 196 MiB of metadata (3 x 2 MiB x 32 channels + 4 MiB) plus, for collectives, 24 ring channels
  // x 12 MiB; send/recv: 32 channels x 12 MiB per peer inside a node, a 64 MiB pool across nodes.
  const std::uint64_t meta = 196 * kMiB, ring = 288 * kMiB;
  const json one = run(step_request());
  for (const char* g : {"nccl.tp", "nccl.dp", "nccl.dp_cp", "nccl.cp", "nccl.pp", "nccl.ep"})
    CHECK_FALSE(has_overhead(one, g));
  const json tp = run(step_request({{"tp", 2}}));
  CHECK(overhead(tp, "nccl.tp") == meta + ring);
  CHECK_FALSE(has_overhead(tp, "nccl.dp"));
  const json dp = run(step_request({{"tp", 2}, {"dp", 4}}));
  CHECK(overhead(dp, "nccl.dp") == meta + ring);
  CHECK(u(dp["device"]["overhead_bytes"]) == u(tp["device"]["overhead_bytes"]) + meta + ring);
  // Context parallelism: gradients over dp x cp, K/V around a ring of 2 peers (tp 2 x cp 2 = 4
  // GPUs: inside the node).
  const json cp = run(step_request({{"tp", 2}, {"dp", 2}, {"cp", 2}}));
  CHECK(overhead(cp, "nccl.dp_cp") == meta + ring);
  CHECK(overhead(cp, "nccl.cp") == meta + 2 * 32 * 12 * kMiB);
  // pp 2 over tp 2 x dp 4 = 8 GPUs per stage: the stages sit in different nodes of 8.
  const json pp = run(step_request({{"tp", 2}, {"dp", 4}, {"pp", 2}}));
  CHECK(overhead(pp, "nccl.pp") == meta + 32 * 16 * 128 * 1024);
  // With 16 GPUs per node the two stages share a node: one peer over NVLink.
  const json pp16 = run(step_request({{"tp", 2}, {"dp", 4}, {"pp", 2}, {"gpus_per_node", 16}}));
  CHECK(overhead(pp16, "nccl.pp") == meta + 32 * 12 * kMiB);
  // An override replaces every communicator's figure.
  const json over = run(step_request({{"tp", 2}, {"dp", 4}, {"nccl_comm_bytes", 1000}}));
  CHECK(overhead(over, "nccl.tp") == 1000);
  CHECK(overhead(over, "nccl.dp") == 1000);
  const json ctx = run(step_request({{"cuda_context_bytes", 0}}));
  CHECK(overhead(ctx, "cuda.context") == 0);
}

TEST_CASE("device: fits is decided on the device total, not on the tensor peak") {
  const json base = run(step_request());
  // Under a budget the driver's reserved memory is not added (the budget is the user's figure).
  const std::uint64_t driver = overhead(base, "driver.reserved");
  const std::uint64_t total = u(base["device"]["total_bytes"]) - driver;
  const std::uint64_t alloc = u(base["device"]["allocated_peak_bytes"]);
  const std::uint64_t fixed = u(base["device"]["overhead_bytes"]) - driver;
  const std::uint64_t peak = u(base["peak_bytes"]);
  REQUIRE(peak < alloc + fixed);
  // A budget the tensors fit but the allocated blocks and fixed costs do not: it does not fit.
  json req = step_request({{"gpu_memory_bytes", alloc + fixed - 1}});
  req["config"].erase("gpu");
  const json r = run(req);
  CHECK(u(r["peak_bytes"]) <= alloc + fixed - 1);
  CHECK(r["fits"] == false);
  CHECK(r["device"]["fits"] == false);
  // A budget is compared as given: no driver-reserved line.
  CHECK_FALSE(has_overhead(r, "driver.reserved"));
  CHECK(u(r["device"]["capacity_bytes"]) == alloc + fixed - 1);
  // Exactly the total fits.
  req["config"]["gpu_memory_bytes"] = total;
  CHECK(run(req)["fits"] == true);
  // One byte less: at its reserved peak the step holds no cached segment it could release
  // (release_cached_blocks frees only whole free segments), so PyTorch would raise
  // OutOfMemoryError: the replay under that capacity counts the failed request.
  req["config"]["gpu_memory_bytes"] = total - 1;
  const json tight = run(req);
  CHECK(tight["fits"] == false);
  CHECK(tight["device"]["out_of_memory"] == true);
  CHECK(base["device"]["out_of_memory"] == false);
}

TEST_CASE("device: fit answers the largest micro-batch whose device figure fits") {
  json req = step_request();
  req["command"] = "fit";
  const json f = run(req);
  const std::uint64_t b = u(f["max_micro_batch"]);
  REQUIRE(b > 0);
  json at = step_request({{"micro_batch", b}});
  CHECK(run(at)["fits"] == true);
  json over = step_request({{"micro_batch", b + 1}});
  CHECK(run(over)["fits"] == false);
  CHECK(u(f["capacity_bytes"]) == 143771 * kMiB);
}

TEST_CASE("device: a step of many micro-batches replays until its peaks settle") {
  // pp 1: 10 micro-batches, then 20, ...; the peaks of 64 and of 4,096 are the same.
  const json a = run(step_request({{"micro_batches", 64}}));
  const json b = run(step_request({{"micro_batches", 4096}}));
  CHECK(a["device"]["reserved_peak_bytes"] == b["device"]["reserved_peak_bytes"]);
  CHECK(u(b["device"]["micro_batches_simulated"]) < 4096);
  bool noted = false;
  for (const json& n : b["device"]["notes"])
    noted = noted || n.get<std::string>().find("micro-batches") != std::string::npos;
  CHECK(noted);
}

TEST_CASE(
    "optimizer_dtype: AdamW's two moments in the parameters' bf16 (torch.optim on bf16 "
    "parameters) are half the fp32 states") {
  const json bf = run(step_request());
  const json fp = run(step_request({{"optimizer_dtype", "fp32"}}));
  // 311,445,504 parameters x 2 moments x 2 B, and x 4 B.
  CHECK(u(bf["static"]["optimizer_bytes"]) == 311445504ull * 4);
  CHECK(u(fp["static"]["optimizer_bytes"]) == 311445504ull * 8);
  json bad = step_request({{"optimizer", "adam8bit"}});
  const json e = actmem::evaluate_json(bad);
  CHECK(e["ok"] == false);
  CHECK(e["error"]["field"] == "config.optimizer_dtype");
}

TEST_CASE("alloc_conf: PYTORCH_CUDA_ALLOC_CONF as PyTorch reads it, refusals name the option") {
  actmem::AllocatorConfig c;
  CHECK(actmem::parse_alloc_conf("expandable_segments:True", &c).empty());
  CHECK(c.expandable_segments);
  CHECK(actmem::parse_alloc_conf("max_split_size_mb:512, garbage_collection_threshold:0.6", &c)
            .empty());
  CHECK(c.max_split_size == 512 * kMiB);
  CHECK_FALSE(c.expandable_segments);  // each text starts from the defaults
  CHECK(actmem::parse_alloc_conf("roundup_power2_divisions:4", &c).empty());
  for (auto d : c.roundup_divisions) CHECK(d == 4);
  // The list form (AllocatorConfig.cpp): 64 MB's interval 6 and everything below take 8, 128 MB
  // takes 2, every interval after it 1.
  CHECK(actmem::parse_alloc_conf("roundup_power2_divisions:[64:8,128:2,>:1]", &c).empty());
  CHECK(c.roundup_divisions[0] == 8);
  CHECK(c.roundup_divisions[6] == 8);
  CHECK(c.roundup_divisions[7] == 2);
  CHECK(c.roundup_divisions[15] == 1);
  CHECK(actmem::parse_alloc_conf("pinned_use_cuda_host_register:True", &c).empty());
  for (const char* bad :
       {"expandable_segments:true", "max_split_size_mb:10", "backend:cudaMallocAsync",
        "roundup_power2_divisions:3", "foo:1", "expandable_segments",
        "garbage_collection_threshold:1.5", "roundup_power2_divisions:[64:8"}) {
    INFO(bad);
    CHECK_FALSE(actmem::parse_alloc_conf(bad, &c).empty());
  }
  json req = step_request({{"alloc_conf", "max_split_size_mb:5"}});
  const json e = actmem::evaluate_json(req);
  CHECK(e["ok"] == false);
  CHECK(e["error"]["field"] == "config.alloc_conf");
  // The message keeps what is allowed.
  CHECK(e["error"]["message"].get<std::string>().find("at least 20") != std::string::npos);
}

TEST_CASE("device: the most loaded stage is replayed, device_stages all replays each stage") {
  json req = step_request({{"pp", 2}, {"micro_batches", 4}});
  const json one = run(req);
  REQUIRE(one["device"]["stages"].size() == 1);
  // The stage with the largest tensor peak (1F1B: stage 0 holds the most micro-batches).
  CHECK(u(one["device"]["stages"][0]["stage"]) == u(one["peak"]["stage"]));
  req["config"]["device_stages"] = "all";
  const json all = run(req);
  REQUIRE(all["device"]["stages"].size() == 2);
  CHECK(u(all["device"]["stages"][1]["stage"]) == 1);
  // Stage by stage the replay is the same whether one or all are replayed.
  const json& s0 = all["device"]["stages"][u(one["peak"]["stage"])];
  CHECK(s0["reserved_peak_bytes"] == one["device"]["stages"][0]["reserved_peak_bytes"]);
  CHECK(s0["allocated_peak_bytes"] == one["device"]["stages"][0]["allocated_peak_bytes"]);
  req["config"]["device_stages"] = "most";
  CHECK(actmem::evaluate_json(req)["error"]["field"] == "config.device_stages");
}

TEST_CASE("device: fragmentation_pct is the manual override of the allocator's reserved memory") {
  const json base = run(step_request());
  const json pct = run(step_request({{"fragmentation_pct", 10.0}}));
  const std::uint64_t alloc = u(pct["device"]["allocated_peak_bytes"]);
  CHECK(alloc == u(base["device"]["allocated_peak_bytes"]));
  CHECK(u(pct["device"]["reserved_peak_bytes"]) ==
        alloc + static_cast<std::uint64_t>(static_cast<double>(alloc) * 0.1));
  CHECK(u(pct["device"]["total_bytes"]) ==
        u(pct["device"]["reserved_peak_bytes"]) + u(pct["device"]["overhead_bytes"]));
}
