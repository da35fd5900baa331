// The data's micro-batches (data.hpp): sequence lengths grouped as a collator pads or flattens
// them, or partitioned by verl's dynamic batch size, step by step and rank by rank.
#include <algorithm>
#include <numeric>

#include "actmem/config/sharding.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/plan/data.hpp"

namespace actmem {

namespace {

std::uint64_t round_up(std::uint64_t x, std::uint64_t q) {
  return ceil_div(x, q) * q;
}

Error data_error(const std::string& field, const std::string& message) {
  return make_error("invalid_value", field, field + ": " + message);
}

// transformers' Trainer with accelerate: batches of micro_batch sequences in the sampler's order,
// dealt to the data-parallel ranks in turn (BatchSamplerShard), micro_batches of them per rank
// making one step; the last batch may be short (drop_last false, the Trainer's default).
std::vector<DataBatch> grouped(const DataSpec& d, const TrainConfig& c, std::uint64_t q) {
  const std::uint64_t b = c.micro_batch, dp = c.par.dp;
  const std::uint64_t per_step = dp * default_micro_batches(c);
  std::vector<DataBatch> out;
  out.reserve(ceil_div(d.lengths.size(), b));
  for (std::uint64_t first = 0, j = 0; first < d.lengths.size(); first += b, ++j) {
    DataBatch mb;
    mb.step = j / per_step;
    mb.rank = j % dp;
    mb.first = first;
    mb.sequences = std::min<std::uint64_t>(b, d.lengths.size() - first);
    std::uint64_t longest = 0;
    for (std::uint64_t i = first; i < first + mb.sequences; ++i) {
      mb.tokens += d.lengths[i];
      longest = std::max(longest, d.lengths[i]);
    }
    if (d.batching == Batching::kPadded)
      mb.rows = mb.sequences, mb.seq = round_up(longest, q);
    else
      mb.rows = 1, mb.seq = round_up(mb.tokens, q);
    out.push_back(mb);
  }
  return out;
}

// One mini-batch of verl's dynamic batch size: each rank's share (`at[r]`, `len` sequences)
// partitioned into the same number of micro-batches, the ranks' largest (all_reduce MAX:
// same_micro_num_in_dp).
std::optional<Error> partition_step(const DataSpec& d, std::uint64_t q, std::uint64_t step,
                                    const std::vector<std::uint64_t>& at, std::uint64_t len,
                                    std::uint64_t* slots, std::vector<DataBatch>* out) {
  std::uint64_t k = 0;
  for (std::uint64_t first : at) {
    const std::uint64_t sum = std::accumulate(d.lengths.begin() + first,
                                              d.lengths.begin() + first + len, std::uint64_t{0});
    k = std::max(k, std::min(len, ceil_div(sum, d.max_tokens)));
  }
  // len <= 2^23 and k <= len: the products stay far inside 64 bits.
  *slots += at.size() * len * k;
  if (len * k > kMaxPartitionSlots || *slots > kMaxPartitionSlotsTotal)
    return data_error("data.max_tokens",
                      std::to_string(len) + " sequences per rank in " + std::to_string(k) +
                          " micro-batches (step " + std::to_string(step) +
                          "): verl's partition would take more than the engine's bound of 2^24 "
                          "sequence-micro-batch pairs per rank and step, 2^28 in all "
                          "(docs/reliability.md); raise max_tokens or lower step_sequences");
  std::vector<std::uint64_t> share;
  for (std::uint64_t rank = 0; rank < at.size(); ++rank) {
    share.assign(d.lengths.begin() + at[rank], d.lengths.begin() + at[rank] + len);
    const auto parts = largest_differencing(share, k);
    if (parts.size() != k)  // _check_and_sort_partitions asserts every partition holds one
      return data_error("data.max_tokens", "step " + std::to_string(step) + " rank " +
                                               std::to_string(rank) +
                                               ": verl's partition leaves a micro-batch empty");
    for (const auto& part : parts) {
      DataBatch mb;
      mb.step = step, mb.rank = rank;
      mb.first = at[rank] + part.front();
      mb.sequences = part.size();
      for (std::uint64_t i : part) mb.tokens += share[i];
      mb.rows = 1, mb.seq = round_up(mb.tokens, q);
      out->push_back(mb);
    }
  }
  return std::nullopt;
}

// verl's dynamic batch size: an iteration's sequences chunked across the ranks (DataProto.chunk),
// each rank's chunk split into mini-batches of step_sequences / dp (dp_actor.py update_policy:
// data.split(ppo_mini_batch_size)), each partitioned by partition_step.
Result<std::vector<DataBatch>> budgeted(const DataSpec& d, const TrainConfig& c, std::uint64_t q) {
  const std::uint64_t dp = c.par.dp;
  const std::uint64_t g =
      d.step_sequences ? d.step_sequences : c.micro_batch * default_micro_batches(c) * dp;
  const std::uint64_t it = d.iteration_sequences ? d.iteration_sequences : g;
  if (g % dp != 0)
    return data_error("data.step_sequences", std::to_string(g) + " sequences do not divide among " +
                                                 std::to_string(dp) +
                                                 " data-parallel ranks; allowed: a multiple of dp");
  if (it % g != 0)
    return data_error("data.iteration_sequences", std::to_string(it) +
                                                      " is not a multiple of step_sequences " +
                                                      std::to_string(g) +
                                                      " (verl: train_batch_size a multiple of "
                                                      "ppo_mini_batch_size)");
  const std::uint64_t n = d.lengths.size();
  if (n % it != 0)
    return data_error("data.lengths",
                      std::to_string(n) + " sequences are not whole iterations of " +
                          std::to_string(it) +
                          " (verl drops the last incomplete batch: "
                          "dataloader drop_last); allowed: a multiple of iteration_sequences");
  std::vector<DataBatch> out;
  std::uint64_t slots = 0;
  std::vector<std::uint64_t> at(dp);
  const std::uint64_t chunk = it / dp, mini = g / dp;
  for (std::uint64_t start = 0, step = 0; start < n; start += it)
    for (std::uint64_t m = 0; m < chunk; m += mini, ++step) {
      for (std::uint64_t r = 0; r < dp; ++r) at[r] = start + r * chunk + m;
      if (auto err = partition_step(d, q, step, at, mini, &slots, &out)) return *err;
    }
  return out;
}

}  // namespace

std::uint64_t data_row_multiple(const DataSpec& d, const TrainConfig& c) {
  return std::lcm(std::max<std::uint64_t>(1, d.pad_to_multiple_of), seq_step(c.par));
}

DataSpec data_truncated(const DataSpec& in, std::uint64_t* truncated) {
  DataSpec d = in;
  for (std::uint64_t& x : d.lengths)
    if (d.truncate_to && x > d.truncate_to) x = d.truncate_to, ++*truncated;
  d.truncate_to = 0;
  return d;
}

Result<std::vector<DataBatch>> data_batches(const DataSpec& d, const TrainConfig& c) {
  if (d.lengths.empty()) return data_error("data.lengths", "no sequence lengths given");
  if (d.truncate_to) {
    std::uint64_t truncated = 0;  // copied only when there is something to cut
    return data_batches(data_truncated(d, &truncated), c);
  }
  const std::uint64_t q = data_row_multiple(d, c);
  if (d.batching != Batching::kTokenBudget) return grouped(d, c, q);
  // rearrange_micro_batches asserts max_token_len >= the longest sequence.
  const std::uint64_t longest = *std::max_element(d.lengths.begin(), d.lengths.end());
  if (d.max_tokens < longest)
    return data_error("data.max_tokens",
                      std::to_string(d.max_tokens) + " is less than the longest sequence (" +
                          std::to_string(longest) +
                          " tokens); verl asserts max_token_len >= the sequence length");
  return budgeted(d, c, q);
}

}  // namespace actmem
