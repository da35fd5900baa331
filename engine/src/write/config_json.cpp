// The training config in the answers (config_json.hpp): one table of config keys, each with the
// function that writes its value, read by the estimate's "config", the view's layout and the
// advisor's layouts, so a key is named and valued in one place.
#include "write/config_json.hpp"

#include <string>
#include <vector>

#include "actmem/names/names.hpp"

namespace actmem::detail {

namespace {

using Write = void (*)(JsonWriter& w, const char* key, const TrainConfig& c);

struct ConfigKey {
  const char* key;
  Write write;
  bool layout;  // a layout key (write_layout)
};

template <typename T>
void array(JsonWriter& w, const char* key, const std::vector<T>& v) {
  w.key(key);
  w.begin_array();
  for (const auto& x : v) w.value(x);
  w.end_array();
}

// The keys in the order the answer lists them (the writer sorts each object as nlohmann does).
const ConfigKey kConfigKeys[] = {{"accumulate_unsharded",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.accumulate_unsharded);
                                  },
                                  false},
                                 {"async_tp",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.async_tp);
                                  },
                                  false},
                                 {"attention",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, attention_name(c.attention));
                                  },
                                  false},
                                 {"attention_dropout",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.attention_dropout);
                                  },
                                  false},
                                 {"cp",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.par.cp);
                                  },
                                  true},
                                 {"ddp_bucket_view",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.ddp_bucket_view);
                                  },
                                  false},
                                 // An op-level policy's ids are in its recompute name (op:ID,...),
                                 // not in custom_keep.
                                 {"custom_keep",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    array(w, k,
                                          c.recompute.ops ? std::vector<std::string>{}
                                                          : c.recompute.custom_keep);
                                  },
                                  false},
                                 {"dp",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.par.dp);
                                  },
                                  true},
                                 {"dp_replicate",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.par.dp_replicate);
                                  },
                                  false},
                                 {"dtype",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, dtype_name(c.act_dtype));
                                  },
                                  false},
                                 {"ep",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.par.ep);
                                  },
                                  true},
                                 {"float8",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, float8_name(c.float8));
                                  },
                                  false},
                                 {"float8_all_gather",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.float8_all_gather);
                                  },
                                  false},
                                 {"fp8_amax_history",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.fp8_amax_history);
                                  },
                                  false},
                                 {"fragmentation_pct",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.fragmentation_pct);
                                  },
                                  false},
                                 {"framework",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, framework_name(c.framework));
                                  },
                                  false},
                                 // The FSDP that runs, where a framework names one (verl: its
                                 // strategy; torchtitan: fully_shard); absent elsewhere.
                                 {"fsdp_version",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    if (c.framework == Framework::kTorchtitan)
                                      w.field(k, std::uint64_t{2});
                                    else if (c.framework == Framework::kVerl)
                                      w.field(k, c.fsdp_version);
                                  },
                                  false},
                                 {"grad_accum",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.grad_accum);
                                  },
                                  false},
                                 {"grad_bucket_bytes",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.grad_bucket);
                                  },
                                  false},
                                 {"grad_dtype",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, dtype_name(c.grad_dtype));
                                  },
                                  false},
                                 {"hidden_dropout",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.hidden_dropout);
                                  },
                                  false},
                                 {"layer_split",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    array(w, k, c.layer_split);
                                  },
                                  true},
                                 {"lora_dropout",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.lora.dropout);
                                  },
                                  false},
                                 {"lora_dtype",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, dtype_name(c.lora.dtype));
                                  },
                                  false},
                                 {"lora_rank",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.lora.rank);
                                  },
                                  false},
                                 {"lora_targets",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    array(w, k, c.lora.targets);
                                  },
                                  false},
                                 {"loss",
                                  [](JsonWriter& w, const char* k,
                                     const TrainConfig& c) { w.field(k, loss_name(c.loss)); },
                                  false},
                                 {"master_weights",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.master_weights);
                                  },
                                  false},
                                 {"micro_batch",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.micro_batch);
                                  },
                                  true},
                                 {"micro_batches",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.grad_accum);
                                  },
                                  true},
                                 {"moe_imbalance",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.moe_imbalance);
                                  },
                                  false},
                                 {"mtp",
                                  [](JsonWriter& w, const char* k,
                                     const TrainConfig& c) { w.field(k, c.mtp); },
                                  false},
                                 {"offload",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.recompute.offload);
                                  },
                                  true},
                                 {"optimizer",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, optimizer_name(c.optimizer));
                                  },
                                  false},
                                 {"optimizer_dtype",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, dtype_name(c.optimizer_dtype));
                                  },
                                  false},
                                 {"compile",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.compile);
                                  },
                                  false},
                                 {"activation_memory_budget",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.activation_memory_budget);
                                  },
                                  false},
                                 {"optimizer_impl",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    // AdamW's implementation as run (auto resolved); other
                                    // optimizers do not read it.
                                    w.field(k, optimizer_impl_name(c.optimizer == Optimizer::kAdamW
                                                                       ? effective_optimizer_impl(c)
                                                                       : c.optimizer_impl));
                                  },
                                  false},
                                 {"optimizer_offload",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.optimizer_offload);
                                  },
                                  false},
                                 {"param_dtype",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, dtype_name(c.param_dtype));
                                  },
                                  false},
                                 {"pp",
                                  [](JsonWriter& w, const char* k,
                                     const TrainConfig& c) { w.field(k, c.par.pp); },
                                  true},
                                 {"profile",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, profile_name(c.profile));
                                  },
                                  false},
                                 {"qlora",
                                  [](JsonWriter& w, const char* k,
                                     const TrainConfig& c) { w.field(k, c.lora.qlora); },
                                  false},
                                 {"recompute",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, recompute_name(c.recompute));
                                  },
                                  true},
                                 {"reshard_after_forward",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.reshard_after_forward);
                                  },
                                  false},
                                 {"response_len",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, c.response_len);
                                  },
                                  false},
                                 // 1F1B with vpp > 1 is Megatron-LM's interleaved schedule: the
                                 // schedule that runs.
                                 {"schedule",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, schedule_name(effective_schedule(c)));
                                  },
                                  true},
                                 {"seq",
                                  [](JsonWriter& w, const char* k,
                                     const TrainConfig& c) { w.field(k, c.seq); },
                                  true},
                                 {"shard_group",
                                  [](JsonWriter& w, const char* k, const TrainConfig& c) {
                                    w.field(k, shard_group_name(c.par.shard_group));
                                  },
                                  false},
                                 {"sp",
                                  [](JsonWriter& w, const char* k,
                                     const TrainConfig& c) { w.field(k, c.par.sp); },
                                  true},
                                 {"tp",
                                  [](JsonWriter& w, const char* k,
                                     const TrainConfig& c) { w.field(k, c.par.tp); },
                                  true},
                                 {"vpp",
                                  [](JsonWriter& w, const char* k,
                                     const TrainConfig& c) { w.field(k, c.par.vpp); },
                                  true},
                                 {"zero",
                                  [](JsonWriter& w, const char* k,
                                     const TrainConfig& c) { w.field(k, c.par.zero); },
                                  true}};

// Whether an advised layout leaves the key at its default out (see LayoutFor).
bool left_out(const std::string& key, const TrainConfig& c, LayoutFor use) {
  if (use == LayoutFor::kView) return key == "layer_split";
  if (key == "offload") return !c.recompute.offload;
  if (key == "layer_split") return c.layer_split.empty();
  return false;
}

}  // namespace

void write_config(JsonWriter& w, const TrainConfig& c) {
  w.begin_object();
  for (const ConfigKey& k : kConfigKeys) k.write(w, k.key, c);
  w.end_object();
}

void write_layout(JsonWriter& w, const TrainConfig& c, LayoutFor use) {
  for (const ConfigKey& k : kConfigKeys)
    if (k.layout && !left_out(k.key, c, use)) k.write(w, k.key, c);
}

nlohmann::json layout_config(const TrainConfig& c) {
  JsonWriter w;
  w.begin_object();
  write_layout(w, c, LayoutFor::kAdvise);
  w.end_object();
  return nlohmann::json::parse(w.out, nullptr, false);
}

}  // namespace actmem::detail
