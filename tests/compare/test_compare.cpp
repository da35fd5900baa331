// compare and its pickle reader against snapshot files in PyTorch's format
// (tests/data/snapshots/README.md: each read back by torch.cuda._memory_viz): the hand-worked
// sequences' known peaks, the real H200 step's memory_stats, and hostile bytes refused by name.
#include <fstream>
#include <sstream>
#include <string>

#include "actmem/compare/pickle.hpp"
#include "helpers.hpp"

using namespace actmem::test;

namespace {

constexpr std::uint64_t kMiB = 1048576;

std::string file(const std::string& name) {
  std::ifstream f(std::string(ACTMEM_SOURCE_DIR) + "/tests/data/snapshots/" + name,
                  std::ios::binary);
  REQUIRE(f.good());
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

json compare(const std::string& snapshot, json request = json::object()) {
  request["command"] = "compare";
  if (!request.contains("preset") && !request.contains("model")) request["preset"] = "gpt2";
  if (!request.contains("config")) request["config"] = {{"seq", 128}, {"gpu", "h100-80gb"}};
  return actmem::compare_json(request, snapshot);
}

// The H200 step's configuration (docs/validation.md 4.3).
json step_request() {
  return json{{"model",
               {{"model_type", "llama"},
                {"vocab_size", 32000},
                {"hidden_size", 2048},
                {"intermediate_size", 5632},
                {"num_hidden_layers", 4},
                {"num_attention_heads", 16},
                {"num_key_value_heads", 4},
                {"max_position_embeddings", 4096},
                {"rms_norm_eps", 1e-5},
                {"tie_word_embeddings", false}}},
              {"config",
               {{"micro_batch", 2},
                {"seq", 2048},
                {"dtype", "bf16"},
                {"param_dtype", "bf16"},
                {"grad_dtype", "bf16"},
                {"master_weights", false},
                {"optimizer_dtype", "bf16"},
                {"profile", "hf"},
                {"attention", "flash"},
                {"gpu", "h200-141gb"}}}};
}

}  // namespace

TEST_CASE("compare: the hand-worked trace (make_snapshots.py tiny) replays to its peaks") {
  const json r = compare(file("tiny-trace.pickle"));
  INFO(r.dump().substr(0, 400));
  REQUIRE(r["ok"] == true);
  const json& m = r["measured"];
  CHECK(m["source"] == "trace replay");
  CHECK(m["replay_exact"] == true);
  // 4 MiB before the trace + A 6 MiB + B 12 MiB; segments 20 + 12 MiB.
  CHECK(u(m["allocated_peak_bytes"]) == 22 * kMiB);
  CHECK(u(m["reserved_peak_bytes"]) == 32 * kMiB);
  // At snapshot time: 4 + 5 + 12 MiB allocated in the same 32 MiB.
  CHECK(u(m["allocated_at_snapshot_bytes"]) == 21 * kMiB);
  CHECK(u(m["reserved_at_snapshot_bytes"]) == 32 * kMiB);
  CHECK(u(m["trace_events"]) == 5);  // free_requested is not an allocator event
  // The peak is B's allocation, made at train.py:11; live then: B, A and the older block.
  CHECK(m["peak_frame"] == "forward (train.py:11)");
  const json& blocks = r["largest_blocks"];
  REQUIRE(blocks.size() == 3);
  CHECK(u(blocks[0]["bytes"]) == 12 * kMiB);
  CHECK(blocks[0]["frame"] == "forward (train.py:11)");
  CHECK(u(blocks[1]["bytes"]) == 6 * kMiB);
  CHECK(blocks[2]["frame"] == "(allocated before the trace began)");
  CHECK(u(r["explained_bytes"]) + u(r["unexplained_bytes"]) == 22 * kMiB);
  // The prediction is the estimate's device figure for the request (gpt2, s = 128).
  json est = json{{"preset", "gpt2"}, {"config", {{"seq", 128}, {"gpu", "h100-80gb"}}}};
  const json e = run(est);
  CHECK(r["predicted"]["allocated_peak_bytes"] == e["device"]["allocated_peak_bytes"]);
  CHECK(r["predicted"]["reserved_peak_bytes"] == e["device"]["reserved_peak_bytes"]);
  const double err = 100.0 *
                     (static_cast<double>(u(e["device"]["allocated_peak_bytes"])) - 22.0 * kMiB) /
                     (22.0 * kMiB);
  CHECK(r["error_pct"]["allocated"].get<double>() == Approx(err));
}

TEST_CASE(
    "compare: a trace on two streams replays with each stream's blocks apart (make_snapshots.py "
    "two_streams)") {
  const json r = compare(file("two-streams.pickle"));
  INFO(r.dump().substr(0, 400));
  REQUIRE(r["ok"] == true);
  const json& m = r["measured"];
  CHECK(m["source"] == "trace replay");
  // Every allocation at its recorded address: the side stream's requests get a segment of their
  // own and its cached block back, not the default stream's cached blocks (which one stream
  // would have chosen: A at SEG1 + 4 MiB, C in SEG1's remaining 10 MiB).
  CHECK(m["replay_exact"] == true);
  CHECK(u(m["allocated_peak_bytes"]) == 16 * kMiB);
  CHECK(u(m["reserved_peak_bytes"]) == 40 * kMiB);
}

TEST_CASE("compare: without a trace it reports the blocks when the snapshot was taken") {
  const json r = compare(file("no-trace.pickle"));
  REQUIRE(r["ok"] == true);
  CHECK(r["measured"]["source"] == "segments at snapshot time");
  CHECK(r["measured"]["trace"] == false);
  CHECK(u(r["measured"]["allocated_peak_bytes"]) == 21 * kMiB);
  CHECK(u(r["measured"]["reserved_peak_bytes"]) == 32 * kMiB);
  CHECK(r["notes"].size() >= 1);
}

TEST_CASE("compare: an expandable-segment trace is measured from its map events") {
  const json r = compare(file("expandable.pickle"));
  REQUIRE(r["ok"] == true);
  // Not replayable from segments: requests rounded to 512 B, reserved from segment_map events.
  CHECK(r["measured"]["replay_exact"] == false);
  CHECK(u(r["measured"]["allocated_peak_bytes"]) == 38 * kMiB);
  CHECK(u(r["measured"]["reserved_peak_bytes"]) == 40 * kMiB);
  CHECK(r["measured"]["allocator"] == "expandable_segments:True");
  bool noted = false;
  for (const json& n : r["notes"])
    noted = noted || n.get<std::string>().find("expandable_segments on") != std::string::npos;
  CHECK(noted);  // the prediction was asked without it
}

TEST_CASE(
    "compare: the H200 step (validation.md 4.3) - measured peaks equal memory_stats, the "
    "error is the prediction's") {
  const std::string snap = file("h200-llama-step2.pickle");
  const json r = compare(snap, step_request());
  REQUIRE(r["ok"] == true);
  const json& m = r["measured"];
  CHECK(m["replay_exact"] == true);
  CHECK(u(m["allocated_peak_bytes"]) == 5025073152u);
  CHECK(u(m["reserved_peak_bytes"]) == 5146411008u);
  CHECK(u(r["predicted"]["allocated_peak_bytes"]) == 5251594752u);
  CHECK(r["error_pct"]["reserved"].get<double>() == Approx(8.517).epsilon(0.001));
  // At the measured peak three 500 MiB fp32 loss buffers are live: records of that size exist.
  CHECK(u(r["largest_blocks"][0]["bytes"]) == 524288000u);
  CHECK(r["largest_blocks"][0]["record"].get<std::string>().find("loss.log_softmax_out") == 0);
  CHECK(u(r["unexplained_bytes"]) < u(r["explained_bytes"]) / 50);
  // With the run's memory_stats the measured peaks are its own.
  json req = step_request();
  req["stats"] = json::parse(file("h200-llama-step2.stats.json"));
  const json s = compare(snap, req);
  REQUIRE(s["ok"] == true);
  CHECK(s["measured"]["source"] == "memory_stats");
  CHECK(u(s["measured"]["reserved_peak_bytes"]) == 5146411008u);
}

TEST_CASE("compare: hostile or wrong files are refused naming the snapshot, never crash") {
  const std::string good = file("tiny-trace.pickle");
  const std::string cases[] = {
      "",                               // empty
      "not a pickle",                   // text
      std::string("\x80\x04\x95", 3),   // truncated frame
      good.substr(0, good.size() / 2),  // cut in half
      std::string("\x80\x04"
                  "cos\nsystem\n.",
                  14),                        // GLOBAL: objects are refused
      std::string("\x80\x04]\x94h\x05.", 7),  // a memo index never set
      std::string("\x80\x04K\x05.", 5),       // a pickle of 5, not a snapshot
      std::string("\x80\x04\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09.", 14),  // 72-bit int
  };
  for (const std::string& c : cases) {
    const json r = compare(c);
    INFO(json(c).dump(-1, ' ', true, json::error_handler_t::replace));
    CHECK(r["ok"] == false);
    CHECK(r["error"]["field"] == "snapshot");
  }
  // A request with a snapshot for another command, and compare without one.
  json other = {{"preset", "gpt2"}, {"command", "estimate"}};
  CHECK(actmem::compare_json(other, good)["ok"] == false);
  const json no = actmem::evaluate_json({{"command", "compare"}, {"preset", "gpt2"}});
  CHECK(no["ok"] == false);
  CHECK(no["error"]["field"] == "command");
  // stats must be memory_stats().
  json bad = {{"stats", {{"foo", 1}}}};
  CHECK(compare(good, bad)["error"]["field"] == "stats");
  bad = {{"stats", {{"allocated_bytes.all.peak", -1}}}};
  CHECK(compare(good, bad)["error"]["field"] == "stats.allocated_bytes.all.peak");
}

TEST_CASE("pickle: the container subset, memo sharing, and a nesting that would recurse") {
  // {'a': [1, -2, 3.5, 'x', True, None], 'b': (b'\x00',)}: pickle.dumps(..., protocol=4) of
  // CPython 3.11, byte for byte.
  const std::string p(
      "\x80\x04\x95\x2d\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x01\x61\x94\x5d\x94\x28"
      "\x4b\x01\x4a\xfe\xff\xff\xff\x47\x40\x0c\x00\x00\x00\x00\x00\x00\x8c\x01\x78\x94\x88"
      "\x4e\x65\x8c\x01\x62\x94\x43\x01\x00\x94\x85\x94\x75\x2e",
      56);
  auto r = actmem::Pickle::parse(p);
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  const actmem::Pickle& pk = r.value();
  const auto a = pk.get(pk.root(), "a");
  REQUIRE(pk.is(a, actmem::Pickle::Kind::kList));
  const auto& items = pk.at(a).items;
  REQUIRE(items.size() == 6);
  CHECK(pk.int_or(items[0], 0) == 1);
  CHECK(pk.int_or(items[1], 0) == -2);
  CHECK(pk.at(items[2]).f == 3.5);
  CHECK(pk.str(items[3]) == "x");
  CHECK(pk.int_or(items[4], 0) == 1);
  CHECK(items[5] == actmem::Pickle::kNone);
  // 2**64 - 1 as CPython writes it (LONG1, nine bytes): PyTorch 2.11's line of a frame it does
  // not know (snapshot-fsdp8-sac-compile-rootheld-all.pickle.gz). Kept as a big int, never read
  // as a number.
  auto big = actmem::Pickle::parse(
      std::string("\x80\x04\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00.", 14));
  REQUIRE(big.ok());
  CHECK(big.value().is(big.value().root(), actmem::Pickle::Kind::kBigInt));
  CHECK(big.value().int_or(big.value().root(), 7) == 7);
  // 100,000 one-tuples nested in each other: held flat, freed without recursion.
  std::string deep("\x80\x04K\x01", 4);
  deep += std::string(100000, '\x85');
  deep += ".";
  CHECK(actmem::Pickle::parse(deep).ok());
}
