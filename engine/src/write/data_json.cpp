// The data command's answer as JSON (docs/schema.md, "data"): the data's totals, the worst and
// the median micro-batch, the longest row that fits per row count, and how many micro-batches
// and steps pass the GPU.
#include "actmem/json_io.hpp"
#include "actmem/plan/data.hpp"

namespace actmem {

using nlohmann::json;

namespace {

json shape_json(const DataShape& s) {
  return json{{"step", s.batch.step},
              {"rank", s.batch.rank},
              {"first_sequence", s.batch.first},
              {"sequences", s.batch.sequences},
              {"tokens", s.batch.tokens},
              {"rows", s.batch.rows},
              {"seq", s.batch.seq},
              {"peak_bytes", s.peak_bytes},
              {"device_total_bytes", s.device_bytes},
              {"fits", s.fits}};
}

}  // namespace

json data_to_json(const DataAnswer& a) {
  json limits = json::array();
  for (const DataLimit& l : a.limits)
    limits.push_back({{"rows", l.rows}, {"max_seq", l.seq}, {"at_limit", l.at_limit}});
  json out = {{"ok", true},
              {"batching", kBatchingNames[static_cast<int>(a.batching)]},
              {"sequences", a.sequences},
              {"tokens", a.tokens},
              {"longest", a.longest},
              {"truncated", a.truncated},
              {"micro_batches", a.micro_batches},
              {"steps", a.steps},
              {"micro_batches_per_step", a.micro_batches_per_step},
              {"seq_multiple", a.seq_multiple},
              {"shape_tokens",
               {{"min", a.shape_tokens_min},
                {"median", a.shape_tokens_median},
                {"max", a.shape_tokens_max}}},
              {"padding_tokens", a.padding_tokens},
              {"worst", shape_json(a.worst)},
              {"median", shape_json(a.median)},
              {"limits", limits},
              {"over", {{"micro_batches", a.over_micro_batches}, {"steps", a.over_steps}}},
              {"capacity_bytes", a.capacity},
              {"probes", a.probes},
              {"device_probes", a.device_probes},
              {"notes", a.notes}};
  out["over"]["shuffled_step_share"] =
      a.shuffled_step_share < 0 ? json(nullptr) : json(a.shuffled_step_share);
  if (a.batching == Batching::kTokenBudget) out["fitting_max_tokens"] = a.fitting_max_tokens;
  return out;
}

}  // namespace actmem
