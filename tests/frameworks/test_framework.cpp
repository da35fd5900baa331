// Framework defaults and switches (issue 16): each default pinned to the code it cites
// (engine/src/frameworks/framework.cpp), each switch to the static line or group size it changes.
#include <fstream>

#include "helpers.hpp"

namespace actmem::test {

namespace {

// Llama 3.1 8B (the preset's published 8,030,261,248 parameters): 32 layers of 218,112,000
// (q, o 4096²; k, v 4096x1024; three 4096x14336 MLP weights; two norms), embedding and head
// 128,256 x 4096 each, final norm 4096.
constexpr std::uint64_t kParams8b = 8'030'261'248;
constexpr std::uint64_t kLayer8b = 218'112'000;
constexpr std::uint64_t kEmbed8b = 525'336'576;

json framework_answer(const json& config) {
  json c = config;
  c["seq"] = 8192;
  return run_preset("llama-3.1-8b", c);
}

bool filled(const json& r, const std::string& key) {
  for (const auto& d : r["framework_defaults"])
    if (d["key"] == key) return true;
  return false;
}

}  // namespace

TEST_CASE("torchtitan 9dec370: FSDP over 8 GPUs keeps fp32 params, fp32 grads and AdamW over 8") {
  // parallelize_llama.py l.320 MixedPrecisionPolicy(bf16, fp32) over fp32 parameters:
  // 4 + 4 + 8 = 16 bytes per parameter, sharded over dp_shard_cp = 8 ranks.
  const json r = framework_answer({{"framework", "torchtitan"}, {"dp", 8}, {"micro_batch", 2}});
  // Besides: FSDP2's root group (embedding, final norm, head; _fsdp_state.py never reshards the
  // root after forward) and torchtitan's last block (reshard_after_forward = layer_id <
  // n_layers - 1, l.325-339) stay gathered in bf16.
  const std::uint64_t root = 2 * kEmbed8b + 4096 + kLayer8b;
  CHECK(u(r["peak"]["gathered_params_bytes"]) == 2 * root);
  CHECK(u(r["static"]["total_bytes"]) == 16 * kParams8b / 8 + 2 * root);
  // The peak (the loss's backward) has no sharded gradients yet: each group's reduce-scatter
  // makes them in backward, after zero_grad freed the last step's (measured, validation.md 4.6).
  CHECK(u(r["static"]["grads_bytes"]) == 4 * kParams8b / 8);
  CHECK(u(r["peak"]["grads_bytes"]) == 0);
  CHECK(u(r["peak"]["static_bytes"]) == 12 * kParams8b / 8 + 2 * root);
  CHECK(u(r["peak"]["params_bytes"]) == 4 * kParams8b / 8);
  CHECK(u(r["peak"]["master_bytes"]) == 0);
  const json& c = r["config"];
  CHECK(c["zero"] == 3);
  CHECK(c["profile"] == "pytorch");
  CHECK(c["attention"] == "flash");
  CHECK(c["param_dtype"] == "fp32");
  CHECK(c["grad_dtype"] == "fp32");
  CHECK(c["dtype"] == "bf16");
  CHECK(c["shard_group"] == "dp-cp");
  CHECK(c["recompute"] == "layers:KC");  // selective_ac_option '2': every second block
  CHECK(c["reshard_after_forward"] == true);
  CHECK(c["accumulate_unsharded"] == false);
  for (const char* k : {"profile", "attention", "dtype", "param_dtype", "grad_dtype",
                        "master_weights", "recompute", "shard_group", "zero"})
    CHECK(filled(r, k));
  // The echoed config re-estimates to the same peak with no defaults left to fill.
  json again = c;
  const json r2 = framework_answer(again);
  CHECK(u(r2["peak_bytes"]) == u(r["peak_bytes"]));
  CHECK(r2["framework_defaults"].empty());
}

TEST_CASE(
    "Hybrid sharding (torchtitan parallel_dims.py dp_replicate x dp_shard): each replica shards "
    "over dp / dp_replicate ranks") {
  // 8 ranks as 2 replicas of 4 hold what 4 ranks of plain ZeRO-3 hold: params, gradients and
  // optimizer states over 4 (16 bytes per parameter under torchtitan's fp32 MixedPrecisionPolicy).
  const json hsdp = framework_answer({{"framework", "torchtitan"}, {"dp", 8}, {"dp_replicate", 2}});
  const json four = framework_answer({{"framework", "torchtitan"}, {"dp", 4}});
  CHECK(hsdp["config"]["zero"] == 3);
  CHECK(hsdp["config"]["dp_replicate"] == 2);
  CHECK(u(hsdp["peak"]["static_bytes"]) == u(four["peak"]["static_bytes"]));
  CHECK(u(hsdp["peak"]["params_bytes"]) == 4 * kParams8b / 4);
  // Two communicators where one group was: the shard group and the replicate group.
  int shard = 0, replicate = 0;
  for (const auto& o : hsdp["device"]["overheads"]) {
    shard += o["name"] == "nccl.dp_shard";
    replicate += o["name"] == "nccl.dp_replicate";
  }
  CHECK(shard == 1);
  CHECK(replicate == 1);
  // dp_shard = 1 with replicas is DDP in torchtitan (parallelize_llama.py l.79-95): no ZeRO.
  const json ddp = framework_answer({{"framework", "torchtitan"}, {"dp", 8}, {"dp_replicate", 8}});
  CHECK(ddp["config"]["zero"] == 0);
  CHECK(u(ddp["peak"]["params_bytes"]) == 4 * kParams8b);
  // With shard_group dp-cp the replica's shard group is dp / dp_replicate x cp.
  const json cp =
      framework_answer({{"framework", "torchtitan"}, {"dp", 4}, {"cp", 2}, {"dp_replicate", 2}});
  CHECK(u(cp["peak"]["params_bytes"]) == 4 * kParams8b / 4);
}

TEST_CASE(
    "torchtitan 9dec370 without FSDP: fp32 throughout (mixed precision is FSDP2's policy, "
    "parallelize_llama.py l.79-110) and DDP's buckets beside the gradients (l.342-356)") {
  // One rank: no FSDP, no MixedPrecisionPolicy, no autocast; the fp32 model train.py builds.
  const json one = framework_answer({{"framework", "torchtitan"}});
  CHECK(one["config"]["dtype"] == "fp32");
  CHECK(one["config"]["param_dtype"] == "fp32");
  CHECK(u(one["peak"]["params_bytes"]) == 4 * kParams8b);
  CHECK(u(one["peak"]["ddp_buckets_bytes"]) == 0);
  // DDP (8 replicas, dp_shard 1): replicate(bucket_cap_mb=100) over gradient_as_bucket_view
  // False keeps a second fp32 copy of every gradient in its buckets, and reduces inside them.
  const json ddp = framework_answer({{"framework", "torchtitan"}, {"dp", 8}, {"dp_replicate", 8}});
  CHECK(ddp["config"]["dtype"] == "fp32");
  CHECK(ddp["config"]["ddp_bucket_view"] == false);
  CHECK(filled(ddp, "ddp_bucket_view"));
  CHECK(u(ddp["peak"]["ddp_buckets_bytes"]) == 4 * kParams8b);
  // FSDP (dp_shard 8) computes in bf16 under MixedPrecisionPolicy(param_dtype=bfloat16).
  CHECK(framework_answer({{"framework", "torchtitan"}, {"dp", 8}})["config"]["dtype"] == "bf16");
}

TEST_CASE(
    "DeepSpeed v0.16.0: bf16 under ZeRO-2 keeps bf16 parameters, an fp32 master and bf16 gradient "
    "partitions, and a 5e8-element bucket") {
  const json r =
      framework_answer({{"framework", "deepspeed"}, {"dtype", "bf16"}, {"dp", 8}, {"zero", 2}});
  // engine.py l.1157 module.bfloat16(); stage_1_and_2.py l.393-394 fp32 partition; l.1345
  // grads_in_partition in bf16; FusedAdam's two fp32 moments over the fp32 partition.
  CHECK(u(r["peak"]["params_bytes"]) == 2 * kParams8b);
  CHECK(u(r["peak"]["grads_bytes"]) == 2 * kParams8b / 8);
  CHECK(u(r["peak"]["master_bytes"]) == 4 * kParams8b / 8);
  CHECK(u(r["peak"]["optimizer_bytes"]) == 8 * kParams8b / 8);
  const json& c = r["config"];
  CHECK(c["profile"] == "hf");
  CHECK(c["param_dtype"] == "bf16");
  CHECK(c["grad_dtype"] == "bf16");
  CHECK(c["master_weights"] == true);
  CHECK(c["grad_bucket_bytes"] == 1'000'000'000);  // reduce_bucket_size 5e8 x 2 B
  CHECK_FALSE(filled(r, "zero"));
  // DeepSpeed's own default is fp32 training: bf16 and fp16 off (constants.py l.127, l.154).
  const json fp32 = framework_answer({{"framework", "deepspeed"}});
  CHECK(fp32["config"]["dtype"] == "fp32");
  CHECK(fp32["config"]["param_dtype"] == "fp32");
  CHECK(fp32["config"]["master_weights"] == false);
  CHECK(fp32["config"]["zero"] == 0);
  CHECK(fp32["config"]["grad_bucket_bytes"] == 2'000'000'000);
  // The echoed config re-estimates to the same peak.
  json again = c;
  CHECK(u(framework_answer(again)["peak_bytes"]) == u(r["peak_bytes"]));
  // bf16 without ZeRO (BF16_Optimizer) and fp16 are refused by field.
  auto err = [](const json& config) {
    json cfg = config;
    cfg["framework"] = "deepspeed";
    const json e = evaluate_json({{"preset", "llama-3.1-8b"}, {"config", cfg}});
    REQUIRE_FALSE(e.value("ok", true));
    return e["error"]["field"].get<std::string>();
  };
  CHECK(err({{"dtype", "bf16"}}) == "config.zero");
  CHECK(err({{"dtype", "fp16"}, {"zero", 1}}) == "config.dtype");
}

TEST_CASE(
    "HF Trainer (transformers 9feae5fb, accelerate 1.2.1): fp32 by default, and DDP's buckets "
    "keep a second copy of the gradients") {
  const json r = framework_answer({{"framework", "hf-trainer"}, {"dp", 4}});
  const json& c = r["config"];
  CHECK(c["profile"] == "hf");
  CHECK(c["dtype"] == "fp32");  // TrainingArguments bf16 = False, fp16 = False
  CHECK(c["param_dtype"] == "fp32");
  CHECK(c["optimizer_dtype"] == "fp32");
  CHECK(c["recompute"] == "none");
  CHECK(c["ddp_bucket_view"] == false);
  // fp32 parameters, gradients and AdamW's two fp32 moments (4 + 4 + 8 B per parameter), plus
  // DDP's buckets: gradient_as_bucket_view = False allocates a flat copy of every gradient.
  const json& pk = r["peak"];
  CHECK(u(pk["params_bytes"]) == 4 * kParams8b);
  CHECK(u(pk["grads_bytes"]) == 4 * kParams8b);
  CHECK(u(pk["ddp_buckets_bytes"]) == 4 * kParams8b);
  CHECK(u(pk["optimizer_bytes"]) == 8 * kParams8b);
  CHECK(u(pk["params_bytes"]) + u(pk["grads_bytes"]) + u(pk["master_bytes"]) +
            u(pk["optimizer_bytes"]) + u(pk["ddp_buckets_bytes"]) +
            u(pk["kept_activations_bytes"]) + u(pk["recomputed_bytes"]) + u(pk["transient_bytes"]) +
            u(pk["fragmentation_bytes"]) ==
        u(r["peak_bytes"]));
  // The echoed config re-estimates to the same peak with nothing left to fill.
  const json again = framework_answer(c);
  CHECK(u(again["peak_bytes"]) == u(r["peak_bytes"]));
  CHECK(again["framework_defaults"].empty());
  // One GPU: no DDP, no buckets.
  CHECK(u(framework_answer({{"framework", "hf-trainer"}})["peak"]["ddp_buckets_bytes"]) == 0);
  // A model loaded in bf16 (torch_dtype=torch.bfloat16): bf16 gradients and AdamW states
  // (zeros_like(p)); bf16 over fp32 weights is the Trainer's autocast, refused by field.
  const json b = framework_answer(
      {{"framework", "hf-trainer"}, {"dtype", "bf16"}, {"param_dtype", "bf16"}, {"dp", 2}});
  CHECK(u(b["peak"]["optimizer_bytes"]) == 4 * kParams8b);
  CHECK(u(b["peak"]["ddp_buckets_bytes"]) == 2 * kParams8b);
  auto err = [](const json& config) {
    const json e = evaluate_json({{"preset", "llama-3.1-8b"}, {"config", config}});
    REQUIRE_FALSE(e.value("ok", true));
    return e["error"]["field"].get<std::string>();
  };
  CHECK(err({{"framework", "hf-trainer"}, {"dtype", "bf16"}}) == "config.param_dtype");
  CHECK(err({{"ddp_bucket_view", false}, {"dp", 2}, {"zero", 1}}) == "config.ddp_bucket_view");
  CHECK(err({{"ddp_bucket_view", false}, {"profile", "megatron"}}) == "config.ddp_bucket_view");
}

TEST_CASE(
    "Async TP: Megatron-LM's userbuffers (TransformerEngine v1.13) and torchtitan's "
    "symmetric-memory workspace (PyTorch 2.6), by hand") {
  auto overhead = [](const json& r, const std::string& name) {
    for (const auto& o : r["device"]["overheads"])
      if (o["name"] == name) return u(o["bytes"]);
    return std::uint64_t{0};
  };
  const json base = {{"seq", 8192}, {"tp", 8}, {"sp", true}, {"gpu", "h100-80gb"}};
  json on = base;
  on["async_tp"] = true;
  const json m0 = run_preset("llama-3.1-70b", base);
  const json m1 = run_preset("llama-3.1-70b", on);
  // Ten userbuffers of [s·b/cp, h] = 8192 x 8192 bf16 elements (128 MiB each, already a multiple
  // of the 2 MiB granularity); not in the caching allocator.
  CHECK(overhead(m1, "tp_comm_overlap.userbuffers") == 10 * 8192ull * 8192 * 2);
  CHECK(overhead(m0, "tp_comm_overlap.userbuffers") == 0);
  // TransformerEngine's overlap GEMMs: three cuBLAS workspaces of 32 MiB where there was one.
  CHECK(u(m1["peak_bytes"]) - u(m0["peak_bytes"]) == 2 * 32ull * 1048576);
  // torchtitan: one workspace per TP group, the matmul reduce-scatter's two output chunks
  // (2 x 8192 x 4096 / 4 bf16 elements = 32 MiB) + the 2048-byte signal pad, rounded to 2 MiB.
  const json t = run_preset(
      "llama-3.1-8b",
      {{"seq", 8192}, {"tp", 4}, {"profile", "pytorch"}, {"async_tp", true}, {"gpu", "h100-80gb"}});
  CHECK(overhead(t, "async_tp.symm_mem_workspace") == 34ull * 1048576);
  // Read from and written to Megatron-LM's arguments.
  const json read = run(
      {{"preset", "llama-3.1-8b"},
       {"config", {{"dp", 1}}},
       {"megatron_args", "--tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap"}});
  CHECK(read["config"]["async_tp"] == true);
  auto err = [](const json& config) {
    const json e = evaluate_json({{"preset", "llama-3.1-8b"}, {"config", config}});
    REQUIRE_FALSE(e.value("ok", true));
    return e["error"]["field"].get<std::string>();
  };
  CHECK(err({{"async_tp", true}}) == "config.async_tp");             // tp 1
  CHECK(err({{"async_tp", true}, {"tp", 2}}) == "config.async_tp");  // megatron without sp
  CHECK(err({{"async_tp", true}, {"tp", 2}, {"profile", "hf"}}) == "config.async_tp");
}

TEST_CASE("framework defaults fill only what the user left out") {
  const json r = framework_answer({{"framework", "torchtitan"},
                                   {"dp", 8},
                                   {"zero", 1},
                                   {"profile", "hf"},
                                   {"recompute", "full"}});
  CHECK(r["config"]["zero"] == 1);
  CHECK(r["config"]["profile"] == "hf");
  CHECK(r["config"]["recompute"] == "full");
  CHECK_FALSE(filled(r, "zero"));
  CHECK_FALSE(filled(r, "profile"));
  CHECK(filled(r, "param_dtype"));
  // torchtitan without data or context parallelism applies no FSDP (parallelize_llama.py l.79).
  const json one = framework_answer({{"framework", "torchtitan"}});
  CHECK(one["config"]["zero"] == 0);
  // plain fills nothing: today's defaults.
  CHECK(framework_answer({{"framework", "plain"}})["framework_defaults"].empty());
}

TEST_CASE("shard_group dp-cp shards ZeRO over dp x cp (Megatron-LM intra_dp_cp_group)") {
  // Megatron-LM 0011998 distributed_data_parallel.py: dense grad buffers over
  // get_data_parallel_group(with_context_parallel=True). ZeRO-1 AdamW fp32: 8 B/param.
  const json base = {{"dp", 4}, {"cp", 2}, {"zero", 1}, {"master_weights", false}};
  json dp = base, dpcp = base;
  dpcp["shard_group"] = "dp-cp";
  CHECK(u(framework_answer(dp)["peak"]["optimizer_bytes"]) == 8 * kParams8b / 4);
  CHECK(u(framework_answer(dpcp)["peak"]["optimizer_bytes"]) == 8 * kParams8b / 8);
  // megatron-lm fills dp-cp and fp32 main gradients (arguments.py, bf16 branch).
  json mg = base;
  mg["framework"] = "megatron-lm";
  const json r = framework_answer(mg);
  CHECK(r["config"]["shard_group"] == "dp-cp");
  CHECK(r["config"]["profile"] == "megatron");
  CHECK(u(r["peak"]["optimizer_bytes"]) == 8 * kParams8b / 8);
  CHECK(u(r["peak"]["grads_bytes"]) == 4 * kParams8b);
}

TEST_CASE("FSDP under pipeline parallelism holds the stage gathered and its gradients unsharded") {
  // torchtitan 9dec370 parallelize_llama.py l.325-339 (reshard_after_forward = False with PP)
  // and torch 2.6.0 pipelining/stage.py l.636-646 (no reshard, no gradient sync before the last
  // backward): the last of pp = 2 stages, the most loaded (it computes the loss), holds 16
  // layers, the final norm and the head, gathered in bf16 (2 B) with fp32 unsharded gradient
  // accumulators (4 B).
  const std::uint64_t stage1 = 16 * kLayer8b + kEmbed8b + 4096;
  const json r = framework_answer({{"framework", "torchtitan"},
                                   {"dp", 4},
                                   {"pp", 2},
                                   {"micro_batches", 4},
                                   {"recompute", "full"}});
  CHECK(r["config"]["reshard_after_forward"] == false);
  CHECK(r["config"]["accumulate_unsharded"] == true);
  const json& pk = r["peak"];
  REQUIRE(pk["stage"] == 1);
  CHECK(u(pk["gathered_params_bytes"]) == 2 * stage1);
  CHECK(u(pk["unsharded_grads_bytes"]) == 4 * stage1);
  CHECK(u(pk["static_bytes"]) == 16 * stage1 / 4 + 6 * stage1);
  // The lines add up to the peak, and the explanation names them.
  CHECK(u(pk["params_bytes"]) + u(pk["grads_bytes"]) + u(pk["master_bytes"]) +
            u(pk["optimizer_bytes"]) + u(pk["gathered_params_bytes"]) +
            u(pk["unsharded_grads_bytes"]) + u(pk["kept_activations_bytes"]) +
            u(pk["recomputed_bytes"]) + u(pk["transient_bytes"]) + u(pk["fragmentation_bytes"]) ==
        u(r["peak_bytes"]));
  bool named = false;
  for (const auto& x : r["explain"]) named = named || x["id"] == "static.unsharded_grads_bytes";
  CHECK(named);
  // The page's bar holds them as segments of their own and still adds up to the peak.
  json view_req = {{"command", "view"}, {"preset", "llama-3.1-8b"}, {"config", r["config"]}};
  view_req["config"]["gpu"] = "h200-141gb";
  const json v = run(view_req);
  std::uint64_t bar = 0;
  bool gathered = false;
  for (const auto& seg : v["tensor_bar"]["segments"]) {
    bar += u(seg["bytes"]);
    gathered = gathered || seg["id"] == "gathered";
  }
  CHECK(gathered);
  CHECK(bar == u(v["tensor_bar"]["total_bytes"]));
  // Each switch on its own: reshard_after_forward = false alone keeps the gathered parameters
  // (and drops the per-layer gather transient), not the gradient accumulators.
  json only = r["config"];
  only["accumulate_unsharded"] = false;
  const json r2 = framework_answer(only);
  CHECK(u(r2["peak"]["gathered_params_bytes"]) == 2 * stage1);
  CHECK(u(r2["peak"]["unsharded_grads_bytes"]) == 0);
  only["reshard_after_forward"] = true;
  const json r3 = framework_answer(only);
  // Left: the last stage's root-group parameters (head, final norm) and its last block.
  CHECK(u(r3["peak"]["gathered_params_bytes"]) == 2 * (kEmbed8b + 4096 + kLayer8b));
  CHECK(u(r3["peak_bytes"]) < u(r2["peak_bytes"]));
}

TEST_CASE("framework switches refuse what they cannot change, naming the field") {
  auto err = [](const json& config) {
    const json r = evaluate_json({{"preset", "llama-3.1-8b"}, {"config", config}});
    REQUIRE_FALSE(r.value("ok", true));
    return r["error"];
  };
  CHECK(err({{"reshard_after_forward", false}, {"dp", 8}, {"zero", 2}})["field"] ==
        "config.reshard_after_forward");
  CHECK(err({{"accumulate_unsharded", true}, {"dp", 8}, {"zero", 3}})["field"] ==
        "config.accumulate_unsharded");  // one micro-batch: nothing passes between them
  const json bad = err({{"framework", "deepspeed-9"}});
  CHECK(bad["field"] == "config.framework");
  CHECK(bad["message"].get<std::string>().find("plain, megatron-lm, torchtitan") !=
        std::string::npos);
  CHECK(err({{"shard_group", "tp"}})["field"] == "config.shard_group");
  // Hybrid sharding: replicas must divide dp, shard something (zero >= 1 unless every rank is a
  // replica) and leave experts alone.
  CHECK(err({{"dp", 8}, {"zero", 3}, {"dp_replicate", 3}})["field"] == "config.dp_replicate");
  CHECK(err({{"dp", 8}, {"dp_replicate", 2}})["field"] == "config.dp_replicate");
  CHECK(err({{"dp", 8}, {"zero", 1}, {"dp_replicate", 0}})["field"] == "config.dp_replicate");
  // advise varies the layout: FSDP's residency switches (zero 3, which advise chooses) are
  // refused there by name.
  auto advise_err = [](const json& config) {
    json c = config;
    c["gpu"] = "h100-80gb";
    const json r = evaluate_json({{"command", "advise"},
                                  {"preset", "llama-2-7b"},
                                  {"config", c},
                                  {"advise", {{"num_gpus", 8}, {"global_batch", 16}}}});
    REQUIRE_FALSE(r.value("ok", true));
    return r["error"]["field"];
  };
  // Under torchtitan advise sets DDP's buckets per layout (advisor.cpp).
  CHECK(advise_err({{"framework", "torchtitan"}, {"ddp_bucket_view", false}}) ==
        "config.ddp_bucket_view");
  CHECK(advise_err({{"reshard_after_forward", false}}) == "config.reshard_after_forward");
  CHECK(advise_err({{"accumulate_unsharded", true}}) == "config.accumulate_unsharded");
  CHECK(advise_err({{"dp_replicate", 2}}) == "config.dp_replicate");
  CHECK(err({{"reshard_after_forward", "no"}})["field"] == "config.reshard_after_forward");
}

namespace {

std::uint64_t record(const json& r, const std::string& name) {
  for (const auto& t : r["output_layer"]["tensors"])
    if (t["name"] == name) return u(t["bytes"]);
  return 0;
}

// The loss's records (ids loss.*, and hf's held logits) of one answer.
std::uint64_t loss_records(const json& r) {
  std::uint64_t s = 0;
  for (const auto& t : r["output_layer"]["tensors"]) {
    const std::string n = t["name"];
    if (n.rfind("loss.", 0) == 0) s += u(t["bytes"]);
  }
  return s;
}

}  // namespace

TEST_CASE("loss eager and compiled keep what torch 2.6 saves (tests/reference/loss_saved.json)") {
  // Measured: F.cross_entropy(logits.float(), labels) on bf16 logits [64, 1000], eagerly (saved-
  // tensor hooks, one entry per storage) and compiled (Inductor's decompositions, min-cut
  // partitioner): the bytes of what each keeps equal the inventory's loss records.
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/loss_saved.json");
  REQUIRE(in.good());
  const json m = json::parse(in);
  REQUIRE(m["N"] == 64);
  REQUIRE(m["V"] == 1000);
  auto measured = [&](const char* mode) {
    std::uint64_t s = 0;
    for (const auto& t : m[mode]) {
      std::uint64_t n = 1;
      for (const auto& d : t["shape"]) n *= u(d);
      const std::string dt = t["dtype"];
      s += n * (dt == "float32" ? 4 : dt == "bfloat16" ? 2 : dt == "int64" ? 8 : 0);
    }
    return s;
  };
  json model = toy_model(1);
  model["vocab_size"] = 1000;
  model["max_position_embeddings"] = 64;
  for (const char* mode : {"eager", "compiled"}) {
    const json r = run(
        json{{"model", model},
             {"config", {{"seq", 64}, {"dtype", "bf16"}, {"profile", "pytorch"}, {"loss", mode}}}});
    INFO(mode);
    CHECK(loss_records(r) == measured(mode));
  }
  CHECK(measured("eager") == 64 * 1000 * 4 + 64 * 8 + 4);
  CHECK(measured("compiled") == 64 * 1000 * 2 + 64 * 8 + 2 * 64 * 4 + 4);
}

TEST_CASE("loss implementations on Llama 3.1 8B: exact bytes kept and the loss's buffers") {
  // N = 2 x 8192 tokens, V = 128,256, h = 4096, bf16 compute (torchtitan's defaults).
  constexpr std::uint64_t n = 2 * 8192, v = 128'256, h = 4096;
  auto answer = [&](const char* loss, const char* command) {
    return run(json{{"command", command},
                    {"preset", "llama-3.1-8b"},
                    {"config",
                     {{"framework", "torchtitan"},
                      {"dp", 8},
                      {"seq", 8192},
                      {"micro_batch", 2},
                      {"loss", loss}}}});
  };
  const json eager = answer("eager", "estimate");
  CHECK(record(eager, "loss.log_softmax_out") == 4 * n * v);  // derivatives.yaml _log_softmax
  CHECK(named_transient(answer("eager", "timeline"), "loss.fp32_logits_buffer") == 4 * n * v);
  // chunked:8 keeps the same log-softmax bytes (every chunk's waits for backward) and upcasts
  // one chunk at a time (torchtune CEWithChunkedOutputLoss; PR #1390).
  const json chunked = answer("chunked:8", "estimate");
  CHECK(record(chunked, "loss.log_softmax_out") == 4 * n * v);
  const json tl8 = answer("chunked:8", "timeline");
  CHECK(named_transient(tl8, "loss.fp32_logits_buffer") == 4 * n * v / 8);
  CHECK(named_transient(tl8, "loss.logits_grad") == 4 * n * v / 8);
  // compiled keeps the bf16 logits and two fp32 numbers per token instead.
  const json compiled = answer("compiled", "estimate");
  CHECK(record(compiled, "loss.log_softmax_out") == 0);
  CHECK(record(compiled, "loss.logits") == 2 * n * v);
  CHECK(record(compiled, "loss.lse") == 4 * n);
  CHECK(u(eager["activations"]["output_layer_bytes"]) -
            u(compiled["activations"]["output_layer_bytes"]) ==
        4 * n * v - 2 * n * v - 8 * n);
  CHECK(named_transient(answer("compiled", "timeline"), "loss.logits_grad") == 2 * n * v);
  // fused (Liger, 77ff1a9): the input's and weight's gradients, no logits, no lm_head input;
  // one [512, V] bf16 logits chunk (next_power_of_2(ceil(16384 / ceil(128256 / 4096)))).
  const json fused = answer("fused", "estimate");
  CHECK(record(fused, "loss.grad_input") == 2 * n * h);
  CHECK(record(fused, "loss.grad_weight") == 2 * v * h);
  CHECK(record(fused, "lm_head.in") == 0);
  CHECK(record(fused, "loss.log_softmax_out") == 0);
  CHECK(named_transient(answer("fused", "timeline"), "loss.fp32_logits_buffer") == 512 * v * 2);
  // The loss's own peak (phases[]): the step's is a layer's backward once the sharded gradients
  // are made there, for all three.
  auto loss_peak = [](const json& r) {
    for (const json& p : r["phases"])
      if (p["phase"] == "loss") return u(p["peak_bytes"]);
    return std::uint64_t{0};
  };
  CHECK(loss_peak(fused) < loss_peak(compiled));
  CHECK(loss_peak(compiled) < loss_peak(eager));
}

TEST_CASE(
    "verl's FSDP root unit: held from forward to the end of backward, padded to the shard group, "
    "then joined and reduced (torch 2.6 fsdp/_runtime_utils.py _post_forward_reshard and "
    "_post_backward_hook, _flat_param.py _get_shard, verl b178a3c fsdp_workers.py l.527-539)") {
  auto phase = [](const json& r, const std::string& name) {
    for (const auto& p : r["phases"])
      if (p["phase"] == name) return u(p["peak_bytes"]);
    FAIL("no phase " << name);
    return std::uint64_t{0};
  };
  // The same settings without verl (framework plain): ZeRO-3 gathers each layer, no root unit.
  const json same = {{"profile", "hf"},
                     {"attention", "flash"},
                     {"dtype", "bf16"},
                     {"param_dtype", "fp32"},
                     {"grad_dtype", "fp32"},
                     {"master_weights", false},
                     {"zero", 3},
                     {"optimizer_impl", "foreach"},
                     {"loss", "logprob"},
                     {"recompute", "full"}};
  auto ask = [&](const char* preset, std::uint64_t dp, bool verl, const char* command,
                 std::uint64_t b = 4, std::uint64_t seq = 4096) {
    json c = verl ? json{{"framework", "verl"}} : same;
    c["dp"] = dp, c["micro_batch"] = b, c["seq"] = seq;
    return run(json{{"command", command}, {"preset", preset}, {"config", c}});
  };
  // Qwen2.5-7B (untied): embedding and head 152,064 x 3,584 each, the final norm 3,584: one
  // FlatParameter of R = 1,089,998,336 elements, a multiple of 8, gathered in bf16. The root's
  // gradients (head and final norm, bf16) wait for the embedding's at the end of backward.
  const std::uint64_t vh = 152'064ull * 3'584, r = 2 * vh + 3'584;
  CHECK(r == 1'089'998'336);
  const json tl = ask("qwen2.5-7b", 8, true, "timeline");
  CHECK(named_transient(tl, "fsdp.root_unit") == 2 * r);
  CHECK(named_transient(tl, "fsdp.root_grads") == 2 * (vh + 3'584));
  // The root's post-backward: the pieces (2R) and their join (2R) beside the gathered root (2R),
  // or the joined bf16 gradient (2R) and its fp32 copy (4R), no padding: 6R either way; and at
  // one micro-batch the second moment also makes the rank's fp32 shard, 4R / 8 (dp_actor.py
  // l.560's zero_grad: below).
  CHECK(named_transient(tl, "fsdp.root_post_backward") == 6 * r + 4 * r / 8);
  // A layer's recompute and backward hold its unit and the previous one, which FSDP's default
  // BACKWARD_PRE prefetches (233,057,792 parameters a layer, bf16), beside the root unit and
  // its gradients; layer 0 prefetches nothing (the root unit is held) and holds layer 1's fp32
  // gradient shard, made at its post-backward (one micro-batch: below).
  auto event = [&](const std::string& label) {
    for (const json& e : tl["stages"][0]["events"])
      if (e["label"] == label) return u(e["transients"]);
    FAIL("no event " << label);
    return std::uint64_t{0};
  };
  const std::uint64_t unit = 2 * 233'057'792ull, ws = 32ull << 20;
  CHECK(event("R mb0 c0 L27") == ws + 2 * unit + 2 * r + 2 * (vh + 3'584));
  CHECK(event("B mb0 c0 L0") == event("B mb0 c0 L1") - unit + 4 * (unit / 2) / 8);
  // Not a static line: the loss's backward holds the root beside what the same settings hold
  // without it (its gradients come later, at the head's backward: measured under FSDP2 on an
  // H200, docs/validation.md 4.6), and the optimizer step neither. verl's zero_grad at the
  // mini-batch's start (dp_actor.py l.560) leaves a one-micro-batch step's forward and loss
  // without gradients: each unit makes its fp32 shard at its post-backward, 7,615,616,512
  // parameters x 4 B / 8 ranks in all (the units' padding is none here: every unit's elements
  // are a multiple of 8).
  const json verl = ask("qwen2.5-7b", 8, true, "estimate");
  const json plain = ask("qwen2.5-7b", 8, false, "estimate");
  const std::uint64_t grads = 7'615'616'512ull * 4 / 8;
  CHECK(u(verl["static"]["gathered_params_bytes"]) == 0);
  CHECK(u(verl["static"]["grads_bytes"]) == grads);
  CHECK(phase(verl, "loss") == phase(plain, "loss") + 2 * r - grads);
  CHECK(phase(verl, "optimizer_step") == phase(plain, "optimizer_step"));
  // In backward, each event holds the shards of the units done before it (Setup::
  // grads_made_before): layer 27's backward none, layer 0's those of the 27 above; the peak is
  // the loss's, in the walk and in the device replay (which makes them unit by unit on the
  // post-backward stream).
  CHECK(verl["peak"]["phase"] == "loss");
  CHECK(u(verl["peak_bytes"]) == phase(verl, "loss"));
  CHECK(u(verl["peak"]["grads_bytes"]) == 0);
  CHECK(u(verl["device"]["stages"][0]["requested_peak_bytes"]) == phase(verl, "loss"));
  // Two micro-batches: the second's forward and loss hold the first's gradients.
  json two = {{"command", "estimate"}, {"preset", "qwen2.5-7b"}};
  two["config"] = {
      {"framework", "verl"}, {"dp", 8}, {"micro_batch", 4}, {"seq", 4096}, {"grad_accum", 2}};
  const json verl2 = run(two);
  CHECK(phase(verl2, "loss") == phase(plain, "loss") + 2 * r);
  CHECK(u(verl2["device"]["stages"][0]["requested_peak_bytes"]) == phase(verl2, "loss"));
  // One sequence of 512 tokens: the root's post-backward is the step's peak, after every layer's
  // records are freed: the static memory, the cuBLAS workspace and 6R.
  const json small = ask("qwen2.5-7b", 8, true, "estimate", 1, 512);
  CHECK(small["peak"]["at"] == "B mb0 c0 root");
  CHECK(small["peak"]["phase"] == "backward");
  CHECK(u(small["peak_bytes"]) == u(small["static"]["total_bytes"]) + 33'554'432 + 6 * r);
  // Gemma 3 1B (tied, 262,144 x 1,152): the root unit is the embedding and the final norm,
  // 301,991,040 elements; over 7 ranks torch.chunk gives 43,141,578 a rank, 6 of padding, and
  // the reduce-scatter pads the fp32 copy too. The head's use of the embedding leaves its
  // gradient waiting for the embedding's own.
  const std::uint64_t gemma = 262'144ull * 1'152 + 1'152, padded = 43'141'578ull * 7;
  CHECK(named_transient(ask("gemma-3-1b-it", 8, true, "timeline"), "fsdp.root_unit") == 2 * gemma);
  const json g7 = ask("gemma-3-1b-it", 7, true, "timeline");
  CHECK(named_transient(g7, "fsdp.root_unit") == 2 * padded);
  CHECK(named_transient(g7, "fsdp.root_grads") == 2 * gemma);
  CHECK(named_transient(g7, "fsdp.root_post_backward") ==
        std::max(2 * padded + 4 * gemma, 2 * gemma + 4 * gemma + 4 * padded + 4 * padded / 7));
  // FSDP2's root group alike (torchtitan): GPT-2's head is its embedding (50,257 x 768), so the
  // root's gradients are that matrix's and the final LayerNorm's weight and bias, in bf16.
  const json gpt2 = run(json{{"command", "timeline"},
                             {"preset", "gpt2"},
                             {"config", {{"framework", "torchtitan"}, {"dp", 4}, {"seq", 1024}}}});
  CHECK(named_transient(gpt2, "fsdp2.root_grads") == 2 * (50'257ull * 768 + 2 * 768));
}

TEST_CASE(
    "torchtitan's FSDP2 on Llama 3.1 8B under full AC: a backward recompute holds the root's "
    "gradients and the layer above's reduce-scatter input (torch 2.6.0 _fsdp_param_group.py)") {
  const json tl = run(json{{"command", "timeline"},
                           {"preset", "llama-3.1-8b"},
                           {"config",
                            {{"framework", "torchtitan"},
                             {"dp", 8},
                             {"seq", 8192},
                             {"micro_batch", 1},
                             {"recompute", "full"}}}});
  auto transients = [&](const std::string& label) {
    for (const json& e : tl["stages"][0]["events"])
      if (e["label"] == label) return u(e["transients"]);
    FAIL("no event " << label);
    return std::uint64_t{0};
  };
  constexpr std::uint64_t ws = 32 * 1048576;        // the cuBLAS workspace
  constexpr std::uint64_t gathered = 2 * kLayer8b;  // one block in bf16
  // A forward: the all-gather output and the per-parameter copies of the block; torchtitan's last
  // block (reshard_after_forward False) is a static line, gathered in its forward and freed at
  // its post-backward, which every layer event holds beside the rest as the last block's copies
  // only: the events' transients leave one block out.
  CHECK(transients("F mb0 c0 L30") == ws + 2 * gathered - gathered);
  CHECK(transients("F mb0 c0 L31") == ws + 2 * gathered - gathered);
  // Recomputing the top block (the first backward): the same, and the root's bf16 gradients
  // (head and final norm), made by the head's backward and held to the root's post-backward.
  const std::uint64_t root_grads = 2 * (kEmbed8b + 4096);
  CHECK(transients("R mb0 c0 L31") == ws + gathered + root_grads);
  // Every lower block's recompute: also the block above's fp32 reduce-scatter input, freed only
  // by this block's post-backward (reduce_scatter_state = None before its own), and the sharded
  // fp32 gradients of the blocks done, one block's 4 x 218,112,000 / 8 B each (one micro-batch:
  // made in backward, docs/validation.md 4.6).
  const std::uint64_t shard = 4 * kLayer8b / 8;
  CHECK(transients("R mb0 c0 L30") == ws + gathered + root_grads + 4 * kLayer8b + shard);
  // Block 0 prefetches nothing (the root group, the embedding's, is gathered already).
  CHECK(transients("R mb0 c0 L0") == transients("R mb0 c0 L30") + 30 * shard - gathered);
}

TEST_CASE(
    "torchtitan's FSDP2 buffers and streams on Llama 3.1 8B (torch 2.6.0 _fsdp_param_group.py, "
    "_fsdp_collectives.py)") {
  auto answer = [](const char* command) {
    return run(json{
        {"command", command},
        {"preset", "llama-3.1-8b"},
        {"config", {{"framework", "torchtitan"}, {"dp", 8}, {"seq", 8192}, {"micro_batch", 2}}}});
  };
  const json tl = answer("timeline");
  // Forward: the layer's per-parameter copies and its flat all-gather output (bf16).
  CHECK(named_transient(tl, "fsdp2.layer_forward_buffers") == 2 * (2 * kLayer8b));
  // Backward: its copies, the previous layer's prefetched all-gather output, its bf16 unsharded
  // gradients, and one fp32 reduce-scatter input: post_backward frees the previous one
  // (reduce_scatter_state = None) before foreach_reduce allocates its own.
  CHECK(named_transient(tl, "fsdp2.layer_backward_buffers") == 3 * (2 * kLayer8b) + 4 * kLayer8b);
  CHECK(named_transient(tl, "fsdp2.root_grads") == 2 * (kEmbed8b + 4096));
  // The all-gather outputs are made on FSDP2's copy-in stream (get_all_gather_streams: implicit
  // prefetching), whose cached blocks the default stream never reuses. What that stream reserves
  // is the root group's output (embedding, final norm, head) and one layer's, each its own
  // segment (a 2 MiB multiple, get_allocation_size): every later layer's output fits one of them.
  constexpr std::uint64_t k2MiB = 2 * 1048576;
  auto segment = [](std::uint64_t b) { return (b + k2MiB - 1) / k2MiB * k2MiB; };
  const json est = answer("estimate");
  const json& stage = est["device"]["stages"][0];
  // The reduce-scatter stream holds each group's output, the sharded fp32 gradients, from its
  // post-backward to zero_grad: 32 layers' segments and the root group's, every one its own
  // (the measured step's trace, docs/validation.md 4.6: 32 x 111,149,056 B and 526,385,152 B
  // on its reduce-scatter stream).
  const std::uint64_t copy_in = segment(2 * (2 * kEmbed8b + 4096)) + segment(2 * kLayer8b);
  const std::uint64_t reduce =
      32 * segment(4 * kLayer8b / 8) + segment(4 * (2 * kEmbed8b + 4096) / 8);
  CHECK(copy_in == 2'541'748'224);
  CHECK(reduce == 32 * 111'149'056ull + 526'385'152ull);
  CHECK(u(stage["side_stream_reserved_bytes"]) == copy_in + reduce);
  // Without FSDP (one GPU) nothing is on another stream.
  const json one = run(json{{"command", "estimate"},
                            {"preset", "llama-3.1-8b"},
                            {"config", {{"framework", "torchtitan"}, {"seq", 2048}}}});
  CHECK(u(one["device"]["stages"][0]["side_stream_reserved_bytes"]) == 0);
}

TEST_CASE(
    "loss parallel (torchtitan under TP, torch 2.6.0 distributed/tensor/parallel/loss.py): the "
    "gathered head input, the log-softmax of the vocabulary shard, three backward buffers") {
  // Llama 3.1 8B, tp 2 x dp 4: N = 2 x 8192 tokens, each rank's V/2 = 64,128 logits per token.
  constexpr std::uint64_t n = 2 * 8192, v2 = 64'128, h = 4096, x = 4 * n * v2;
  auto answer = [&](const char* command, const json& extra) {
    json c = {{"framework", "torchtitan"}, {"dp", 4}, {"tp", 2}, {"seq", 8192}, {"micro_batch", 2}};
    c.update(extra);
    return evaluate_json(json{{"command", command}, {"preset", "llama-3.1-8b"}, {"config", c}});
  };
  const json r = answer("estimate", json::object());
  REQUIRE(r.value("ok", false));
  CHECK(r["config"]["loss"] == "parallel");  // filled: train.py l.57, parallel_dims.py l.119
  CHECK(filled(r, "loss"));
  // ColwiseParallel(input_layouts=Shard(1)) saves the input gathered over the sequence.
  CHECK(record(r, "lm_head.in") == 2 * n * h);
  CHECK(record(r, "loss.log_softmax_out") == x);  // _log_softmax saves its result
  CHECK(record(r, "loss.labels") == 8 * n);
  const json tl = answer("timeline", json::object());
  // Forward: the bf16 shard of the logits (pred), its fp32 copy and `shifted` beside the result.
  CHECK(named_transient(tl, "loss.fp32_logits_buffer") == 2 * x + 2 * n * v2);
  // Backward: grad_input, then (grad_input + exp(x)) * grad_output.
  CHECK(named_transient(tl, "loss.logits_grad") == x);
  CHECK(named_transient(tl, "loss.backward_buffers") == 2 * x);
  // What torchtitan would not run: eager under TP (disable_loss_parallel), parallel without TP.
  const json eager = answer("estimate", json{{"loss", "eager"}});
  REQUIRE_FALSE(eager.value("ok", true));
  CHECK(eager["error"]["field"] == "config.loss");
  const json alone = evaluate_json(json{{"command", "estimate"},
                                        {"preset", "llama-3.1-8b"},
                                        {"config", {{"dp", 8}, {"loss", "parallel"}}}});
  REQUIRE_FALSE(alone.value("ok", true));
  CHECK(alone["error"]["field"] == "config.loss");
  CHECK(alone["error"]["message"].get<std::string>().find("tp > 1") != std::string::npos);
}

TEST_CASE("loss: refused where it is not a PyTorch loss or not modelled, naming config.loss") {
  auto err = [](const json& config) {
    const json r = evaluate_json({{"preset", "llama-3.1-8b"}, {"config", config}});
    REQUIRE_FALSE(r.value("ok", true));
    CHECK(r["error"]["field"] == "config.loss");
    return r["error"]["message"].get<std::string>();
  };
  CHECK(err({{"loss", "compiled"}}).find("megatron") != std::string::npos);  // default profile
  CHECK(err({{"loss", "fused"}, {"profile", "pytorch"}, {"tp", 2}}).find("tp") !=
        std::string::npos);
  for (const char* bad :
       {"chunked:1", "chunked:", "chunked:08", "chunked:x", "liger", "chunked:9999999"})
    CHECK(err({{"loss", bad}, {"profile", "pytorch"}}).find("allowed") != std::string::npos);
  CHECK(err({{"loss", "chunked:4096"}, {"profile", "pytorch"}, {"seq", 2048}}).find("chunks") !=
        std::string::npos);
}

TEST_CASE("op:torchtitan keeps every other matmul's output and flash SDPA's (9dec370 l.214-263)") {
  // Llama 3.1 8B, b = 2, s = 8192 (N = 16,384 tokens), h = 4096, 32 heads of 128, 8 KV heads,
  // f = 14,336, bf16. The layer's aten.mm calls in order: q, k, v, o, gate (w1), up (w3), down
  // (w2); torchtitan saves the 1st, 3rd, 5th and 7th (q, v, gate, down) and flash attention's
  // output and fp32 log-sum-exp [b, a, s], beside the block input its checkpoint keeps.
  constexpr std::uint64_t n = 2 * 8192;
  const std::uint64_t expect = 2 * n * 4096         // block input
                               + 2 * n * 4096       // q_proj
                               + 2 * n * 1024       // v_proj
                               + 2 * n * 4096       // sdpa out
                               + 4 * 2 * 32 * 8192  // sdpa lse
                               + 2 * n * 14336      // gate_proj
                               + 2 * n * 4096;      // down_proj
  auto answer = [&](const char* recompute) {
    return framework_answer(
        {{"framework", "torchtitan"}, {"dp", 8}, {"micro_batch", 2}, {"recompute", recompute}});
  };
  const json tt = answer("op:torchtitan");
  CHECK(u(tt["per_layer"]["activation_bytes"]) == expect);
  CHECK(tt["config"]["recompute"] == "op:torchtitan");
  // The same ops named by the user: the one mechanism, the same bytes.
  const json listed = answer("op:attn.q_proj,attn.v_proj,attn.sdpa,mlp.gate_proj,mlp.down_proj");
  CHECK(u(listed["per_layer"]["activation_bytes"]) == expect);
  CHECK(u(listed["peak_bytes"]) == u(tt["peak_bytes"]));
  // Its echoed config re-estimates to the same peak.
  CHECK(u(framework_answer(listed["config"])["peak_bytes"]) == u(listed["peak_bytes"]));
  // Saving ops spares their FLOPs in the recompute: less overhead than full checkpointing.
  const json full = answer("full");
  CHECK(tt["recompute_overhead_pct"].get<double>() < full["recompute_overhead_pct"].get<double>());
  CHECK(u(answer("op:attn.sdpa")["per_layer"]["activation_bytes"]) ==
        2 * n * 4096 + 2 * n * 4096 + 4 * 2 * 32 * 8192);
}

TEST_CASE("op policies are refused where the ops are not named, naming config.recompute") {
  auto err = [](const json& config) {
    const json r = evaluate_json({{"preset", "llama-3.1-8b"}, {"config", config}});
    REQUIRE_FALSE(r.value("ok", true));
    return r["error"];
  };
  const json unknown = err({{"recompute", "op:attn.qkv"}, {"profile", "pytorch"}});
  CHECK(unknown["field"] == "config.recompute");
  CHECK(unknown["message"].get<std::string>().find("attn.q_proj") != std::string::npos);
  // The megatron profile names no op outputs (its records follow Korthikanti et al.).
  CHECK(err({{"recompute", "op:torchtitan"}})["field"] == "config.recompute");
  CHECK(err({{"recompute", "op:attn.sdpa"},
             {"profile", "pytorch"},
             {"custom_keep", {"ln1.in"}}})["field"] == "config.custom_keep");
  for (const char* bad : {"op:", "op:a,,b", "op:,"})
    CHECK(err({{"recompute", bad}, {"profile", "pytorch"}})["field"] == "config.recompute");
}

TEST_CASE("optimizer_offload (ZeRO-Offload) moves the fp32 partition, its gradients and AdamW") {
  // DeepSpeed stage_1_and_2.py initialize_optimizer_states (cpu_offload: a pinned fp32 gradient
  // partition beside the fp32 parameter partition) and AdamW's two fp32 states: 16 B per
  // parameter over dp = 8 on the host; the GPU keeps the bf16 parameters (ZeRO-2).
  const json r = framework_answer({{"dp", 8}, {"zero", 2}, {"optimizer_offload", true}});
  CHECK(u(r["static"]["host_bytes"]) == 16 * kParams8b / 8);
  CHECK(u(r["peak"]["static_bytes"]) == 2 * kParams8b);
  CHECK(u(r["peak"]["grads_bytes"]) + u(r["peak"]["master_bytes"]) +
            u(r["peak"]["optimizer_bytes"]) ==
        0);
  const json off = framework_answer({{"dp", 8}, {"zero", 2}});
  CHECK(u(off["static"]["host_bytes"]) == 0);
  CHECK(u(off["peak_bytes"]) > u(r["peak_bytes"]));
  const json bad = evaluate_json(
      {{"preset", "llama-3.1-8b"}, {"config", {{"optimizer_offload", true}, {"zero", 1}}}});
  CHECK(bad["error"]["field"] == "config.optimizer_offload");
}

}  // namespace actmem::test
