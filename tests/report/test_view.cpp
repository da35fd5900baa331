// The page's view answer (command "view"): every number it carries is the engine's own answer to
// the same configuration (estimate, timeline, planner, fit, sweep), its suggestions fit when
// applied, and its step series stays bounded whatever the number of micro-batches.
#include "helpers.hpp"

using namespace actmem::test;

namespace {

json view(json request) {
  request["command"] = "view";
  return run(request);
}

// The 405B pipeline of the page's speed goal (issue 11): tp 8 + SP, pp 16, vpp 2, uneven split.
json pipeline_405b(std::uint64_t micro_batches) {
  return json{{"preset", "llama-3.1-405b"},
              {"config",
               {{"gpu", "h100-80gb"},
                {"seq", 8192},
                {"tp", 8},
                {"sp", true},
                {"pp", 16},
                {"vpp", 2},
                {"micro_batches", micro_batches},
                {"layer_split", {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7}},
                {"dp", 8},
                {"zero", 1},
                {"attention", "flash"},
                {"recompute", "selective"}}}};
}

// Llama 3.1 70B on 64 H100s (tp 8 + SP, pp 4, dp 2), with extra config keys.
json llama_70b(json extra) {
  json config = {{"gpu", "h100-80gb"},  {"seq", 8192}, {"tp", 8},
                 {"sp", true},          {"pp", 4},     {"dp", 2},
                 {"attention", "flash"}};
  config.update(extra);
  return json{{"preset", "llama-3.1-70b"}, {"config", config}};
}

// The answer to the same configuration with a suggestion's change applied.
json applied(json request, const json& change) {
  for (const auto& [k, v] : change.items()) request["config"][k] = v;
  return run(request);
}

}  // namespace

TEST_CASE("view: the verdict, bar and estimate are the estimate answer's own numbers", "[view]") {
  const json req = llama_70b({{"recompute", "selective"}});
  const json est = run(req);
  const json v = view(req);
  CHECK(v["estimate"] == est);
  CHECK(u(v["verdict"]["peak_bytes"]) == u(est["peak_bytes"]));
  CHECK(v["verdict"]["fits"] == est["fits"]);
  CHECK(v["verdict"]["headroom_bytes"] == est["headroom_bytes"]);
  CHECK(u(v["verdict"]["gpus"]) == 8 * 4 * 2);
  // The tensor bar's parts are the peak's lines and add up to it (one answer, issue 10).
  std::uint64_t sum = 0;
  for (const auto& s : v["tensor_bar"]["segments"]) sum += u(s["bytes"]);
  CHECK(sum == u(est["peak_bytes"]));
  CHECK(u(v["tensor_bar"]["total_bytes"]) == u(est["peak_bytes"]));
  // The device bar's: allocated, reserved beyond it, each fixed cost; they add up to the total
  // that decides fits (issue 14).
  sum = 0;
  for (const auto& s : v["bar"]["segments"]) sum += u(s["bytes"]);
  CHECK(sum == u(est["device"]["total_bytes"]));
  CHECK(u(v["bar"]["total_bytes"]) == u(est["device"]["total_bytes"]));
  CHECK(u(v["verdict"]["total_bytes"]) == u(est["device"]["total_bytes"]));
  CHECK(u(v["bar"]["capacity_bytes"]) == u(est["device"]["capacity_bytes"]));
  CHECK(v["bar"]["segments"][0]["id"] == "allocated");
  CHECK(u(v["bar"]["segments"][0]["bytes"]) == u(est["device"]["allocated_peak_bytes"]));
  // Policies and profiles: each row is the estimate of that variant.
  for (const auto& row : v["policies"]) {
    json r = req;
    r["config"]["recompute"] = row["policy"];
    CHECK(u(row["peak_bytes"]) == u(run(r)["peak_bytes"]));
  }
  for (const auto& row : v["profiles"]) {
    json r = req;
    r["config"]["profile"] = row["profile"];
    const json e = run(r);
    CHECK(u(row["peak_bytes"]) == u(e["peak_bytes"]));
    CHECK(u(row["per_layer_bytes"]) == u(e["per_layer"]["activation_bytes"]));
  }
  // The grid is the sweep over its own axes, with the configured cell marked.
  json sw = req;
  sw["command"] = "sweep";
  sw["sweep"] = {{"micro_batches", v["grid"]["micro_batches"]}, {"seqs", v["grid"]["seqs"]}};
  // The grid's axes replace the configured micro-batch and sequence (sweep refuses them).
  sw["config"].erase("seq");
  sw["config"].erase("micro_batch");
  CHECK(run(sw)["peak_bytes"] == v["grid"]["peak_bytes"]);
  const auto cur = v["grid"]["current"];
  CHECK(u(v["grid"]["micro_batches"][u(cur[0])]) == 1);
  CHECK(u(v["grid"]["seqs"][u(cur[1])]) == 8192);
  CHECK(v["grid"]["peak_bytes"][u(cur[0])][u(cur[1])] == est["peak_bytes"]);
}

TEST_CASE("view: the step series holds the stage's peak and stays bounded at 4,096 micro-batches",
          "[view]") {
  for (std::uint64_t m : {64u, 4096u}) {
    const json req = pipeline_405b(m);
    const json v = view(req);
    const json& s = v["timeline"]["series"][0];
    CHECK(u(s["stage"]) == u(v["estimate"]["peak"]["stage"]));
    // One op per chunk forward and backward per micro-batch (2 chunks), plus the optimizer step.
    CHECK(u(s["events"]) == 2 * 2 * m + 1);
    CHECK(s["points"]["index"].size() <= 600);
    std::uint64_t top = 0;
    for (const auto& x : s["points"]["live_bytes"]) top = std::max(top, u(x));
    // The series' highest point is the simulated peak event (the peak adds the fragmentation
    // allowance, 0 here).
    CHECK(top == u(s["peak_bytes"]));
    CHECK(s["peak_words"] == v["verdict"]["peak_words"]);
    CHECK(v["timeline"]["series"].size() == 1);
  }
  json all = pipeline_405b(64);
  all["stages"] = "all";
  CHECK(view(all)["timeline"]["series"].size() == 16);
}

TEST_CASE("view: the peak in words names the event of the estimate's peak label", "[view]") {
  const json v = view(pipeline_405b(64));
  // "B mb0 c1 L70" (estimate's label) in words.
  CHECK(v["verdict"]["peak_at"] == "B mb0 c1 L70");
  CHECK(v["verdict"]["peak_words"] == "backward of layer 70, micro-batch 0, chunk 1");
  CHECK(v["layout"]["schedule"] == "interleaved");
  CHECK(v["layout"].contains("schedule_note"));
}

TEST_CASE(
    "view: its fit is the fit command's answer, where the estimate's verdict stands for the probe "
    "of the configuration's own size",
    "[view]") {
  // fit's device search probes the configuration's own micro-batch here (70B at 2 fits, 405B at 1
  // does not), and the view takes the estimate's verdict for it (device_verdict gives
  // device_memory's verdict: test_device_verdict.cpp); the fit command replays it. Every stage
  // replayed (device_stages "all") is not the stage fit replays, so there it is replayed again.
  json fits = llama_70b({{"recompute", "selective"}, {"micro_batch", 2}});
  json over = pipeline_405b(64);
  over["config"]["micro_batch"] = 1;
  json all = fits;
  all["config"]["device_stages"] = "all";
  for (json req : {fits, over, all}) {
    const json v = view(req);
    req["command"] = "fit";
    json f = run(req);
    REQUIRE(v.contains("fit"));
    CHECK(v["fit"] == f);
  }
  CHECK(view(fits)["verdict"]["fits"] == true);
  CHECK(view(over)["verdict"]["fits"] == false);
}

TEST_CASE("view: every suggested change makes the configuration fit when applied", "[view]") {
  const json cases[] = {
      // Does not fit: a smaller micro-batch, or the planner's policy, each fits alone.
      llama_70b({{"recompute", "none"}, {"micro_batch", 4}}),
      // 8B on one H100 cannot fit (static memory alone is 16 bytes per parameter): more GPUs.
      {{"preset", "llama-3.1-8b"},
       {"config", {{"gpu", "h100-80gb"}, {"seq", 4096}, {"attention", "flash"}}}},
      pipeline_405b(64),
  };
  for (const json& req : cases) {
    const json v = view(req);
    REQUIRE(v["verdict"]["fits"] == false);
    REQUIRE_FALSE(v["suggestions"].empty());
    for (const auto& s : v["suggestions"]) {
      INFO(s.dump());
      const json e = applied(req, s["change"]);
      CHECK(e["fits"] == true);
      CHECK(u(e["peak_bytes"]) == u(s["peak_bytes"]));
    }
  }
  // A configuration that fits gets none.
  json fits = cases[1];
  fits["config"]["dp"] = 8;
  fits["config"]["zero"] = 1;
  CHECK(view(fits)["suggestions"].empty());
}

TEST_CASE(
    "view of a worked example runs its config verbatim (hidden_dropout kept) "
    "(seed 000, Sec. 3, standard attention)",
    "[view]") {
  // presets/examples/seed000-standard-7b.json: attention dropout 0.1, hidden dropout 0.
  const json v = view(json{{"example", "seed000-standard-7b"}});
  const json est = run(json{{"preset", "llama-3.1-8b"},
                            {"config",
                             {{"micro_batch", 1},
                              {"seq", 4096},
                              {"dtype", "bf16"},
                              {"attention", "eager"},
                              {"attention_dropout", 0.1},
                              {"hidden_dropout", 0.0},
                              {"profile", "textbook"}}}});
  CHECK(v["estimate"] == est);
  const json& row = v["example"]["rows"][0];
  CHECK(row["quantity"] == "per_layer.activation_bytes");
  CHECK(u(row["engine_bytes"]) == 2231369728);  // the example file's expected_bytes
  CHECK(u(row["seed_formula_bytes"]) == 2197815296);
  CHECK(row["agrees"] == false);
  // Config keys in the request override the example's.
  const json over = view(json{{"example", "seed000-standard-7b"}, {"config", {{"seq", 2048}}}});
  CHECK(u(over["layout"]["seq"]) == 2048);
  const json bad = actmem::evaluate_json(json{{"example", "nope"}});
  CHECK(bad["error"]["field"] == "example");
}

TEST_CASE("view: the series' peak point, the grid's fits and each suggestion's GPU count",
          "[view]") {
  const json v =
      view(json{{"preset", "llama-3.1-8b"},
                {"config", {{"gpu", "h100-80gb"}, {"seq", 4096}, {"attention", "flash"}}}});
  const json& s = v["timeline"]["series"][0];
  CHECK(u(s["points"]["live_bytes"][u(s["peak_point"])]) == u(s["peak_bytes"]));
  const auto& g = v["grid"];
  for (std::size_t i = 0; i < g["peak_bytes"].size(); ++i)
    for (std::size_t j = 0; j < g["peak_bytes"][i].size(); ++j) {
      const std::int64_t p = g["peak_bytes"][i][j].get<std::int64_t>();
      CHECK(g["fits"][i][j].get<bool>() == (p >= 0 && static_cast<std::uint64_t>(p) <= 80 * kGiB));
    }
  // One GPU cannot hold 8B's static memory: the suggestion is 4 data-parallel GPUs with ZeRO-3.
  REQUIRE(v["suggestions"].size() == 1);
  CHECK(v["suggestions"][0]["kind"] == "more_gpus");
  CHECK(u(v["suggestions"][0]["gpus"]) == 4);
  CHECK(v["suggestions"][0]["change"] == json{{"dp", 4}, {"zero", 3}});
}

TEST_CASE(
    "view without its searches (searches: false): the full view less plan, fit and suggestions, "
    "which it names as pending") {
  for (json req : {llama_70b({{"recompute", "selective"}}), llama_70b({{"micro_batch", 4}}),
                   pipeline_405b(64)}) {
    json full = view(req);
    req["searches"] = false;
    json quick = view(req);
    REQUIRE(quick["pending"] == json({"plan", "fit", "suggestions"}));
    CHECK(quick["suggestions"] == json::array());
    CHECK_FALSE(quick.contains("plan"));
    CHECK_FALSE(quick.contains("fit"));
    // Everything else, the verdict and the device figure included, is the full view's.
    for (const char* key : {"plan", "fit", "suggestions"}) full.erase(key), quick.erase(key);
    quick.erase("pending");
    CHECK(quick == full);
  }
  // No GPU: the view runs no searches, so nothing is pending.
  json none = view({{"preset", "gpt2"}, {"config", {{"seq", 1024}}}, {"searches", false}});
  CHECK_FALSE(none.contains("pending"));
  json bad =
      actmem::evaluate_json(json{{"command", "view"}, {"preset", "gpt2"}, {"searches", "no"}});
  CHECK(bad["error"]["field"] == "searches");
  json other =
      actmem::evaluate_json(json{{"command", "estimate"}, {"preset", "gpt2"}, {"searches", false}});
  CHECK(other["error"]["field"] == "searches");
}
