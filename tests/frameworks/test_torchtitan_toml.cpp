// torchtitan job configs (read/torchtitan_toml.cpp, emit_torchtitan.cpp): torchtitan 9dec370's own
// train_configs/llama3_{8b,70b,405b}.toml (tests/data/torchtitan/, copied from
// pytorch/torchtitan@9dec370ad26b5f8e9a7333a0e36165018262644b) read to the config torchtitan runs,
// emitted TOMLs read back to the same estimate and the same text, and the refusals by name.
#include <fstream>
#include <sstream>

#include "helpers.hpp"

using namespace actmem;
using actmem::test::run;
using nlohmann::json;

namespace {

std::string data(const std::string& name) {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/data/torchtitan/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json refuse(const json& req) {
  const json r = evaluate_json(req);
  INFO(r.dump().substr(0, 400));
  REQUIRE_FALSE(r.value("ok", true));
  return r["error"];
}

json summary(const std::string& preset, const json& config, const std::string& toml = "") {
  json req = {{"preset", preset}, {"config", config}, {"summary", true}};
  if (!toml.empty()) req["torchtitan_toml"] = toml;
  return run(req);
}

json run_preset_peak(const json& config) {
  return run({{"preset", "llama-3.1-8b"}, {"config", config}, {"summary", true}})["peak_bytes"];
}

}  // namespace

TEST_CASE(
    "torchtitan 9dec370's llama3_8b.toml and llama3_70b.toml read as the configs they run "
    "(config_manager.py defaults, parallelize_llama.py)",
    "[torchtitan]") {
  // llama3_8b.toml: batch 1, seq 8192, dp_shard -1 (the job's ranks: 8 here), op-SAC.
  const json direct8 = summary("llama-3.1-8b", {{"framework", "torchtitan"},
                                                {"gpu", "h100-80gb"},
                                                {"seq", 8192},
                                                {"micro_batch", 1},
                                                {"dp", 8},
                                                {"recompute", "op:torchtitan"}});
  const json read8 =
      summary("llama-3.1-8b", {{"gpu", "h100-80gb"}, {"dp", 8}}, data("llama3_8b.toml"));
  CHECK(read8["peak"] == direct8["peak"]);
  CHECK(read8["headroom_bytes"] == direct8["headroom_bytes"]);
  // llama3_70b.toml: batch 8, tensor_parallel_degree 8 (sequence parallel norms), full AC.
  const json direct70 = summary("llama-3.1-70b", {{"framework", "torchtitan"},
                                                  {"gpu", "h100-80gb"},
                                                  {"seq", 8192},
                                                  {"micro_batch", 8},
                                                  {"tp", 8},
                                                  {"sp", true},
                                                  {"dp", 4},
                                                  {"recompute", "full"}});
  const json read70 =
      summary("llama-3.1-70b", {{"gpu", "h100-80gb"}, {"dp", 4}}, data("llama3_70b.toml"));
  CHECK(read70["peak"] == direct70["peak"]);
  // llama3_405b.toml compiles the blocks with async TP at tp 8 (compile under TP is measured:
  // compile_tp_saved.json) and trains float8 linears, which under TP are not modelled.
  const json e405 = refuse({{"preset", "llama-3.1-405b"},
                            {"config", {{"dp", 8}}},
                            {"torchtitan_toml", data("llama3_405b.toml")}});
  CHECK(e405["field"] == "config.float8");
  // Without float8 it reads as the run it describes: compiled blocks, async TP, full AC.
  std::string no_float8 = data("llama3_405b.toml");
  const std::string on = "enable_float8_linear = true";
  no_float8.replace(no_float8.find(on), on.size(), "enable_float8_linear = false");
  const json read405 = run({{"preset", "llama-3.1-405b"},
                            {"config", {{"dp", 8}, {"gpu", "h100-80gb"}}},
                            {"torchtitan_toml", no_float8}});
  CHECK(read405["config"]["compile"] == true);
  CHECK(read405["config"]["async_tp"] == true);
  CHECK(read405["config"]["tp"] == 8);
  // Async TP without compile is torchtitan's own refusal.
  std::string eager = no_float8;
  eager.replace(eager.find("compile = true"), 14, "compile = false");
  const json e_async =
      refuse({{"preset", "llama-3.1-405b"}, {"config", {{"dp", 8}}}, {"torchtitan_toml", eager}});
  CHECK(e_async["message"] ==
        "torchtitan_toml: experimental.enable_async_tensor_parallel = true needs "
        "training.compile = true (torchtitan: 'Async TP requires --training.compile')");
}

TEST_CASE("torchtitan TOMLs written for a configuration read back to the same estimate",
          "[torchtitan]") {
  struct Case {
    const char* preset;
    json config;
  };
  const Case cases[] = {
      // FSDP over 8, op-SAC (tables 1 and 3's layout).
      {"llama-3.1-8b", {{"dp", 8}, {"micro_batch", 2}, {"recompute", "op:torchtitan"}}},
      // FSDP x CP (table 2), full AC, float8 with the e4m3 all-gather.
      {"llama-3.1-8b",
       {{"dp", 4},
        {"cp", 2},
        {"seq", 16384},
        {"recompute", "full"},
        {"float8", "tensorwise"},
        {"float8_all_gather", true}}},
      // HSDP: 2 replicas of 4-way sharding, every third block checkpointed.
      {"llama-3.1-8b", {{"dp", 8}, {"dp_replicate", 2}, {"recompute", "layers:KKC"}}},
      // TP 8 + PP 8 + FSDP 2 on 405B: 126 layers, torchtitan's uneven split [15, 16 x 6, 15] as
      // split points; FSDP2 keeps the stage unsharded under PP.
      {"llama-3.1-405b",
       {{"tp", 8},
        {"pp", 8},
        {"dp", 2},
        {"micro_batches", 8},
        {"layer_split", {15, 16, 16, 16, 16, 16, 16, 15}},
        {"recompute", "full"}}},
      // Interleaved 1F1B: 2 stages per rank of 10 layers, every second block checkpointed.
      {"llama-3.1-70b",
       {{"tp", 8},
        {"pp", 4},
        {"vpp", 2},
        {"dp", 2},
        {"micro_batches", 8},
        {"recompute", "layers:KC"}}},
      // GPipe without data parallelism: fp32 (no FSDP, no mixed precision).
      {"llama-3.1-8b", {{"pp", 4}, {"schedule", "gpipe"}, {"micro_batches", 4}}},
      // DDP over 4 replicas: fp32 with DDP's buckets.
      {"llama-3.1-8b", {{"dp", 4}, {"dp_replicate", 4}, {"recompute", "none"}, {"seq", 2048}}},
  };
  for (const Case& c : cases) {
    json cfg = c.config;
    cfg["framework"] = "torchtitan";
    if (!cfg.contains("seq")) cfg["seq"] = 8192;
    INFO(c.preset << " " << cfg.dump());
    const std::string text =
        run({{"preset", c.preset}, {"config", cfg}, {"emit", "torchtitan"}})["text"];
    INFO(text);
    cfg["gpu"] = "h100-80gb";
    const json direct = summary(c.preset, cfg);
    // The TOML alone gives every degree (dp_shard written out): only the GPU is added.
    const json back = summary(c.preset, {{"gpu", "h100-80gb"}}, text);
    CHECK(back["peak"] == direct["peak"]);
    CHECK(back["headroom_bytes"] == direct["headroom_bytes"]);
    CHECK(run({{"preset", c.preset}, {"torchtitan_toml", text}, {"emit", "torchtitan"}})["text"] ==
          text);
  }
}

TEST_CASE(
    "torchtitan TOML: the pipeline keys as torchtitan 9dec370 reads them (pipelining_utils.py)",
    "[torchtitan]") {
  auto cfg = [](const std::string& preset, const std::string& toml) {
    return run({{"preset", preset}, {"config", {{"dp", 1}}}, {"torchtitan_toml", toml}})["config"];
  };
  // No split points: the first stage base layers, middle ones base + 1 while extras remain, the
  // last the rest (l.37-52): 126 layers on 8 stages.
  const json c405 = cfg("llama-3.1-405b",
                        "[training]\nbatch_size = 16\ntensor_parallel_degree = 8\n"
                        "[experimental]\npipeline_parallel_degree = 8\n"
                        "[activation_checkpoint]\nmode = 'full'\n");
  CHECK(c405["layer_split"] == json({15, 16, 16, 16, 16, 16, 16, 15}));
  // Micro-batches default to the pipeline degree (l.79-81): batch 16 over 8.
  CHECK(c405["micro_batches"] == 8);
  CHECK(c405["micro_batch"] == 2);
  CHECK(c405["sp"] == true);
  // A looped schedule takes two stages per rank by default: 32 layers, pp 4 -> 8 stages of 4.
  const json c8 = cfg("llama-3.1-8b",
                      "[experimental]\npipeline_parallel_degree = 4\n"
                      "pipeline_parallel_schedule = 'interleaved1f1b'\n"
                      "pipeline_parallel_microbatches = 8\n[training]\nbatch_size = 8\n");
  CHECK(c8["vpp"] == 2);
  CHECK(c8["schedule"] == "interleaved");
  // torchtitan's default selective_ac_option '2': every second block, the count restarting with
  // each rank's chunk of 4 layers.
  CHECK(c8["recompute"] == "layers:KC");
  // selective_ac_option '0' and '1' checkpoint every block; 'op' is torchtitan's op list.
  CHECK(cfg("llama-3.1-8b", "[activation_checkpoint]\nselective_ac_option = '1'\n")["recompute"] ==
        "full");
  CHECK(cfg("llama-3.1-8b",
            "[activation_checkpoint]\nselective_ac_option = \"0\"\n")["recompute"] == "full");
  // Every 100th block of 32: the count never gets there, so no block is checkpointed.
  CHECK(cfg("llama-3.1-8b",
            "[activation_checkpoint]\nselective_ac_option = '100'\n")["recompute"] == "none");
  // Without FSDP (dp 1, cp 1) the run is fp32.
  CHECK(cfg("llama-3.1-8b", "")["dtype"] == "fp32");
  CHECK(cfg("llama-3.1-8b", "[training]\nmixed_precision_param = 'float32'\n")["dtype"] == "fp32");
}

TEST_CASE("torchtitan TOML refusals name the field, the key and what is allowed", "[torchtitan]") {
  auto err = [](const std::string& toml, const json& config = json{{"dp", 8}},
                const std::string& preset = "llama-3.1-8b") {
    return refuse({{"preset", preset}, {"config", config}, {"torchtitan_toml", toml}});
  };
  auto msg = [&](const std::string& toml) { return err(toml)["message"].get<std::string>(); };
  auto starts = [](const std::string& s, const std::string& prefix) {
    INFO(s);
    return s.rfind(prefix, 0) == 0;
  };
  // training.compile is read as compile (apply_compile), which the config then checks: with
  // torchtitan's selective checkpointing it is refused by its field; without, it is answered.
  CHECK(err("[training]\ncompile = true\n")["field"] == "config.compile");
  const json compiled =
      actmem::test::run({{"preset", "llama-3.1-8b"},
                         {"config", {{"dp", 8}}},
                         {"torchtitan_toml",
                          "[training]\ncompile = true\n[activation_checkpoint]\nmode = 'none'\n"}});
  CHECK(compiled["config"]["compile"] == true);
  // Keys that change memory in ways not modelled.
  CHECK(starts(msg("[training]\nenable_cpu_offload = true\n"),
               "torchtitan_toml: training.enable_cpu_offload = true"));
  CHECK(starts(msg("[optimizer]\nearly_step_in_backward = true\n"),
               "torchtitan_toml: optimizer.early_step_in_backward = true"));
  CHECK(starts(msg("[model]\nnorm_type = 'fused_rmsnorm'\n"),
               "torchtitan_toml: model.norm_type \"fused_rmsnorm\": only rmsnorm"));
  CHECK(starts(msg("[experimental]\npipeline_parallel_degree = 2\n"
                   "pipeline_parallel_schedule = 'ZBVZeroBubble'\n"),
               "torchtitan_toml: experimental.pipeline_parallel_schedule \"ZBVZeroBubble\""));
  CHECK(starts(msg("[experimental]\ncontext_parallel_rotate_method = 'alltoall'\n"),
               "torchtitan_toml: experimental.context_parallel_rotate_method \"alltoall\""));
  CHECK(starts(msg("[training]\ntensor_parallel_degree = 2\n"
                   "[experimental]\nenable_async_tensor_parallel = true\n"),
               "torchtitan_toml: experimental.enable_async_tensor_parallel = true needs "
               "training.compile"));
  CHECK(starts(msg("[float8]\nenable_float8_linear = true\nscaling_type_input = 'delayed'\n"),
               "torchtitan_toml: float8.scaling_type_input \"delayed\""));
  // The later layout, whose keys and defaults are not 9dec370's.
  CHECK(starts(msg("[parallelism]\ndata_parallel_shard_degree = 8\n"),
               "torchtitan_toml: [parallelism] is torchtitan's later layout"));
  // The model: the flavor of another model, or one torchtitan 9dec370 does not build.
  CHECK(starts(msg("[model]\nname = 'llama3'\nflavor = '70B'\n"),
               "torchtitan_toml: model.flavor \"70B\" describes another model"));
  CHECK(starts(err("", {{"dp", 8}}, "mixtral-8x7b")["message"].get<std::string>(),
               "torchtitan_toml: torchtitan 9dec370 trains Llama 3 models"));
  CHECK(starts(msg("[model]\nname = 'llama2'\n"),
               "torchtitan_toml: model.name \"llama2\": torchtitan 9dec370 builds llama3 only"));
  CHECK(starts(msg("[model]\nflavor = 'debugmodel'\n"),
               "torchtitan_toml: model.flavor \"debugmodel\" describes another model"));
  CHECK(starts(msg("[model]\nflavor = ''\n"), "torchtitan_toml: model.flavor \"\": not a flavor"));
  CHECK(starts(msg("[experimental]\npipeline_parallel_degree = 2\n"
                   "pipeline_parallel_split_points = ['layers.08']\n"),
               "torchtitan_toml: experimental.pipeline_parallel_split_points \"layers.08\""));
  // Types, values and TOML syntax, by line.
  CHECK(starts(msg("[training]\nbatch_size = \"2\"\n"),
               "torchtitan_toml: training.batch_size \"2\": must be an integer"));
  CHECK(starts(msg("[training]\ntensor_parallel_degree = 0\n"),
               "torchtitan_toml: training.tensor_parallel_degree 0: must be at least 1"));
  CHECK(starts(msg("[training]\nbatch_size = 2\nbatch_size = 4\n"),
               "torchtitan_toml: line 3: the key \"batch_size\" is given twice"));
  CHECK(starts(msg("[training]\nseq_len = 9223372036854775808\n"),
               "torchtitan_toml: line 2: the integer \"9223372036854775808\" is out of the "
               "64-bit range"));
  CHECK(starts(msg("[training\n"), "torchtitan_toml: line 1: a table header needs its closing ]"));
  CHECK(starts(msg("[training]\nseq_len = 8192 x\n"),
               "torchtitan_toml: line 2: expected the end of the line"));
  CHECK(starts(msg("a = {b = 1}\n"), "torchtitan_toml: line 1: inline tables"));
  CHECK(starts(msg("[job]\ndescription = \"\"\"x\"\"\"\n"),
               "torchtitan_toml: line 2: multi-line strings"));
  CHECK(starts(msg("[training]\nsteps = 1979-05-27\n"),
               "torchtitan_toml: line 2: the value \"1979-05-27\": dates"));
  // Batch and pipeline shapes torchtitan would split unevenly or cannot run.
  CHECK(starts(msg("[training]\nbatch_size = 3\n[experimental]\npipeline_parallel_degree = 2\n"),
               "torchtitan_toml: training.batch_size 3 is not 2 equal pipeline micro-batches"));
  CHECK(starts(msg("[experimental]\npipeline_parallel_degree = 2\n"
                   "pipeline_parallel_split_points = ['layers.20', 'layers.10']\n"),
               "torchtitan_toml: experimental.pipeline_parallel_split_points \"layers.10\""));
  // TOML is UTF-8 without a byte-order mark, with no control characters in comments or strings
  // (Python's tomllib, which torchtitan reads with, refuses each).
  CHECK(starts(msg("[job]\ndescription = \"\xff\xfe\"\n"),
               "torchtitan_toml: line 2: the text is not valid UTF-8"));
  CHECK(starts(msg("\xEF\xBB\xBF[training]\n"),
               "torchtitan_toml: line 1: the text starts with a UTF-8 byte-order mark"));
  CHECK(starts(msg("# bell \x07\n"), "torchtitan_toml: line 1: a control character in a comment"));
  CHECK(starts(msg("[job]\ndescription = \"a\x1b[31m\"\n"),
               "torchtitan_toml: line 2: a control character in a string"));
  // The offending token, not the lines after it.
  CHECK(msg("[training] x\nbatch_size = 1\n") ==
        "torchtitan_toml: line 1: expected the end of the line at \"x\"");
  // dp_shard -1 takes the job's ranks: the request must say how many.
  const json no_dp = err("", json::object());
  CHECK(no_dp["field"] == "config.dp");
  // The same setting given twice with two values.
  const json conflict = err("[training]\ntensor_parallel_degree = 2\n", {{"dp", 4}, {"tp", 4}});
  CHECK(conflict["field"] == "config.tp");
  CHECK(starts(conflict["message"], "config.tp: 4 conflicts with torchtitan_toml, which gives 2"));
  // One framework's configuration per request.
  CHECK(refuse({{"preset", "llama-3.1-8b"},
                {"megatron_args", "--bf16"},
                {"torchtitan_toml", ""}})["field"] == "torchtitan_toml");
}

TEST_CASE("torchtitan TOML: unknown keys are reported, harmless ones are not", "[torchtitan]") {
  const json r =
      run({{"preset", "llama-3.1-8b"},
           {"config", {{"dp", 8}}},
           {"torchtitan_toml",
            "[metrics]\nlog_freq = 10\n[training]\nbatch_sise = 4\n[mystery]\nx = 1\n"}});
  REQUIRE(r.contains("warnings"));
  const std::string w = r["warnings"].dump();
  CHECK(w.find("training.batch_sise") != std::string::npos);
  CHECK(w.find("mystery.x") != std::string::npos);
  CHECK(w.find("log_freq") == std::string::npos);
}

TEST_CASE("emit torchtitan refuses what torchtitan would not run, naming it", "[torchtitan]") {
  auto err = [](const json& config) {
    json c = config;
    c["framework"] = "torchtitan";
    c["seq"] = 4096;
    return refuse({{"preset", "llama-3.1-8b"}, {"config", c}, {"emit", "torchtitan"}});
  };
  auto starts = [](const json& e, const std::string& prefix) {
    INFO(e.dump());
    return e["field"] == "emit" && e["message"].get<std::string>().rfind(prefix, 0) == 0;
  };
  CHECK(starts(err({{"dp", 8}, {"zero", 1}}), "emit: torchtitan: zero 1: torchtitan runs FSDP2"));
  CHECK(starts(err({{"recompute", "selective"}}), "emit: torchtitan: recompute selective"));
  CHECK(starts(err({{"recompute", "every:4"}}), "emit: torchtitan: recompute every:4"));
  CHECK(starts(err({{"profile", "megatron"}}), "emit: torchtitan: profile megatron"));
  CHECK(starts(err({{"micro_batches", 4}}), "emit: torchtitan: micro_batches 4"));
  CHECK(starts(err({{"pp", 2}, {"schedule", "zb-h1"}, {"micro_batches", 4}}),
               "emit: torchtitan: schedule zb-h1"));
  CHECK(starts(err({{"dp", 8}, {"loss", "chunked:8"}}), "emit: torchtitan: loss chunked:8"));
}

TEST_CASE("plan --emit torchtitan chooses among torchtitan's policies and reads back",
          "[torchtitan]") {
  // Llama 3.1 8B on 8 H100s at seq 8192: at micro-batch 1 no recompute just fits (the sharded
  // gradients are made in backward, after the loss's peak: docs/validation.md 4.6), and at
  // micro-batch 2 the plan picks the cheapest of torchtitan's policies that does (every N-th
  // block, the op list, full).
  for (const int mb : {1, 2}) {
    const json cfg = {{"framework", "torchtitan"},
                      {"gpu", "h100-80gb"},
                      {"seq", 8192},
                      {"dp", 8},
                      {"micro_batch", mb}};
    const json p = run(
        {{"command", "plan"}, {"preset", "llama-3.1-8b"}, {"config", cfg}, {"emit", "torchtitan"}});
    const std::string policy = p["policy"];
    INFO(mb << " " << policy);
    const bool every_nth = policy.rfind("layers:", 0) == 0 && policy.back() == 'C' &&
                           policy.find_first_not_of('K', 7) == policy.size() - 1;
    CHECK((policy == "full" || policy == "op:torchtitan" || every_nth || policy == "none"));
    if (mb == 1) CHECK(policy == "none");
    // Every candidate on the front is one torchtitan can say, with its own peak.
    for (const json& pt : p["pareto"]) {
      json c = cfg;
      c["recompute"] = pt["policy"];
      CHECK(pt["peak_bytes"] == run_preset_peak(c));
    }
    json chosen = cfg;
    chosen["recompute"] = policy;
    const json back = summary("llama-3.1-8b", {{"gpu", "h100-80gb"}}, p["emit"]);
    CHECK(back["peak_bytes"] == p["peak_bytes"]);
    CHECK(back["peak_bytes"] == summary("llama-3.1-8b", chosen)["peak_bytes"]);
    CHECK(back["fits"] == true);
    if (mb == 2) CHECK(policy == "op:torchtitan");  // 8.8% extra FLOPs against full's 31.5%
  }
}

TEST_CASE(
    "advise under torchtitan: each layout takes torchtitan's settings for it, and its TOML reads "
    "back to its peak",
    "[torchtitan]") {
  const json base = {{"framework", "torchtitan"}, {"gpu", "h100-80gb"}, {"seq", 8192}};
  const json r = run({{"command", "advise"},
                      {"preset", "llama-3.1-8b"},
                      {"config", base},
                      {"emit", "torchtitan"},
                      {"advise", {{"num_gpus", "4:8"}, {"global_batch", 32}, {"limit", 8}}}});
  REQUIRE(r["layouts"].size() == 8);
  for (const json& l : r["layouts"]) {
    INFO(l.dump().substr(0, 300));
    // parallelize_llama.py l.79-110: FSDP2 (zero 3) when dp x cp > 1; no gradient accumulation
    // without pipelining; torchtitan's activation checkpointing modes only.
    const bool fsdp = l["dp"].get<int>() * l["cp"].get<int>() > 1;
    CHECK(l["zero"] == (fsdp ? 3 : 0));
    if (l["pp"] == 1) CHECK(l["micro_batches"] == 1);
    CHECK((l["recompute"] == "none" || l["recompute"] == "full" ||
           l["recompute"] == "op:torchtitan"));
    CHECK((l["schedule"] == "1f1b" || l["schedule"] == "interleaved"));
    const json e = summary("llama-3.1-8b", {{"gpu", "h100-80gb"}}, l["emit"]);
    CHECK(e["peak_bytes"] == l["peak_bytes"]);
    CHECK(e["headroom_bytes"] == l["headroom_bytes"]);
    CHECK(e["fits"] == true);
  }
  // torchtitan's TOML is written only with torchtitan's own settings per layout.
  const json no_framework = refuse({{"command", "advise"},
                                    {"preset", "llama-3.1-8b"},
                                    {"config", {{"gpu", "h100-80gb"}}},
                                    {"emit", "torchtitan"},
                                    {"advise", {{"num_gpus", 8}, {"global_batch", 32}}}});
  CHECK(no_framework["field"] == "emit");
}

TEST_CASE(
    "torchtitan's own code reads actmem's TOMLs as actmem does: JobConfig, ParallelDims, the AC "
    "checks and the pipeline split of 9dec370 under torch 2.6 (tests/reference/"
    "torchtitan_parsed.json)",
    "[torchtitan]") {
  auto load = [](const std::string& rel) {
    std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/reference/" + rel);
    REQUIRE(in.good());
    return json::parse(in);
  };
  const json cases = load("torchtitan_cases.json");
  const json parsed = load("torchtitan_parsed.json");
  REQUIRE(cases.size() == parsed.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const json& t = parsed[i];
    INFO(c["name"].get<std::string>());
    REQUIRE(t["name"] == c["name"]);
    const std::string toml = data(c["toml"].get<std::string>());
    // The TOMLs actmem wrote are what it writes today for their configs.
    if (c.contains("config"))
      CHECK(
          run({{"preset", c["preset"]}, {"config", c["config"]}, {"emit", "torchtitan"}})["text"] ==
          toml);
    // actmem's reading, with the data-parallel size torchtitan resolved for the world size.
    const std::uint64_t dp =
        t["dp_replicate"].get<std::uint64_t>() * t["dp_shard"].get<std::uint64_t>();
    const json cfg = run(
        {{"preset", c["preset"]}, {"config", {{"dp", dp}}}, {"torchtitan_toml", toml}})["config"];
    CHECK(cfg["tp"] == t["tp"]);
    CHECK(cfg["pp"] == t["pp"]);
    CHECK(cfg["cp"] == t["cp"]);
    CHECK(cfg["dp_replicate"] == t["dp_replicate"]);
    CHECK(cfg["seq"] == t["seq_len"]);
    CHECK(cfg["micro_batch"].get<std::uint64_t>() * cfg["micro_batches"].get<std::uint64_t>() ==
          t["batch_size"].get<std::uint64_t>());
    CHECK(cfg["dtype"] == (t["dp_shard"].get<int>() * t["cp"].get<int>() > 1 &&
                                   t["mixed_precision_param"] == "bfloat16"
                               ? "bf16"
                               : "fp32"));
    if (t["pp"].get<int>() > 1) {
      CHECK(cfg["micro_batches"] == t["n_microbatches"]);
      const std::uint64_t stages = t["stage_layers"].size();
      const std::uint64_t pp = t["pp"].get<std::uint64_t>();
      CHECK(cfg["vpp"].get<std::uint64_t>() * pp == stages);
      const std::string sched = t["schedule"];
      CHECK(cfg["schedule"] == (sched == "ScheduleInterleaved1F1B" ? "interleaved"
                                : sched == "ScheduleGPipe"         ? "gpipe"
                                                                   : "1f1b"));
      // Each rank's layers: torchtitan's stages on that rank against actmem's chunks.
      const json layers = cfg.contains("layer_split") && !cfg["layer_split"].empty()
                              ? cfg["layer_split"]
                              : json(std::vector<std::uint64_t>(
                                    pp, t["stage_layers"][0].get<std::uint64_t>() * stages / pp));
      for (std::uint64_t r = 0; r < pp; ++r) {
        std::uint64_t on_rank = 0;
        for (const json& s : t["rank_stages"][r])
          on_rank += t["stage_layers"][s.get<std::size_t>()].get<std::uint64_t>();
        CHECK(layers[r] == on_rank);
      }
    }
    const std::string mode = t["ac_mode"], option = t["ac_option"];
    const std::string want = mode == "none"   ? "none"
                             : mode == "full" ? "full"
                             : option == "op" ? "op:torchtitan"
                             : std::stoi(option) <= 1
                                 ? "full"
                                 : "layers:" + std::string(std::stoi(option) - 1, 'K') + "C";
    CHECK(cfg["recompute"] == want);
    CHECK(cfg["float8"] == (t["float8"] == true ? "tensorwise" : "none"));
    CHECK(cfg["float8_all_gather"] == (t["float8"] == true && t["float8_all_gather"] == true));
  }
}

TEST_CASE(
    "torchtitan TOML with the request's other keys: what torchtitan would not run is refused, "
    "plan chooses the checkpointing, advise takes the framework instead",
    "[torchtitan]") {
  const std::string toml = data("llama3_8b.toml");
  auto err = [&](const json& config) {
    return refuse({{"preset", "llama-3.1-8b"}, {"config", config}, {"torchtitan_toml", toml}});
  };
  // FSDP2 computes in mixed_precision_param (bfloat16 here); without FSDP torchtitan runs fp32.
  const json fp32 = err({{"dp", 8}, {"dtype", "fp32"}});
  CHECK(fp32["field"] == "config.dtype");
  CHECK(fp32["message"].get<std::string>().rfind(
            "config.dtype: fp32 conflicts with torchtitan_toml: FSDP2 computes in "
            "training.mixed_precision_param, bf16",
            0) == 0);
  CHECK(err({{"dp", 1}, {"dtype", "bf16"}})["field"] == "config.dtype");
  // Settings torchtitan's TOML cannot say, given beside it: the emitter's reasons.
  for (const json& extra : {json{{"zero", 1}}, json{{"loss", "chunked:4"}},
                            json{{"attention", "eager"}}, json{{"param_dtype", "bf16"}}}) {
    json c = extra;
    c["dp"] = 8;
    const json e = err(c);
    INFO(e.dump());
    CHECK(e["field"] == "torchtitan_toml");
    CHECK(e["message"].get<std::string>().rfind(
              "torchtitan_toml: with the request's other keys this is not a run torchtitan "
              "9dec370 runs: ",
              0) == 0);
  }
  // plan chooses the checkpointing the TOML's [activation_checkpoint] would fix, and says so.
  const json p = run({{"command", "plan"},
                      {"preset", "llama-3.1-8b"},
                      {"config", {{"dp", 8}, {"gpu", "h100-80gb"}}},
                      {"torchtitan_toml", toml}});
  CHECK(p["found"] == true);
  CHECK(p["warnings"].dump().find("[activation_checkpoint] is not used") != std::string::npos);
  // advise chooses the layout the TOML fixes.
  CHECK(refuse({{"command", "advise"},
                {"preset", "llama-3.1-8b"},
                {"config", {{"gpu", "h100-80gb"}}},
                {"advise", {{"num_gpus", 8}, {"global_batch", 16}}},
                {"torchtitan_toml", toml}})["field"] == "torchtitan_toml");
}
