// Launch configurations (emit.hpp, read/megatron_args.cpp): Megatron-LM arguments written for a
// configuration and read back to the same estimate, the reader's refusals by name (arguments
// follow Megatron-LM main at d98e8a64, 2026-08-22), and the selective-checkpointing policy text.
#include <catch2/catch.hpp>

#include "actmem/frameworks/emit.hpp"
#include "helpers.hpp"

using namespace actmem;
using actmem::test::run;
using nlohmann::json;

namespace {

json emit_of(const std::string& preset, const json& config, const std::string& fmt) {
  return run({{"preset", preset}, {"config", config}, {"emit", fmt}});
}

json refuse(const json& req) {
  const json r = evaluate_json(req);
  INFO(r.dump());
  REQUIRE_FALSE(r.value("ok", true));
  return r["error"];
}

}  // namespace

TEST_CASE("Megatron-LM arguments read back to the same estimate, layout by layout", "[emit]") {
  struct Case {
    const char* preset;
    json config;
  };
  const Case cases[] = {
      {"llama-3.1-70b",
       {{"seq", 8192},
        {"tp", 8},
        {"sp", true},
        {"pp", 4},
        {"vpp", 5},
        {"dp", 2},
        {"zero", 1},
        {"micro_batches", 16},
        {"attention", "flash"},
        {"recompute", "every:2"}}},
      {"llama-3.1-8b",
       {{"seq", 4096},
        {"tp", 2},
        {"sp", true},
        {"cp", 2},
        {"dp", 4},
        {"zero", 3},
        {"micro_batch", 2},
        {"micro_batches", 3},
        {"attention", "eager"},
        {"recompute", "selective"}}},
      {"llama-3.1-8b",
       {{"seq", 2048},
        {"pp", 3},
        {"layer_split", {10, 11, 11}},
        {"dp", 2},
        {"zero", 2},
        {"micro_batches", 6},
        {"attention", "flash"},
        {"recompute", "layers:CCCKKKKKKKK"}}},
      {"gpt2",
       {{"seq", 1024},
        {"dtype", "fp32"},
        {"param_dtype", "fp32"},
        {"grad_dtype", "fp32"},
        {"attention", "eager"},
        {"recompute", "full"},
        {"dp", 3},
        {"micro_batches", 5}}},
      // TransformerEngine fp8 (--fp8-format hybrid, delayed scaling) with a 16-step history.
      {"llama-3.1-8b",
       {{"seq", 4096},
        {"tp", 2},
        {"sp", true},
        {"dp", 2},
        {"zero", 1},
        {"micro_batches", 2},
        {"attention", "flash"},
        {"float8", "delayed"},
        {"fp8_amax_history", 16}}},
      // Hybrid sharding: two distributed-optimizer instances over dp = 8.
      {"llama-3.1-8b",
       {{"seq", 4096},
        {"dp", 8},
        {"zero", 1},
        {"dp_replicate", 2},
        {"micro_batches", 2},
        {"attention", "flash"}}},
      {"mixtral-8x7b",
       {{"seq", 4096},
        {"tp", 2},
        {"sp", true},
        {"pp", 2},
        {"dp", 4},
        {"ep", 4},
        {"zero", 1},
        {"micro_batches", 8},
        {"attention", "flash"},
        {"grad_dtype", "fp32"}}},
  };
  for (const Case& c : cases) {
    INFO(c.preset << " " << c.config.dump());
    const std::string text = emit_of(c.preset, c.config, "megatron")["text"];
    json cfg = {{"gpu", "h100-80gb"}, {"dp", c.config.value("dp", 1)}};
    json with_gpu = c.config;
    with_gpu["gpu"] = "h100-80gb";
    const json direct = run({{"preset", c.preset}, {"config", with_gpu}, {"summary", true}});
    const json back =
        run({{"preset", c.preset}, {"config", cfg}, {"megatron_args", text}, {"summary", true}});
    CHECK(back["peak"] == direct["peak"]);
    CHECK(back["headroom_bytes"] == direct["headroom_bytes"]);
    // Written again from what was read: the same text.
    CHECK(run({{"preset", c.preset},
               {"config", {{"dp", cfg["dp"]}}},
               {"megatron_args", text},
               {"emit", "megatron"}})["text"] == text);
  }
}

TEST_CASE("Megatron-LM arguments: the recompute arguments of each policy (transformer_config.py)",
          "[emit]") {
  auto text = [](const json& cfg) {
    return emit_of("llama-3.1-8b", cfg, "megatron")["text"].get<std::string>();
  };
  CHECK(text({{"recompute", "none"}}).find("recompute") == std::string::npos);
  CHECK(text({{"recompute", "selective"}})
            .find("--recompute-granularity selective \\\n--recompute-modules core_attn") !=
        std::string::npos);
  CHECK(text({{"recompute", "full"}})
            .find("--recompute-granularity full \\\n--recompute-method uniform \\\n"
                  "--recompute-num-layers 1") != std::string::npos);
  CHECK(text({{"recompute", "layers:CCKK"}})
            .find("--recompute-method block \\\n"
                  "--recompute-num-layers 2") != std::string::npos);
  // What Megatron-LM cannot say is refused by name.
  CHECK(refuse({{"preset", "llama-3.1-8b"},
                {"config", {{"recompute", "layers:KSCR"}}},
                {"emit", "megatron"}})["field"] == "emit");
  CHECK(refuse({{"preset", "llama-3.1-8b"},
                {"config", {{"attention", "sdpa_math"}}},
                {"emit", "megatron"}})["field"] == "emit");
  CHECK(refuse({{"preset", "llama-3.1-8b"},
                {"config", {{"offload", true}}},
                {"emit", "megatron"}})["field"] == "emit");
  CHECK(refuse({{"preset", "llama-3.1-8b"}, {"emit", "torchtitan"}})["field"] == "emit");
  CHECK(refuse(
            {{"command", "timeline"}, {"preset", "llama-3.1-8b"}, {"emit", "megatron"}})["field"] ==
        "emit");
}

TEST_CASE(
    "Megatron-LM arguments: uneven stages, virtual stages, sharding and precision as Megatron-LM "
    "reads them",
    "[emit]") {
  auto cfg_of = [](const std::string& args, const json& config = json::object()) {
    // The estimate's own config echo: what the arguments were read as.
    json r = run({{"preset", "llama-3.1-8b"}, {"config", config}, {"megatron_args", args}});
    return r["config"];
  };
  // --decoder-first/last-pipeline-num-layers: the two ends, the middle stages split the rest.
  CHECK(cfg_of("--pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 7 "
               "--decoder-last-pipeline-num-layers 7")["layer_split"] == json({7, 9, 9, 7}));
  CHECK(cfg_of("--pipeline-model-parallel-size 3 --decoder-first-pipeline-num-layers 8")
            ["layer_split"] == json({8, 12, 12}));
  CHECK(cfg_of("--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 4 "
               "--global-batch-size 8")["vpp"] == 4);
  CHECK(cfg_of("--use-megatron-fsdp")["zero"] == 3);
  CHECK(cfg_of("--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads")["zero"] == 2);
  CHECK(cfg_of("--use-distributed-optimizer")["zero"] == 1);
  // Partial distributed optimizer (arguments.py --num-distributed-optimizer-instances): hybrid
  // sharding, and emitted back as given.
  CHECK(cfg_of("--use-distributed-optimizer --num-distributed-optimizer-instances 2",
               {{"dp", 8}})["dp_replicate"] == 2);
  CHECK(refuse({{"preset", "llama-3.1-8b"},
                {"config", {{"dp", 8}}},
                {"megatron_args", "--num-distributed-optimizer-instances 2"}})["field"] ==
        "megatron_args");
  CHECK(cfg_of("--fp16 --accumulate-allreduce-grads-in-fp32")["grad_dtype"] == "fp32");
  CHECK(cfg_of("--bf16")["param_dtype"] == "bf16");
  CHECK(cfg_of("")["dtype"] == "fp32");  // neither --bf16 nor --fp16: Megatron-LM trains in fp32
  CHECK(cfg_of("--recompute-activations")["recompute"] == "selective");
  CHECK(cfg_of("--recompute-granularity full --recompute-method uniform --recompute-num-layers 4")
            ["recompute"] == "every:4");
  CHECK(cfg_of("--attention-backend fused")["attention"] == "flash");
  CHECK(cfg_of("--attention-backend local")["attention"] == "eager");
  // The global batch over micro-batch x dp is the micro-batch count.
  CHECK(cfg_of("--micro-batch-size 2 --global-batch-size 64", {{"dp", 4}})["micro_batches"] == 8);
}

TEST_CASE("Megatron-LM arguments: refusals name the argument, unknown ones are reported",
          "[emit]") {
  auto err = [](const std::string& args, const json& config = json::object()) {
    return refuse({{"preset", "llama-3.1-8b"}, {"config", config}, {"megatron_args", args}});
  };
  CHECK(err("--num-layers 80")["message"] ==
        "megatron_args: --num-layers 80 describes another model: this one has "
        "num_hidden_layers=32");
  CHECK(err("--fp8-param-gather")["message"].get<std::string>().rfind(
            "megatron_args: --fp8-param-gather changes what the GPUs hold", 0) == 0);
  // TransformerEngine fp8 is read under the delayed recipe only, with the megatron profile.
  CHECK(err("--bf16 --fp8-format hybrid --fp8-recipe mxfp8")["message"].get<std::string>().find(
            "only TransformerEngine's delayed scaling") != std::string::npos);
  CHECK(err("--fp8-amax-history-len 16")["field"] == "megatron_args");
  CHECK(err("--recompute-granularity selective --recompute-modules mlp")["message"]
            .get<std::string>()
            .find("only core_attn") != std::string::npos);
  CHECK(err("--tensor-model-parallel-size $TP")["message"].get<std::string>().find(
            "a shell variable") != std::string::npos);
  CHECK(err("--seq-length 4096 --seq-length 8192")["message"].get<std::string>().find(
            "given twice") != std::string::npos);
  CHECK(err("--micro-batch-size 3 --global-batch-size 64")["field"] == "megatron_args");
  CHECK(err("--tensor-model-parallel-size 4", {{"tp", 2}})["field"] == "config.tp");
  CHECK(err("--expert-tensor-parallel-size 1 --tensor-model-parallel-size 2")["field"] ==
        "megatron_args");
  CHECK(err("4096")["message"].get<std::string>().find("a value without an argument") !=
        std::string::npos);
  CHECK(err("--seq-length")["message"] == "megatron_args: \"--seq-length\" needs a value");
  const json r = run({{"preset", "llama-3.1-8b"},
                      {"megatron_args",
                       "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
                       "  --lr 3e-4 --my-new-flag 3 # a comment\n  --bf16"}});
  bool reported = false;
  for (const auto& w : r["warnings"])
    reported =
        reported || w.get<std::string>().find("\"--my-new-flag\" is not read") != std::string::npos;
  CHECK(reported);
}

TEST_CASE("advise --emit megatron: every listed layout's arguments read back to its peak",
          "[emit]") {
  const json base = {{"gpu", "h100-80gb"}, {"seq", 4096}, {"attention", "flash"}};
  const json r = run({{"command", "advise"},
                      {"preset", "llama-3.1-8b"},
                      {"config", base},
                      {"emit", "megatron"},
                      {"advise", {{"num_gpus", "6:8"}, {"global_batch", 48}, {"limit", 4}}}});
  REQUIRE(r["layouts"].size() == 4);
  for (const json& l : r["layouts"]) {
    json c = {{"gpu", "h100-80gb"}, {"dp", l["dp"]}};
    const json e = run({{"preset", "llama-3.1-8b"},
                        {"config", c},
                        {"megatron_args", l["emit"]},
                        {"summary", true}});
    CHECK(e["peak"]["bytes"] == l["peak_bytes"]);
    CHECK(e["headroom_bytes"] == l["headroom_bytes"]);
  }
}

TEST_CASE("Selective-checkpointing policy text: the policy's letters per layer", "[emit]") {
  auto text = [](const std::string& policy) {
    return emit_of("llama-3.1-8b", {{"recompute", policy}}, "sac")["text"].get<std::string>();
  };
  CHECK(text("none").find("POLICY = 'K'") != std::string::npos);
  CHECK(text("selective").find("POLICY = 'S'") != std::string::npos);
  CHECK(text("full").find("POLICY = 'C'") != std::string::npos);
  CHECK(text("every:3").find("POLICY = 'CRR'") != std::string::npos);
  CHECK(text("layers:KKSSCRR").find("POLICY = 'KKSSCRR'") != std::string::npos);
  CHECK(refuse({{"preset", "llama-3.1-8b"},
                {"config", {{"recompute", "custom"}, {"custom_keep", {"attn.q"}}}},
                {"emit", "sac"}})["field"] == "emit");
}

TEST_CASE("pipeline_split: middle stages equal, the ends share the rest", "[emit]") {
  CHECK(pipeline_split(32, 4).empty());
  CHECK(pipeline_split(126, 8) == std::vector<std::uint64_t>{15, 16, 16, 16, 16, 16, 16, 15});
  CHECK(pipeline_split(126, 16) ==
        std::vector<std::uint64_t>{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7});
  CHECK(pipeline_split(10, 8) == std::vector<std::uint64_t>{2, 1, 1, 1, 1, 1, 1, 2});
  CHECK(pipeline_split(33, 2) == std::vector<std::uint64_t>{16, 17});
}

TEST_CASE("Megatron-LM arguments: Megatron-LM's own defaults for what a launch leaves out",
          "[emit]") {
  auto read = [](const std::string& preset, const std::string& args,
                 const json& config = json::object()) {
    return run({{"preset", preset}, {"config", config}, {"megatron_args", args}});
  };
  // Dropout 0.1 (transformer_config.py) whatever the model's config says (Llama: 0).
  const json r = read("llama-3.1-8b", "--bf16 --seq-length 4096");
  CHECK(r["config"]["attention_dropout"] == 0.1);
  CHECK(r["config"]["hidden_dropout"] == 0.1);
  // The layout a launch without parallel arguments runs: a config key saying otherwise is a
  // conflict, not an override.
  CHECK(refuse({{"preset", "llama-3.1-8b"},
                {"config", {{"pp", 2}}},
                {"megatron_args", "--bf16 --seq-length 4096"}})["field"] == "config.pp");
  CHECK(refuse({{"preset", "llama-3.1-8b"},
                {"config", {{"recompute", "full"}}},
                {"megatron_args", "--bf16"}})["field"] == "config.recompute");
  // An unknown argument without a value is a flag it does not read: reported, not refused.
  bool reported = false;
  const json flag = read("llama-3.1-8b", "--frobnicate --bf16");
  for (const auto& w : flag["warnings"])
    reported =
        reported || w.get<std::string>().find("\"--frobnicate\" is not read") != std::string::npos;
  CHECK(reported);
  // Without dense layers --ffn-hidden-size is the experts' width (moe_ffn_hidden_size's default).
  CHECK(read("mixtral-8x7b", "--ffn-hidden-size 14336 --num-experts 8")["ok"] == true);
  CHECK(refuse({{"preset", "mixtral-8x7b"},
                {"megatron_args", "--ffn-hidden-size 4096"}})["field"] == "megatron_args");
  // --sgd-momentum 0: plain SGD, no momentum buffer.
  CHECK(read("gpt2", "--optimizer sgd --sgd-momentum 0")["config"]["optimizer"] == "sgd");
  CHECK(read("gpt2", "--optimizer sgd")["config"]["optimizer"] == "sgd_momentum");
  // A middle stage left without a layer names the arguments.
  CHECK(refuse({{"preset", "llama-3.1-8b"},
                {"megatron_args",
                 "--pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 31 "
                 "--decoder-last-pipeline-num-layers 1"}})["message"]
            .get<std::string>()
            .rfind("megatron_args: --decoder-first/last-pipeline-num-layers leave no layer", 0) ==
        0);
  // The global batch without a dp is read at dp = 1, and said.
  bool dp_said = false;
  const json no_dp = read("gpt2", "--global-batch-size 8");
  for (const auto& w : no_dp["warnings"])
    dp_said = dp_said || w.get<std::string>().find("dp = 1") != std::string::npos;
  CHECK(dp_said);
}

TEST_CASE("Megatron-LM arguments: optimizers and schedules written only as Megatron-LM runs them",
          "[emit]") {
  for (const char* opt : {"sgd", "sgd_momentum"}) {
    const json cfg = {{"optimizer", opt}, {"dp", 2}};
    const std::string text = emit_of("llama-3.1-8b", cfg, "megatron")["text"];
    const json back = run({{"preset", "llama-3.1-8b"},
                           {"config", {{"dp", 2}}},
                           {"megatron_args", text},
                           {"summary", true}});
    const json direct = run({{"preset", "llama-3.1-8b"}, {"config", cfg}, {"summary", true}});
    CHECK(back["peak"] == direct["peak"]);
  }
  for (const json& cfg :
       {json{{"optimizer", "adam8bit"}}, json{{"optimizer", "adafactor"}},
        json{{"optimizer_dtype", "bf16"}, {"master_weights", false}},
        json{{"pp", 2}, {"schedule", "gpipe"}}, json{{"pp", 2}, {"schedule", "zb-h1"}},
        json{{"pp", 2}, {"micro_batches", 4}, {"schedule", "dualpipe"}}})
    CHECK(refuse({{"preset", "llama-3.1-8b"}, {"config", cfg}, {"emit", "megatron"}})["field"] ==
          "emit");
  // advise --emit sac lists no offload layout (a checkpointing policy cannot say it).
  const json a = run({{"command", "advise"},
                      {"preset", "gpt2"},
                      {"config", {{"gpu", "h100-80gb"}}},
                      {"emit", "sac"},
                      {"advise", {{"num_gpus", 8}, {"global_batch", 8}, {"limit", 3}}}});
  for (const json& l : a["layouts"]) CHECK(l["offload"] == false);
}
