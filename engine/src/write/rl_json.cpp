// The rl command's answer as JSON (docs/schema.md, "The rl answer"): each phase's lines and
// total, the peak phase and the verdict, vLLM's KV cache in blocks, and OpenRLHF's pools.
#include "actmem/json_io.hpp"
#include "actmem/plan/rl.hpp"

namespace actmem {

using nlohmann::json;

json rl_to_json(const RlAnswer& a) {
  json phases = json::array();
  for (const RlPhase& p : a.phases) {
    json lines = json::array();
    for (const RlLine& l : p.lines)
      lines.push_back({{"process", l.process},
                       {"what", l.what},
                       {"bytes", l.bytes},
                       {"basis", l.basis},
                       {"source", l.source}});
    json phase{{"id", p.id},
               {"label", p.label},
               {"total_bytes", p.total_bytes},
               {"headroom_bytes",
                static_cast<std::int64_t>(a.capacity) - static_cast<std::int64_t>(p.total_bytes)},
               {"lines", lines}};
    if (!p.pool.empty()) phase["pool"] = p.pool;  // OpenRLHF's separate pools
    phases.push_back(phase);
  }
  json options = json::array();
  for (const RlRolloutOption& o : a.rollout_options) {
    json opt{{"tp", o.tp},
             {"fits", o.fits},
             {"starts", o.starts},
             {"peak_bytes", o.peak_bytes},
             {"peak_phase", o.peak_phase},
             {"kv_tokens", o.kv_tokens},
             {"concurrency", o.concurrency}};
    if (o.num_engines) opt["num_engines"] = o.num_engines;  // separate pools: vLLM's GPUs held
    options.push_back(opt);
  }
  // As the estimate answer lists them (estimate_json.cpp): each value the JSON the reader read.
  json defaults = json::array();
  for (const FrameworkDefault& d : a.framework_defaults)
    defaults.push_back(
        {{"key", d.key}, {"value", json::parse(d.value, nullptr, false)}, {"source", d.source}});
  json fixes = json::array();
  for (const RlFix& f : a.fixes) {
    json fix{{"change", f.change}, {"peak_bytes", f.peak_bytes}, {"phase", f.phase}};
    if (f.gpus) fix["gpus"] = f.gpus;  // separate pools: the run's GPUs with the change
    fixes.push_back(fix);
  }
  json rollout = {{"engine", a.engine}, {"steps_per_generation", a.steps_per_generation}};
  if (!a.mode.empty()) rollout["mode"] = a.mode;
  json j{{"ok", true},
         {"framework", a.framework},
         {"algorithm", a.algorithm},
         {"rollout", rollout},
         {"phases", phases},
         {"peak", {{"phase", a.phases[a.peak_phase].id}, {"bytes", a.peak_bytes}}},
         {"capacity_bytes", a.capacity},
         {"fits", a.fits},
         {"vllm",
          {{"on_these_gpus", a.vllm_here},
           {"requested_bytes", a.vllm_requested},
           {"weights_bytes", a.vllm_weights},
           {"profile_peak_bytes", a.vllm_profile_peak},
           {"kv_cache_bytes", a.kv_cache_bytes},
           {"kv_bytes_per_token", a.kv_bytes_per_token},
           {"kv_blocks", a.kv_blocks},
           {"kv_tokens", a.kv_tokens},
           {"max_model_len", a.max_model_len},
           {"max_num_seqs", a.max_num_seqs},
           {"concurrency", a.kv_concurrency},
           {"starts", a.vllm_starts},
           {"free_at_start_bytes", a.free_at_start}}},
         {"framework_defaults", defaults},
         {"fixes", fixes},
         {"rollout_options", options},
         {"notes", a.notes}};
  // SGLang's request map and free list (its pool is kv_cache_bytes; requested_bytes all of it).
  if (a.engine == "sglang") j["vllm"]["sglang_maps_bytes"] = a.sglang_maps;
  if (a.vllm_ep > 1) j["vllm"]["expert_parallel_size"] = a.vllm_ep;
  if (a.kv_groups) {  // vLLM's hybrid manager: kv_blocks is each of its kv_group_size pools'
    j["vllm"]["kv_groups"] = a.kv_groups;
    j["vllm"]["kv_group_size"] = a.kv_group_size;
  }
  // OpenRLHF's separate pools: each pool's GPUs and peak; the step's peak is on one of them.
  if (!a.pools.empty()) {
    json pools = json::array();
    for (const RlPool& p : a.pools)
      pools.push_back({{"name", p.name},
                       {"gpus", p.gpus},
                       {"peak", {{"phase", p.peak_phase}, {"bytes", p.peak_bytes}}},
                       {"fits", p.fits}});
    j["pools"] = pools;
    j["gpus"] = rl_gpus(a);
    j["peak"]["pool"] = a.phases[a.peak_phase].pool;
  }
  if (a.vllm_max_lora_rank) {
    j["vllm"]["max_lora_rank"] = a.vllm_max_lora_rank;
    j["vllm"]["lora_slots_bytes"] = a.vllm_lora_slots;
  }
  return j;
}

}  // namespace actmem
