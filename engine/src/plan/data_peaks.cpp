// The data's answer on a GPU (data.hpp): the longest row that fits for each row count the
// micro-batches have (fit's search), every micro-batch judged against it, and the worst and the
// median micro-batch estimated in full.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "actmem/core/checked.hpp"
#include "actmem/device/device.hpp"
#include "actmem/plan/data.hpp"
#include "actmem/plan/planner.hpp"
#include "plan/fit_search.hpp"

namespace actmem {

namespace {

Error data_error(const std::string& field, const std::string& message) {
  return make_error("invalid_value", field, field + ": " + message);
}

// The layouts and kernels whose micro-batches the engine can tell apart by shape alone.
std::optional<Error> check_layout(const TrainConfig& c, const DataSpec& d) {
  if (c.par.pp > 1)
    return data_error("config.pp",
                      std::to_string(c.par.pp) +
                          " stages: a pipeline holds several micro-batches in flight, of "
                          "different lengths, and the engine walks one shape per step "
                          "(Megatron-LM needs --variable-seq-lengths for them); allowed with "
                          "data: pp 1");
  if (d.batching != Batching::kPadded && c.attention != Attention::kFlash)
    return data_error("config.attention",
                      std::string(kBatchingNames[static_cast<int>(d.batching)]) +
                          " puts several sequences in one row, which only flash-attention's "
                          "varlen kernel keeps apart; allowed: flash (or batching padded)");
  if (d.pad_to_multiple_of == 0)
    return data_error("data.pad_to_multiple_of", "0; allowed: at least 1");
  return std::nullopt;
}

// The totals of the lengths as the micro-batches hold them (truncation already applied).
std::optional<Error> count_data(const DataSpec& d, const std::vector<DataBatch>& batches,
                                DataAnswer* a) {
  Checked ck;
  a->sequences = d.lengths.size();
  for (std::uint64_t x : d.lengths) {
    a->longest = std::max(a->longest, x);
    a->tokens = ck.add(a->tokens, x, "data.lengths");
  }
  a->micro_batches = batches.size();
  a->steps = batches.back().step + 1;
  std::vector<std::uint64_t> shape;
  shape.reserve(batches.size());
  std::uint64_t padded = 0;
  std::vector<std::uint64_t> per_rank;  // the current step's micro-batches on each rank
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const DataBatch& b = batches[i];
    if (i == 0 || batches[i - 1].step != b.step) per_rank.assign(per_rank.size(), 0);
    if (b.rank >= per_rank.size()) per_rank.resize(b.rank + 1, 0);
    a->micro_batches_per_step = std::max(a->micro_batches_per_step, ++per_rank[b.rank]);
    shape.push_back(ck.mul(b.rows, b.seq, "data.lengths"));
    padded = ck.add(padded, shape.back(), "data.lengths");
  }
  a->padding_tokens = padded - a->tokens;
  auto [lo, hi] = std::minmax_element(shape.begin(), shape.end());
  a->shape_tokens_min = *lo, a->shape_tokens_max = *hi;
  std::nth_element(shape.begin(), shape.begin() + shape.size() / 2, shape.end());
  a->shape_tokens_median = shape[shape.size() / 2];
  if (ck.overflowed()) return data_error(ck.field(), "the tokens' sum passes 2^64");
  return std::nullopt;
}

// One micro-batch's shape estimated: its tensor peak and device figure.
Result<DataShape> shape_of(const ModelSpec& m, const TrainConfig& norm, const GpuSpec& gpu,
                           const DataBatch& b) {
  TrainConfig t = norm;
  t.micro_batch = b.rows, t.seq = b.seq;
  auto s = make_setup(m, t);
  if (!s.ok())
    return data_error("data.lengths", "micro-batch of " + std::to_string(b.rows) + " x " +
                                          std::to_string(b.seq) + " tokens: " + s.error().message);
  Evaluation ev;
  if (auto err = evaluate(s.value(), s.value().config.recompute, &ev)) return *err;
  auto dev = device_memory(s.value(), &gpu, nullptr, false);
  if (!dev.ok()) return dev.error();
  DataShape out;
  out.batch = b;
  out.peak_bytes = ev.worst_stage().peak_bytes;
  out.device_bytes = dev.value().total_bytes;
  out.fits = dev.value().fits;
  return out;
}

// The chance that a step of g sequences drawn from a uniform shuffle of n holds at least one of
// the `over` sequences past the limit: 1 - C(n - over, g) / C(n, g).
double shuffled_share(std::uint64_t n, std::uint64_t over, std::uint64_t g) {
  if (over == 0) return 0;
  if (g > n - over) return 1;
  double none = 1;
  for (std::uint64_t i = 0; i < g && none > 0; ++i)
    none *= static_cast<double>(n - over - i) / static_cast<double>(n - i);
  return 1 - none;
}

class DataSearch {
 public:
  DataSearch(const ModelSpec& m, const TrainConfig& norm, const GpuSpec& gpu, Bytes budget,
             DataAnswer* a)
      : m_(m), norm_(norm), gpu_(gpu), budget_(budget), a_(*a) {}

  // The longest row (a multiple of the data's seq_multiple) that fits with `rows` rows.
  DataLimit limit(std::uint64_t rows) {
    const std::uint64_t q = a_.seq_multiple;
    std::uint64_t hi = kMaxFitSeq / q;
    if (m_.pos == PosEncoding::kLearned) hi = std::min(hi, m_.max_positions / q);
    TrainConfig t = norm_;
    t.micro_batch = rows;
    const std::uint64_t k = largest_fitting(
        m_, t, gpu_, budget_, hi, [q](TrainConfig& c, std::uint64_t n) { c.seq = n * q; },
        &a_.probes, &a_.device_probes);
    return DataLimit{rows, k * q, k == hi && k > 0};
  }

  std::uint64_t limit_of(std::uint64_t rows) const {
    for (const DataLimit& l : a_.limits)
      if (l.rows == rows) return l.seq;
    return 0;
  }

  // Every micro-batch against its row count's limit; steps with one past it.
  void judge(const std::vector<DataBatch>& batches) {
    std::uint64_t last_over_step = ~std::uint64_t{0};
    for (const DataBatch& b : batches) {
      if (b.seq <= limit_of(b.rows)) continue;
      ++a_.over_micro_batches;
      if (b.step != last_over_step) ++a_.over_steps, last_over_step = b.step;
    }
  }

  // The worst micro-batch: the longest row of each row count, estimated, the highest tensor peak
  // taken (the peak grows with the row; the allocator's reserved memory need not: in
  // tests/plan/test_data.cpp a shorter row reserves 0.5 GB more than the longest).
  std::optional<Error> worst(const std::vector<DataBatch>& batches) {
    std::vector<const DataBatch*> longest;
    for (const DataBatch& b : batches) {
      auto it = std::find_if(longest.begin(), longest.end(),
                             [&](const DataBatch* x) { return x->rows == b.rows; });
      if (it == longest.end())
        longest.push_back(&b);
      else if (b.seq > (*it)->seq)
        *it = &b;
    }
    bool first = true;
    for (const DataBatch* b : longest) {
      auto s = shape_of(m_, norm_, gpu_, *b);
      if (!s.ok()) return s.error();
      if (first || s.value().peak_bytes > a_.worst.peak_bytes) a_.worst = s.value();
      first = false;
    }
    return std::nullopt;
  }

  std::optional<Error> median(const std::vector<DataBatch>& batches) {
    std::vector<std::size_t> idx(batches.size());
    std::iota(idx.begin(), idx.end(), 0);
    auto tokens = [&](std::size_t i) { return batches[i].rows * batches[i].seq; };
    std::nth_element(idx.begin(), idx.begin() + idx.size() / 2, idx.end(),
                     [&](std::size_t x, std::size_t y) {
                       return tokens(x) != tokens(y) ? tokens(x) < tokens(y) : x < y;
                     });
    auto s = shape_of(m_, norm_, gpu_, batches[idx[idx.size() / 2]]);
    if (!s.ok()) return s.error();
    a_.median = s.value();
    return std::nullopt;
  }

 private:
  const ModelSpec& m_;
  const TrainConfig& norm_;
  const GpuSpec& gpu_;
  Bytes budget_;
  DataAnswer& a_;
};

// A verl budget whose partition of this data keeps every micro-batch within the limit: the
// limit scaled down by the overshoot the configured budget's partition showed (its largest part
// over the budget), then by each try's own overshoot, at most four tries, each checked by
// partitioning the data with it. Not proven the largest: the partition is not monotone in the
// budget.
void fitting_budget(const DataSpec& d, const TrainConfig& norm, const std::vector<DataBatch>& bs,
                    DataAnswer* a) {
  const std::uint64_t limit = a->limits.empty() ? 0 : a->limits.front().seq;
  auto largest = [](const std::vector<DataBatch>& v) {
    std::uint64_t w = 0;
    for (const DataBatch& b : v) w = std::max(w, b.seq);
    return w;
  };
  auto scaled = [](std::uint64_t x, std::uint64_t num, std::uint64_t den) {
    return static_cast<std::uint64_t>(static_cast<double>(x) * static_cast<double>(num) /
                                      static_cast<double>(den));
  };
  std::uint64_t worst = largest(bs);
  std::uint64_t budget =
      std::min(limit, scaled(limit, d.max_tokens, std::max(worst, d.max_tokens)));
  DataSpec t = d;
  for (int tries = 0; tries < 4 && budget > 0; ++tries) {
    t.max_tokens = budget;
    auto next = data_batches(t, norm);
    if (!next.ok()) return;  // below the longest sequence, or a rank short of sequences
    worst = largest(next.value());
    if (worst <= limit) {
      a->fitting_max_tokens = budget;
      return;
    }
    budget = std::min(budget - 1, scaled(budget, limit, worst));
  }
}

}  // namespace

Result<DataAnswer> data_peaks(const ModelSpec& m, const TrainConfig& c, const GpuSpec& gpu,
                              const DataSpec& in) {
  if (auto err = check_layout(c, in)) return *err;
  // The lengths cut once (the tokenizer's max_length); every pass below reads them as cut.
  DataAnswer a;
  const DataSpec d = data_truncated(in, &a.truncated);
  auto base = make_setup(m, c);  // the config as given, before any shape is asked
  if (!base.ok()) return base.error();
  const TrainConfig& norm = base.value().config;
  if (auto err = check_layout(norm, d)) return *err;
  auto batches = data_batches(d, norm);
  if (!batches.ok()) return batches.error();
  const std::vector<DataBatch>& bs = batches.value();
  a.batching = d.batching;
  a.seq_multiple = data_row_multiple(d, norm);
  if (auto err = count_data(d, bs, &a)) return *err;
  a.capacity = device_capacity(gpu, nullptr);
  const Bytes overhead = device_overhead_bytes(base.value(), &gpu);
  const Bytes budget = a.capacity > overhead ? a.capacity - overhead : 0;
  DataSearch search(m, norm, gpu, budget, &a);
  std::set<std::uint64_t> rows;
  for (const DataBatch& b : bs) rows.insert(b.rows);
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) a.limits.push_back(search.limit(*it));
  search.judge(bs);
  if (auto err = search.worst(bs)) return *err;
  if (auto err = search.median(bs)) return *err;
  if (d.batching == Batching::kPadded) {
    // Sequences whose padded length alone passes the full micro-batch's limit.
    const std::uint64_t lim = search.limit_of(norm.micro_batch);
    std::uint64_t over = 0;
    for (std::uint64_t x : d.lengths) over += ceil_div(x, a.seq_multiple) * a.seq_multiple > lim;
    if (rows.count(norm.micro_batch))
      a.shuffled_step_share = shuffled_share(
          a.sequences, over, norm.micro_batch * default_micro_batches(norm) * norm.par.dp);
  }
  if (d.batching == Batching::kTokenBudget) fitting_budget(d, norm, bs, &a);
  if (a.truncated)
    a.notes.push_back(std::to_string(a.truncated) + " sequences cut to config.seq " +
                      std::to_string(in.truncate_to) + " tokens (the tokenizer's max_length)");
  if (a.seq_multiple > 1)
    a.notes.push_back("each micro-batch's row is padded to a multiple of " +
                      std::to_string(a.seq_multiple) +
                      " tokens (pad_to_multiple_of, and cp x tp with sequence parallelism)");
  return a;
}

}  // namespace actmem
