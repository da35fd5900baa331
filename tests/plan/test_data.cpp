// Peaks that depend on the data (data.hpp, issue 37): the micro-batches of each batching by hand,
// verl's partition equal to verl's own code (tests/data/verl_partitions.json, made by
// tests/reference/verl_partitions.py from volcengine/verl b178a3c), and the data answer against
// a brute-force evaluation of every micro-batch.
#include <algorithm>
#include <fstream>
#include <random>

#include <catch2/catch.hpp>

#include "actmem/api/api.hpp"
#include "actmem/device/device.hpp"
#include "actmem/plan/data.hpp"
#include "actmem/setup/setup.hpp"
#include "helpers.hpp"

using namespace actmem;
using nlohmann::json;

namespace {

struct Shape {
  std::uint64_t step, rank, rows, seq, sequences, tokens;
  bool operator==(const Shape& o) const {
    return step == o.step && rank == o.rank && rows == o.rows && seq == o.seq &&
           sequences == o.sequences && tokens == o.tokens;
  }
};

using Shapes = std::vector<Shape>;

Shapes shapes(const DataSpec& d, const TrainConfig& c) {
  auto bs = data_batches(d, c);
  INFO((bs.ok() ? std::string() : bs.error().message));
  REQUIRE(bs.ok());
  std::vector<Shape> out;
  for (const DataBatch& b : bs.value())
    out.push_back({b.step, b.rank, b.rows, b.seq, b.sequences, b.tokens});
  return out;
}

std::string message_of(const json& r) {
  return r.value("ok", true) ? std::string("ok") : r["error"]["message"].get<std::string>();
}

json data_request(const json& data, const json& config = json::object()) {
  json c = {{"micro_batch", 2},   {"attention", "flash"}, {"dp", 8},      {"zero", 3},
            {"micro_batches", 2}, {"recompute", "full"},  {"gpu", "l40s"}};
  for (auto it = config.begin(); it != config.end(); ++it) c[it.key()] = it.value();
  return {{"command", "data"}, {"preset", "qwen2.5-7b"}, {"config", c}, {"data", data}};
}

}  // namespace

TEST_CASE(
    "data padded: micro_batch sequences in order, padded to the longest (transformers "
    "DataCollatorWithPadding), dealt to dp ranks in turn (accelerate BatchSamplerShard)",
    "[data]") {
  TrainConfig c;
  c.micro_batch = 2, c.par.dp = 2, c.grad_accum = 1;
  DataSpec d;
  d.lengths = {100, 300, 50, 700, 20};
  // A step is dp x micro_batches = 2 micro-batches; the last one holds the fifth sequence alone.
  CHECK((shapes(d, c) ==
         Shapes{{0, 0, 2, 300, 2, 400}, {0, 1, 2, 700, 2, 750}, {1, 0, 1, 20, 1, 20}}));
  d.pad_to_multiple_of = 64;
  CHECK((shapes(d, c) ==
         Shapes{{0, 0, 2, 320, 2, 400}, {0, 1, 2, 704, 2, 750}, {1, 0, 1, 64, 1, 20}}));
  // Truncation to config.seq (the tokenizer's max_length).
  d.pad_to_multiple_of = 1, d.truncate_to = 256;
  CHECK((shapes(d, c) ==
         Shapes{{0, 0, 2, 256, 2, 356}, {0, 1, 2, 256, 2, 306}, {1, 0, 1, 20, 1, 20}}));
  // Context parallelism 2 and tp 2 with sequence parallelism: rows a multiple of 4.
  d.truncate_to = 0, c.par.cp = 2, c.par.tp = 2, c.par.sp = true;
  CHECK(shapes(d, c)[2].seq == 20);
  CHECK(shapes(d, c)[0].seq == 300);
  d.lengths = {101, 3};
  CHECK(shapes(d, c)[0].seq == 104);
}

TEST_CASE(
    "data padding_free: each group flattened into one row of its tokens (transformers "
    "DataCollatorWithFlattening)",
    "[data]") {
  TrainConfig c;
  c.micro_batch = 2, c.par.dp = 1, c.grad_accum = 2;
  DataSpec d;
  d.batching = Batching::kPaddingFree;
  d.lengths = {100, 300, 50, 700, 20};
  CHECK((shapes(d, c) ==
         Shapes{{0, 0, 1, 400, 2, 400}, {0, 0, 1, 750, 2, 750}, {1, 0, 1, 20, 1, 20}}));
}

TEST_CASE(
    "data token_budget: verl's partition equals verl b178a3c's karmarkar_karp on 48 cases "
    "(tests/data/verl_partitions.json)",
    "[data]") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) + "/tests/data/verl_partitions.json");
  REQUIRE(in.good());
  const json cases = json::parse(in)["cases"];
  REQUIRE(cases.size() == 48);
  for (const json& c : cases) {
    const auto lengths = c["lengths"].get<std::vector<std::uint64_t>>();
    const auto expected = c["partitions"].get<std::vector<std::vector<std::uint64_t>>>();
    INFO(c.dump().substr(0, 200));
    CHECK((largest_differencing(lengths, c["k"].get<std::uint64_t>()) == expected));
  }
}

TEST_CASE(
    "data token_budget: k = min(n, ceil(tokens / max_tokens)) per rank, the ranks' largest "
    "(verl rearrange_micro_batches, all_reduce MAX), iterations chunked across ranks",
    "[data]") {
  TrainConfig c;
  c.par.dp = 2;
  DataSpec d;
  d.batching = Batching::kTokenBudget;
  d.max_tokens = 8192;
  d.step_sequences = 4;
  // Rank 0 holds 8000 + 4000 tokens: k = 2; rank 1 holds 200: k = 1, raised to 2.
  d.lengths = {8000, 4000, 100, 100};
  CHECK((shapes(d, c) == Shapes{{0, 0, 1, 8000, 1, 8000},
                                {0, 0, 1, 4000, 1, 4000},
                                {0, 1, 1, 100, 1, 100},
                                {0, 1, 1, 100, 1, 100}}));
  // One micro-batch may pass the budget: k = ceil(9000 / 8192) = 2 parts of 3 sequences whose
  // workloads balance, not their tokens.
  c.par.dp = 1;
  d.lengths = {3000, 3000, 3000}, d.step_sequences = 3;
  const auto s = shapes(d, c);
  REQUIRE(s.size() == 2);
  CHECK(s[0].tokens == 6000);
  CHECK(s[1].tokens == 3000);
  // An iteration of 8 on 2 ranks in steps of 4: rank 0 takes sequences 0-3 (steps 0 and 1 from
  // 0-1 and 2-3), rank 1 sequences 4-7 (dp_actor.py: data.split(ppo_mini_batch_size)).
  c.par.dp = 2;
  d.max_tokens = 1000;
  d.lengths = {10, 20, 30, 40, 50, 60, 70, 80};
  d.iteration_sequences = 8;
  d.step_sequences = 4;
  CHECK((shapes(d, c) == Shapes{{0, 0, 1, 30, 2, 30},
                                {0, 1, 1, 110, 2, 110},
                                {1, 0, 1, 70, 2, 70},
                                {1, 1, 1, 150, 2, 150}}));
}

TEST_CASE(
    "data: the answer equals a brute-force evaluation of every micro-batch (padded, "
    "padding_free, token_budget)",
    "[data]") {
  auto m = model_preset("qwen2.5-7b", nullptr);
  auto gpu = gpu_preset("a100-40gb");
  REQUIRE(m.ok());
  REQUIRE(gpu.ok());
  std::mt19937_64 rng(37);
  std::vector<std::uint64_t> lengths(96);
  for (auto& x : lengths)
    x = rng() % 4 == 0 ? 4096 + rng() % 12000 : 32 + rng() % 4000;  // a long tail
  TrainConfig c;
  c.micro_batch = 2, c.par.dp = 8, c.par.zero = 3, c.grad_accum = 2;
  c.attention = Attention::kFlash;
  c.recompute.kind = RecomputeKind::kFull;
  for (Batching b : {Batching::kPadded, Batching::kPaddingFree, Batching::kTokenBudget}) {
    DataSpec d;
    d.lengths = lengths;
    d.batching = b;
    d.pad_to_multiple_of = 8;
    if (b == Batching::kTokenBudget) d.max_tokens = 16384, d.step_sequences = 32;
    INFO(kBatchingNames[static_cast<int>(b)]);
    auto a = data_peaks(m.value(), c, gpu.value(), d);
    INFO((a.ok() ? std::string() : a.error().message));
    REQUIRE(a.ok());
    auto bs = data_batches(d, make_setup(m.value(), c).value().config);
    REQUIRE(bs.ok());
    std::uint64_t over = 0, over_steps = 0, last = ~std::uint64_t{0};
    Bytes worst = 0, worst_peak = 0;
    for (const DataBatch& x : bs.value()) {
      TrainConfig t = c;
      t.micro_batch = x.rows, t.seq = x.seq;
      auto s = make_setup(m.value(), t);
      REQUIRE(s.ok());
      auto dev = device_memory(s.value(), &gpu.value(), nullptr, false);
      REQUIRE(dev.ok());
      Evaluation ev;
      REQUIRE(!evaluate(s.value(), s.value().config.recompute, &ev));
      // The worst is the highest tensor peak (the first to reach it), with its device figure.
      if (ev.worst_stage().peak_bytes > worst_peak)
        worst = dev.value().total_bytes, worst_peak = ev.worst_stage().peak_bytes;
      if (!dev.value().fits) {
        ++over;
        if (x.step != last) ++over_steps, last = x.step;
      }
    }
    // The case is one where some micro-batches fit and some do not.
    CHECK(over > 0);
    CHECK(over < bs.value().size());
    CHECK(a.value().over_micro_batches == over);
    CHECK(a.value().over_steps == over_steps);
    CHECK(a.value().worst.device_bytes == worst);
    CHECK(a.value().worst.peak_bytes == worst_peak);
    CHECK_FALSE(a.value().worst.fits);
    CHECK(a.value().micro_batches == bs.value().size());
  }
}

TEST_CASE("data padded: the shuffled step share is 1 - C(n-k, g) / C(n, g) (hypergeometric)",
          "[data]") {
  // 64 sequences, one of 30,000 tokens past the limit, steps of 2 x 2 x 8 = 32:
  // 1 - C(63, 32) / C(64, 32) = 1 - 32/64.
  std::vector<std::uint64_t> l(64, 100);
  l[2] = 30000;
  const json r = evaluate_json(data_request({{"lengths", l}}));
  INFO(r.dump().substr(0, 400));
  REQUIRE(r.value("ok", false));
  CHECK(r["over"]["micro_batches"] == 1);
  CHECK(r["over"]["steps"] == 1);
  CHECK(r["over"]["shuffled_step_share"].get<double>() == Approx(0.5));
  CHECK(r["worst"]["seq"] == 30000);
  CHECK(r["worst"]["first_sequence"] == 2);
  CHECK(r["worst"]["fits"] == false);
  CHECK(r["worst"]["rank"] == 1);
  CHECK(r["sequences"] == 64);
  CHECK(r["tokens"] == 63 * 100 + 30000);
  CHECK(r["padding_tokens"] == 30000 - 100);
}

TEST_CASE("data: the lengths as a list, a histogram or a lengths file's text give one answer",
          "[data]") {
  const json list = evaluate_json(data_request({{"lengths", {512, 512, 1024, 4096}}}));
  REQUIRE(list.value("ok", false));
  const json hist = evaluate_json(data_request({{"histogram", {{512, 2}, {1024, 1}, {4096, 1}}}}));
  CHECK(hist == list);
  const json text = evaluate_json(data_request(
      {{"lengths", "512\r\n{\"length\": 512}\n\n  1024 \n{\"input_ids\": [1, 2, 3]}\n"}}));
  CHECK(text == evaluate_json(data_request({{"lengths", {512, 512, 1024, 3}}})));
  // RL samples: a prompt and its response, one sequence of both.
  const json rl = evaluate_json(
      data_request({{"lengths", "{\"prompt\": 300, \"response\": 212}\n512\n1024\n3\n"}}));
  CHECK(rl == text);
  const json array_text = evaluate_json(data_request({{"lengths", " [512, 512, 1024, 4096]"}}));
  CHECK(array_text == list);
}

TEST_CASE("data: bad input gets one line naming the field (docs/reliability.md)", "[data]") {
  auto msg = [](const json& data, const json& config = json::object()) {
    return message_of(evaluate_json(data_request(data, config)));
  };
  CHECK(msg({{"lengths", {100, -5}}}) == "data.lengths[1]: must be a positive integer, got -5");
  CHECK(msg({{"lengths", {0}}}) == "data.lengths[0]: must be a positive integer, got 0");
  CHECK(msg({{"lengths", {std::uint64_t{1} << 31}}}) ==
        "data.lengths[0]: 2147483648 tokens; allowed: 1 to 1073741824");
  CHECK(msg({{"lengths", "12\nabc\n"}}) ==
        "data.lengths line 2: 'abc' is not a length; allowed: a positive integer, or an object "
        "with \"length\", \"input_ids\" or \"prompt\" and \"response\"");
  CHECK(msg({{"lengths", "12\n{\"length\": 0}\n"}}) ==
        "data.lengths line 2.length: must be a positive integer, got 0");
  CHECK(msg({{"lengths", {1}}, {"histogram", {{1, 1}}}}) ==
        "data.lengths: give the lengths or a histogram, one of the two");
  CHECK(msg({{"histogram", {{512}}}}) ==
        "data.histogram[0]: must be a [length, count] pair, got an array");
  CHECK(msg({{"histogram", {{512, std::uint64_t{1} << 23}, {1, 1}}}}) ==
        "data.histogram: more than 8388608 sequences; allowed: at most that many "
        "(docs/reliability.md)");
  CHECK(msg({{"lengths", std::string((std::size_t{16} << 20) + 1, '1')}}) ==
        "data.lengths: 16777217 bytes of text; allowed: at most 16777216");
  CHECK(msg({{"lengths", {1}}, {"batching", "packed"}}) ==
        "data.batching: 'packed' is not allowed; allowed: padded, padding_free, token_budget");
  CHECK(msg({{"lengths", {1}}, {"max_tokens", 10}}) ==
        "data.max_tokens: read only with batching token_budget (the other batchings take "
        "config.micro_batch sequences per micro-batch)");
  CHECK(msg({{"lengths", {1}}, {"batching", "token_budget"}}) ==
        "data.max_tokens: batching token_budget needs the budget per micro-batch (verl's "
        "ppo_max_token_len_per_gpu)");
  CHECK(
      msg({{"lengths", {9000, 10, 10, 10}}, {"batching", "token_budget"}, {"max_tokens", 8192}}) ==
      "data.max_tokens: 8192 is less than the longest sequence (9000 tokens); verl asserts "
      "max_token_len >= the sequence length");
  CHECK(msg({{"lengths", {10, 10, 10}}, {"batching", "token_budget"}, {"max_tokens", 8192}}) ==
        "data.lengths: 3 sequences are not whole iterations of 32 (verl drops the last "
        "incomplete batch: dataloader drop_last); allowed: a multiple of iteration_sequences");
  CHECK(msg({{"lengths", {10, 10, 10}},
             {"batching", "token_budget"},
             {"max_tokens", 8192},
             {"step_sequences", 3}}) ==
        "data.step_sequences: 3 sequences do not divide among 8 data-parallel ranks; allowed: a "
        "multiple of dp");
  // verl's partition past the engine's bound: 2^13 sequences of one token each per rank (8 ranks),
  // each its own micro-batch (max_tokens 1), pair 2^26 sequence-micro-batch slots.
  CHECK(msg({{"histogram", {{1, 8 << 13}}},
             {"batching", "token_budget"},
             {"max_tokens", 1},
             {"step_sequences", 8 << 13}}) ==
        "data.max_tokens: 8192 sequences per rank in 8192 micro-batches (step 0): verl's "
        "partition would take more than the engine's bound of 2^24 sequence-micro-batch pairs "
        "per rank and step, 2^28 in all (docs/reliability.md); raise max_tokens or lower "
        "step_sequences");
  CHECK(msg({{"lengths", {10}}}, {{"pp", 2}}) ==
        "config.pp: 2 stages: a pipeline holds several micro-batches in flight, of different "
        "lengths, and the engine walks one shape per step (Megatron-LM needs "
        "--variable-seq-lengths for them); allowed with data: pp 1");
  CHECK(msg({{"lengths", {10}}, {"batching", "padding_free"}}, {{"attention", "eager"}}) ==
        "config.attention: padding_free puts several sequences in one row, which only "
        "flash-attention's varlen kernel keeps apart; allowed: flash (or batching padded)");
  CHECK(msg({{"lenghts", {10}}}).rfind("data.lenghts: unknown key (did you mean 'lengths'?)", 0) ==
        0);
  CHECK(message_of(evaluate_json(
            {{"command", "estimate"}, {"preset", "qwen2.5-7b"}, {"data", {{"lengths", {1}}}}})) ==
        "data: read only by the data command, not by estimate");
  json no_gpu = data_request({{"lengths", {1}}});
  no_gpu["config"].erase("gpu");
  CHECK(message_of(evaluate_json(no_gpu)).rfind("config.gpu: data needs a GPU preset", 0) == 0);
}
