// Peaks that depend on the data (issue 37): a list of sequence lengths cut into micro-batches the
// way a framework's collator or dynamic batching cuts them, each micro-batch's shape asked of the
// engine, and the answer for the run: the worst micro-batch's peak, how many micro-batches and
// steps pass the GPU, and the longest micro-batch that fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/config/gpu.hpp"
#include "actmem/core/error.hpp"
#include "actmem/model/model.hpp"

namespace actmem {

// Lengths one request may list: 2^23 (8.4 million sequences; a JSONL of 100,000 lengths is the
// issue's benchmark). Bounds the batching's work and memory (docs/reliability.md).
constexpr std::uint64_t kMaxDataSequences = std::uint64_t{1} << 23;
// A sequence's tokens: fit's sequence bound (kMaxFitSeq).
constexpr std::uint64_t kMaxDataLength = std::uint64_t{1} << 30;
// verl's partition merges states of up to k parts for each of a rank's n sequences: its work
// grows as n x k per rank and step. One mini-batch may pair at most 2^24 sequence-part slots and
// the data 2^28 in all (about 2 s natively at the bound; a real mini-batch of 1,024 sequences in
// 64 micro-batches is 2^16; docs/reliability.md).
constexpr std::uint64_t kMaxPartitionSlots = std::uint64_t{1} << 24;
constexpr std::uint64_t kMaxPartitionSlotsTotal = std::uint64_t{1} << 28;

// How sequences become micro-batches.
//  kPadded: micro_batch sequences in the sampler's order, padded to the longest of them
//    (transformers' DataCollatorWithPadding, padding="longest"); shape (count, longest).
//  kPaddingFree: the same groups flattened into one row without padding (transformers'
//    DataCollatorWithFlattening, TRL's padding_free; flash-attention's varlen kernel keeps the
//    sequences apart); shape (1, sum of lengths).
//  kTokenBudget: verl's dynamic batch size (use_dynamic_bsz with ppo_max_token_len_per_gpu,
//    verl/utils/seqlen_balancing.py rearrange_micro_batches at volcengine/verl b178a3c): an
//    iteration's sequences dealt to the data-parallel ranks in contiguous chunks (DataProto.chunk),
//    each rank's chunk split into mini-batches (one optimizer step each), each mini-batch into
//    k = min(n, ceil(tokens / max_tokens)) micro-batches (the ranks' largest k: all_reduce MAX)
//    by Karmarkar-Karp's largest differencing over verl's workloads 24576 len + len^2, padding
//    removed; shape (1, sum of lengths). A micro-batch may hold more than max_tokens: the method
//    balances k workloads, it does not cap the tokens. verl's balance_batch (on by default)
//    reorders an iteration across ranks before this; the lengths are taken in the order given.
enum class Batching : std::uint8_t { kPadded, kPaddingFree, kTokenBudget };
// Their names in requests and answers, in enum order.
inline constexpr const char* kBatchingNames[] = {"padded", "padding_free", "token_budget"};

struct DataSpec {
  std::vector<std::uint64_t> lengths;  // tokens per sequence, in the sampler's order
  Batching batching = Batching::kPadded;
  std::uint64_t pad_to_multiple_of = 1;  // each micro-batch's row rounded up to a multiple
  std::uint64_t max_tokens = 0;          // kTokenBudget: the budget per micro-batch
  // kTokenBudget only (the other two take micro_batch sequences per micro-batch): sequences per
  // optimizer step over every data-parallel rank (verl's ppo_mini_batch_size x rollout.n; 0:
  // micro_batch x micro_batches x dp), and per iteration (train_batch_size x rollout.n; 0: one
  // step), a multiple of it.
  std::uint64_t step_sequences = 0;
  std::uint64_t iteration_sequences = 0;
  // Sequences longer are cut to it (the tokenizer's max_length); 0: none is cut.
  std::uint64_t truncate_to = 0;
};

// One micro-batch: where it runs and its shape (rows x seq tokens, padding included).
struct DataBatch {
  std::uint64_t step = 0, rank = 0;  // the optimizer step and the data-parallel rank
  std::uint64_t first = 0;      // its first sequence's index in the lengths (kPadded, kPaddingFree)
  std::uint64_t sequences = 0;  // sequences it holds
  std::uint64_t tokens = 0;     // their tokens, no padding
  std::uint64_t rows = 0, seq = 0;  // the shape the engine is asked
};

// The micro-batches of the data, step by step and rank by rank. Errors name the data field.
Result<std::vector<DataBatch>> data_batches(const DataSpec& d, const TrainConfig& c);

// The multiple every micro-batch's row is padded to: pad_to_multiple_of and the layout's
// sequence step (seq_step, sharding.hpp).
std::uint64_t data_row_multiple(const DataSpec& d, const TrainConfig& c);

// The data with its lengths cut to truncate_to (then 0), counting the sequences cut.
DataSpec data_truncated(const DataSpec& d, std::uint64_t* truncated);

// verl's partition of one rank's lengths into k micro-batches (Karmarkar-Karp, largest
// differencing, with Python's heapq and its tie-breaking, so the sums are the ones verl gets):
// each part's indices into `lengths`, in the order verl lists them.
std::vector<std::vector<std::uint64_t>> largest_differencing(
    const std::vector<std::uint64_t>& lengths, std::uint64_t k);

// One shape's answer: the engine's estimate for micro_batch = rows, seq = seq.
struct DataShape {
  DataBatch batch;         // the first micro-batch of this shape
  Bytes peak_bytes = 0;    // the simulated tensor peak (worst stage)
  Bytes device_bytes = 0;  // reserved memory at the peak plus the fixed costs
  bool fits = false;
};

// The longest row that fits, for one row count.
struct DataLimit {
  std::uint64_t rows = 0;
  std::uint64_t seq = 0;  // 0: not even the shortest fits
  bool at_limit = false;  // the search's bound was reached: longer may fit
};

struct DataAnswer {
  Batching batching = Batching::kPadded;
  std::uint64_t sequences = 0, tokens = 0, longest = 0, truncated = 0;
  std::uint64_t micro_batches = 0, steps = 0;
  std::uint64_t micro_batches_per_step = 0;  // the most any step has (per rank)
  std::uint64_t seq_multiple = 1;            // rows are padded to a multiple of this
  // Each micro-batch's padded tokens (rows x seq): the smallest, the median, the largest.
  std::uint64_t shape_tokens_min = 0, shape_tokens_median = 0, shape_tokens_max = 0;
  Bytes padding_tokens = 0;       // padded tokens less real tokens over the whole data
  DataShape worst, median;        // the micro-batch with the highest tensor peak; the median one
  std::vector<DataLimit> limits;  // per row count the data's micro-batches have
  std::uint64_t over_micro_batches = 0;  // micro-batches that do not fit
  std::uint64_t over_steps = 0;          // steps with at least one
  // kPadded: the chance that a step of a uniformly shuffled order holds a sequence longer than
  // the limit (hypergeometric: 1 - C(n-k, g) / C(n, g)); negative where not answered.
  double shuffled_step_share = -1;
  // kTokenBudget: the largest max_tokens whose partition of this data fits every micro-batch
  // (searched downward from the limit; 0 if none does), and whether the configured one does.
  std::uint64_t fitting_max_tokens = 0;
  Bytes capacity = 0;
  std::uint64_t probes = 0, device_probes = 0;
  std::vector<std::string> notes;
};

// The data's answer on the GPU. The limits assume, as fit does, that the device figure grows
// with the sequence; tests check it against every micro-batch evaluated apart.
Result<DataAnswer> data_peaks(const ModelSpec& m, const TrainConfig& c, const GpuSpec& gpu,
                              const DataSpec& d);

}  // namespace actmem
