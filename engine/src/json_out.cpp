// Writes an estimate as JSON: the schema the CLI's --json, the page and the tests all read.
#include "actmem/json_io.hpp"

namespace actmem {

using nlohmann::json;

namespace {

json record_json(const TensorRecord& r) {
  json dims = json::array();
  for (const auto& d : r.shape) dims.push_back(d.value);
  return json{{"name", r.id},
              {"shape", shape_symbol(r.shape)},
              {"dims", dims},
              {"dtype", dtype_name(r.dtype)},
              {"bytes", r.bytes},
              {"scales", r.quadratic ? "quadratic" : "linear"},
              {"attention_core", r.attn_core},
              {"backward", r.backward},
              {"why", r.why},
              {"source", r.source}};
}

json records_json(const std::vector<TensorRecord>& v) {
  json a = json::array();
  for (const auto& r : v) a.push_back(record_json(r));
  return a;
}

json stage_json(const Stage& s, const Recompute& r) {
  return json{{"stage", s.index},
              {"layers", s.layers},
              {"in_flight_chunks", s.in_flight},
              {"kept_layer_slots", s.kept_layer_slots},
              {"activations",
               {{"layers_bytes", s.act.layers_bytes},
                {"input_layer_bytes", s.act.input_layer_bytes},
                {"output_layer_bytes", s.act.output_layer_bytes},
                {"recompute_working_bytes", s.act.recompute_working_bytes},
                {"host_bytes", s.act.host_bytes},
                {"total_bytes", s.act.total_bytes}}},
              {"static",
               {{"params", s.stat.params},
                {"params_bytes", s.stat.params_bytes},
                {"grads_bytes", s.stat.grads_bytes},
                {"master_bytes", s.stat.master_bytes},
                {"optimizer_bytes", s.stat.optimizer_bytes},
                {"total_bytes", s.stat.total_bytes}}},
              {"total_bytes", s.total_bytes},
              {"peak_bytes", s.peak_bytes},
              {"peak_at", s.peak_at},
              {"chunk_layers", s.chunk_layers},
              {"recompute_policy", policy_name(s.choices, r)}};
}

}  // namespace

// What the most loaded GPU holds at its peak, line by line: the lines add up to `bytes`, the
// peak_bytes that decides whether it fits (the one answer every client shows).
json peak_json(const Stage& w) {
  return json{{"stage", w.index},
              {"at", w.peak_at},
              {"params_bytes", w.stat.params_bytes},
              {"grads_bytes", w.stat.grads_bytes},
              {"master_bytes", w.stat.master_bytes},
              {"optimizer_bytes", w.stat.optimizer_bytes},
              {"static_bytes", w.stat.total_bytes},
              {"kept_activations_bytes", w.peak_activations},
              {"recomputed_bytes", w.peak_recompute},
              {"transient_bytes", w.peak_transients},
              {"fragmentation_bytes", w.peak_fragmentation},
              {"bytes", w.peak_bytes}};
}

json error_to_json(const Error& e) {
  return json{{"ok", false},
              {"error", {{"code", e.code}, {"field", e.field}, {"message", e.message}}}};
}

json estimate_to_json(const Estimate& e) {
  const ModelSpec& m = e.model;
  const TrainConfig& c = e.config;
  const Stage& w = e.worst();
  json stages = json::array();
  for (const auto& s : e.stages) stages.push_back(stage_json(s, c.recompute));
  json explain = json::array();
  for (const auto& x : e.explain)
    explain.push_back(json{{"id", x.id},
                           {"title", x.title},
                           {"formula", x.formula},
                           {"substituted", x.substituted},
                           {"bytes", x.bytes},
                           {"source", x.source}});
  json out = {
      {"ok", true},
      {"profile", profile_name(c.profile)},
      {"model",
       {{"id", m.id},
        {"name", m.name},
        {"source", m.source},
        {"layers", m.layers},
        {"hidden_size", m.hidden},
        {"num_attention_heads", m.kinds[0].heads},
        {"num_key_value_heads", m.kinds[0].kv_heads},
        {"head_dim", m.kinds[0].head_dim},
        {"intermediate_size", m.kinds[0].ffn_hidden},
        {"vocab_size", m.vocab},
        {"ffn_type", ffn_name(m.kinds[0].ffn)},
        {"norm_type", norm_name(m.norm)},
        {"position_embedding", pos_name(m.pos)},
        {"tie_word_embeddings", m.tied_embeddings},
        {"num_local_experts", m.kinds[0].moe.experts},
        {"num_experts_per_tok", m.kinds[0].moe.top_k},
        {"params", e.model_params},
        {"published_params", m.published_params}}},
      {"config",
       {{"micro_batch", c.micro_batch},
        {"seq", c.seq},
        {"grad_accum", c.grad_accum},
        {"dtype", dtype_name(c.act_dtype)},
        {"param_dtype", dtype_name(c.param_dtype)},
        {"grad_dtype", dtype_name(c.grad_dtype)},
        {"master_weights", c.master_weights},
        {"optimizer", optimizer_name(c.optimizer)},
        {"attention_dropout", c.attention_dropout},
        {"hidden_dropout", c.hidden_dropout},
        {"attention", attention_name(c.attention)},
        {"tp", c.par.tp},
        {"sp", c.par.sp},
        {"pp", c.par.pp},
        {"vpp", c.par.vpp},
        {"cp", c.par.cp},
        {"dp", c.par.dp},
        {"zero", c.par.zero},
        {"ep", c.par.ep},
        {"recompute", recompute_name(c.recompute)},
        {"offload", c.recompute.offload},
        {"custom_keep", c.recompute.custom_keep},
        {"schedule", schedule_name(effective_schedule(c))},
        {"micro_batches", c.grad_accum},
        {"layer_split", c.layer_split},
        {"fragmentation_pct", c.fragmentation_pct}}},
      {"per_layer",
       {{"activation_bytes", e.per_layer_kept_bytes},
        {"linear_bytes", e.per_layer_linear_bytes},
        {"quadratic_bytes", e.per_layer_quadratic_bytes},
        {"full_bytes", e.per_layer_full_bytes},
        {"recompute", recompute_name(c.recompute)},
        {"tensors", records_json(e.kept)},
        {"all_tensors", records_json(e.kinds[0].inventory.tensors)}}},
      {"input_layer", {{"tensors", records_json(e.io().input_layer)}}},
      {"output_layer", {{"tensors", records_json(e.io().output_layer)}}},
      {"activations",
       {{"stage", w.index},
        {"in_flight_chunks", w.in_flight},
        {"layers_bytes", w.act.layers_bytes},
        {"input_layer_bytes", w.act.input_layer_bytes},
        {"output_layer_bytes", w.act.output_layer_bytes},
        {"recompute_working_bytes", w.act.recompute_working_bytes},
        {"host_bytes", w.act.host_bytes},
        {"total_bytes", w.act.total_bytes}}},
      {"static",
       {{"stage", w.index},
        {"params", w.stat.params},
        {"params_bytes", w.stat.params_bytes},
        {"grads_bytes", w.stat.grads_bytes},
        {"master_bytes", w.stat.master_bytes},
        {"optimizer_bytes", w.stat.optimizer_bytes},
        {"total_bytes", w.stat.total_bytes}}},
      {"stages", stages},
      {"total_bytes", w.total_bytes},
      {"peak", peak_json(w)},
      {"peak_bytes", w.peak_bytes},
      {"peak_at", w.peak_at},
      {"recompute_overhead_pct", e.recompute_overhead_pct},
      {"kv_cache",
       {{"total_bytes", e.kv_cache.total_bytes}, {"per_gpu_bytes", e.kv_cache.per_gpu_bytes}}},
      {"explain", explain},
      {"warnings", e.warnings}};
  if (m.kinds.size() > 1) {
    // A stack of several kinds: each kind's layers, shape and records (what one of its layers
    // keeps with no recompute), and the stack as runs of consecutive layers of one kind.
    json kinds = json::array();
    for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
      const LayerKind& k = m.kinds[ki];
      const KindEstimate& ke = e.kinds[ki];
      kinds.push_back(json{{"name", k.name},
                           {"layers", ke.layers},
                           {"num_attention_heads", k.heads},
                           {"num_key_value_heads", k.kv_heads},
                           {"head_dim", k.head_dim},
                           {"intermediate_size", k.ffn_hidden},
                           {"ffn_type", ffn_name(k.ffn)},
                           {"num_local_experts", k.moe.experts},
                           {"num_experts_per_tok", k.moe.top_k},
                           {"full_bytes", ke.costs.full},
                           {"tensors", records_json(ke.inventory.tensors)}});
    }
    json runs = json::array();
    for (std::uint64_t i = 0; i < m.layers;) {
      std::uint64_t j = i;
      while (j < m.layers && m.kind_index(j) == m.kind_index(i)) ++j;
      runs.push_back(json{{"kind", m.kind_of(i).name}, {"repeat", j - i}});
      i = j;
    }
    out["model"]["layer_kinds"] = kinds;
    out["model"]["layer_stack"] = runs;
  }
  if (e.has_gpu) {
    out["gpu"] = {{"id", e.gpu.id}, {"name", e.gpu.name}, {"memory_bytes", e.gpu.memory_bytes}};
    out["fits"] = e.fits;
    out["headroom_bytes"] = e.headroom_bytes;
  }
  return out;
}

}  // namespace actmem
