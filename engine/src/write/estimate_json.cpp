// Writes an estimate as JSON: the schema the CLI's --json, the page and the tests all read.
#include "actmem/json_io.hpp"

#include <algorithm>

#include "actmem/names/names.hpp"
#include "write/config_json.hpp"
#include "write/json_writer.hpp"

namespace actmem {

using detail::JsonWriter;
using nlohmann::json;

json error_to_json(const Error& e) {
  return json{{"ok", false},
              {"error", {{"code", e.code}, {"field", e.field}, {"message", e.message}}}};
}

namespace {

// The device figure (device.hpp): the allocator model's peaks per stage, the fixed costs, the
// total nvidia-smi would show and the verdict on it.
void write_offload(JsonWriter& w, const OffloadTiming& t) {
  w.key("offload_timing");
  w.begin_object();
  w.field("known", t.known);
  if (!t.known) {
    w.field("why_unknown", t.why_unknown);
  } else {
    w.field("assumed_mfu", kAssumedMfu);
    w.field("copy_out_s", t.copy_out_s);
    w.field("exposed_s", t.exposed_s);
    w.field("flops_per_s", t.flops_per_s);
    w.field("forward_s", t.forward_s);
    w.field("hidden", t.hidden);
    w.field("host_fits", t.host_fits);
    w.field("host_memory_bytes", t.host_memory_bytes);
    w.field("host_peak_bytes", t.host_peak_bytes);
    w.field("link_bytes_per_s", t.link_bytes_per_s);
    w.field("link_source", t.link_source);
    w.field("worst_copy_s", t.worst_copy_s);
    w.field("worst_forward_s", t.worst_forward_s);
    w.field("worst_layer", t.worst_layer);
  }
  w.end_object();
}

void write_device(JsonWriter& w, const DeviceMemory& d) {
  w.key("device");
  w.begin_object();
  w.field("allocated_peak_bytes", d.allocated_peak_bytes);
  w.field("allocator", d.allocator);
  w.field("micro_batches_simulated", d.micro_batches_simulated);
  if (d.capacity_bytes != 0) {
    w.field("capacity_bytes", d.capacity_bytes);
    w.field("capacity_source", d.capacity_source);
    w.field("fits", d.fits);
    w.field("headroom_bytes", d.headroom_bytes);
  }
  w.key("notes");
  w.begin_array();
  for (const auto& n : d.notes) w.value(n);
  w.end_array();
  w.field("out_of_memory", d.out_of_memory);
  w.field("overhead_bytes", d.overhead_bytes);
  w.key("overheads");
  w.begin_array();
  for (const auto& o : d.overheads) {
    w.begin_object();
    w.field("bytes", o.bytes);
    w.field("formula", o.formula);
    w.field("name", o.name);
    w.field("source", o.source);
    w.end_object();
  }
  w.end_array();
  w.field("reserved_peak_bytes", d.reserved_peak_bytes);
  w.key("stages");
  w.begin_array();
  for (const auto& s : d.stages) {
    w.begin_object();
    w.field("allocated_peak_bytes", s.allocated_peak_bytes);
    w.field("allocations", s.allocations);
    w.field("ooms", s.ooms);
    w.field("requested_peak_bytes", s.requested_peak_bytes);
    w.field("reserved_peak_bytes", s.reserved_peak_bytes);
    w.field("retries", s.stats.retries);
    w.field("segments_peak", s.segments_peak);
    w.field("side_stream_reserved_bytes", s.side_stream_reserved_bytes);
    w.field("stage", s.stage);
    w.end_object();
  }
  w.end_array();
  w.field("total_bytes", d.total_bytes);
  w.field("worst_stage", d.stages.empty() ? std::uint64_t{0} : d.worst_stage().stage);
  w.end_object();
}

void write_record(JsonWriter& w, const TensorRecord& r) {
  w.begin_object();
  w.field("attention_core", r.attn_core);
  w.field("backward", r.backward);
  w.field("bytes", r.bytes);
  w.key("dims");
  w.begin_array();
  for (const auto& d : r.shape) w.value(d.value);
  w.end_array();
  w.field("dtype", dtype_name(r.dtype));
  if (r.scope.empty())
    w.field("name", r.id);
  else
    w.field("name", std::string(r.scope) + std::string(r.id));
  w.field("scales", r.quadratic ? "quadratic" : "linear");
  w.field("shape", shape_symbol(r.shape));
  w.field("source", r.source);
  w.field("why", r.why);
  w.end_object();
}

// A layer kind's token mixer, and a Mamba-2 mixer's axes.
void write_mixer(JsonWriter& w, const LayerKind& k) {
  if (k.is_mamba()) {
    const MambaSpec& x = k.mamba;
    w.key("mamba");
    w.begin_object();
    w.field("chunk_size", x.chunk);
    w.field("conv_kernel", x.conv_kernel);
    w.field("head_dim", x.head_dim);
    w.field("n_groups", x.groups);
    w.field("num_heads", x.heads);
    w.field("state_size", x.state);
    w.end_object();
  }
  w.field("mixer", mixer_name(k.mixer));
}

void write_records(JsonWriter& w, std::string_view key, const std::vector<TensorRecord>& v) {
  w.key(key);
  w.begin_array();
  for (const auto& r : v) write_record(w, r);
  w.end_array();
}

void write_activations(JsonWriter& w, const StageActivations& a) {
  w.field("host_bytes", a.host_bytes);
  w.field("input_layer_bytes", a.input_layer_bytes);
  w.field("layers_bytes", a.layers_bytes);
  w.field("output_layer_bytes", a.output_layer_bytes);
  w.field("recompute_working_bytes", a.recompute_working_bytes);
  w.field("total_bytes", a.total_bytes);
}

void write_static(JsonWriter& w, const StaticMemory& m) {
  for (const StaticLine& l : static_lines()) w.field(l.key, m.*l.bytes);
  w.field("params", m.params);
  w.field("total_bytes", m.total_bytes);
}

// What the most loaded GPU holds at its peak, line by line: the lines add up to `bytes`, the
// peak_bytes that decides whether it fits (the one answer every client shows).
void write_peak(JsonWriter& w, const Stage& st) {
  w.begin_object();
  for (const StaticLine& l : static_lines())
    if (l.place != StaticPlace::kHost) w.field(l.key, st.peak_stat.*l.bytes);
  w.field("at", st.peak_at);
  w.field("bytes", st.peak_bytes);
  w.field("fragmentation_bytes", st.peak_fragmentation);
  w.field("kept_activations_bytes", st.peak_activations);
  w.field("phase", phase_id(st.peak_phase));
  w.field("recomputed_bytes", st.peak_recompute);
  w.field("stage", st.index);
  w.field("static_bytes", st.peak_stat.total_bytes);
  w.key("top");
  w.begin_array();
  for (const Stage::Contributor& c : st.peak_top) {
    w.begin_object();
    w.field("bytes", c.bytes);
    w.field("key", c.key);
    w.field("label", c.label);
    w.end_object();
  }
  w.end_array();
  w.field("transient_bytes", st.peak_transients);
  w.end_object();
}

// The worst stage's peak of each phase it runs, in step order, and how far each is below the
// step's peak (docs/schema.md "phases").
void write_phases(JsonWriter& w, const Stage& st) {
  w.key("phases");
  w.begin_array();
  for (const PhaseFigure& p : st.phases) {
    w.begin_object();
    w.field("at", p.at);
    w.field("below_peak_bytes", st.peak_bytes - p.peak_bytes);
    w.field("label", phase_label(p.phase));
    w.field("peak_bytes", p.peak_bytes);
    w.field("phase", phase_id(p.phase));
    w.end_object();
  }
  w.end_array();
}

template <class T>
void write_array(JsonWriter& w, std::string_view key, const std::vector<T>& v) {
  w.key(key);
  w.begin_array();
  for (const auto& x : v) w.value(x);
  w.end_array();
}

// The keys the framework filled, each with its value and the code it follows (framework.cpp).
void write_framework_defaults(JsonWriter& w, const TrainConfig& c) {
  w.key("framework_defaults");
  w.begin_array();
  for (const FrameworkDefault& d : c.framework_filled) {
    w.begin_object();
    w.field("key", d.key);
    w.field("source", d.source);
    w.key("value");
    w.raw(d.value);  // JSON text the config reader read (framework.cpp)
    w.end_object();
  }
  w.end_array();
}

void write_explanations(JsonWriter& w, const Estimate& e) {
  w.key("explain");
  w.begin_array();
  for (const auto& x : e.explain) {
    w.begin_object();
    w.field("bytes", x.bytes);
    w.field("formula", x.formula);
    w.field("id", x.id);
    w.field("source", x.source);
    w.field("substituted", x.substituted);
    w.field("title", x.title);
    w.end_object();
  }
  w.end_array();
}

void write_gpu(JsonWriter& w, const Estimate& e) {
  w.field("fits", e.fits);
  w.key("gpu");
  w.begin_object();
  w.field("id", e.gpu.id);
  w.field("memory_bytes", e.gpu.memory_bytes);
  w.field("name", e.gpu.name);
  w.end_object();
  w.field("headroom_bytes", e.headroom_bytes);
}

// A stack of several kinds: each kind's layers, shape and records (what one of its layers keeps
// with no recompute).
void write_layer_kinds(JsonWriter& w, const Estimate& e) {
  const ModelSpec& m = e.model;
  w.key("layer_kinds");
  w.begin_array();
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    const LayerKind& k = m.kinds[ki];
    const KindEstimate& ke = e.kinds[ki];
    w.begin_object();
    w.field("ffn_type", k.has_ffn ? ffn_name(k.ffn) : "none");
    w.field("full_bytes", ke.costs.full);
    w.field("head_dim", k.head_dim);
    w.field("intermediate_size", k.ffn_hidden);
    w.field("layers", ke.layers);
    write_mixer(w, k);
    w.field("name", k.name);
    w.field("num_attention_heads", k.heads);
    w.field("num_experts_per_tok", k.moe.top_k);
    w.field("num_key_value_heads", k.kv_heads);
    w.field("num_local_experts", k.moe.experts);
    w.field("qk_norm", k.qk_norm);
    write_records(w, "tensors", ke.inventory.tensors);
    w.end_object();
  }
  w.end_array();
}

// The stack as runs of consecutive layers of one kind.
void write_layer_stack(JsonWriter& w, const ModelSpec& m) {
  w.key("layer_stack");
  w.begin_array();
  for (std::uint64_t i = 0; i < m.layers;) {
    std::uint64_t j = i;
    while (j < m.layers && m.kind_index(j) == m.kind_index(i)) ++j;
    w.begin_object();
    w.field("kind", m.kind_of(i).name);
    w.field("repeat", j - i);
    w.end_object();
    i = j;
  }
  w.end_array();
}

void write_model(JsonWriter& w, const Estimate& e) {
  const ModelSpec& m = e.model;
  w.key("model");
  w.begin_object();
  const LayerKind& k0 = m.kinds[0];
  w.field("attn_logit_softcapping", m.attn_softcap);
  w.field("block_layout", block_name(m.block));
  w.field("ffn_type", k0.has_ffn ? ffn_name(k0.ffn) : "none");
  w.field("final_logit_softcapping", m.final_softcap);
  w.field("gemma_norm", m.gemma_norm);
  w.field("head_dim", k0.head_dim);
  w.field("hidden_size", m.hidden);
  w.field("id", m.id);
  w.field("intermediate_size", k0.ffn_hidden);
  if (m.kinds.size() > 1) {
    // A stack of several kinds: each kind's layers, shape and records (what one of its layers
    // keeps with no recompute), and the stack as runs of consecutive layers of one kind.
    write_layer_kinds(w, e);
    write_layer_stack(w, m);
  }
  w.field("layers", m.layers);
  write_mixer(w, k0);
  w.field("mtp_params", e.mtp_params);
  w.field("name", m.name);
  w.field("norm_type", norm_name(m.norm));
  w.field("num_attention_heads", k0.heads);
  w.field("num_experts_per_tok", k0.moe.top_k);
  w.field("num_key_value_heads", k0.kv_heads);
  w.field("num_local_experts", k0.moe.experts);
  w.field("params", e.model_params);
  w.field("position_embedding", pos_name(m.pos));
  w.field("published_params", m.published_params);
  w.field("qk_norm", k0.qk_norm);
  w.field("sandwich_norm", m.sandwich_norm);
  w.field("source", m.source);
  w.field("tie_word_embeddings", m.tied_embeddings);
  w.field("vocab_size", m.vocab);
  w.end_object();
}

void write_per_layer(JsonWriter& w, const Estimate& e) {
  const TrainConfig& c = e.config;
  w.key("per_layer");
  w.begin_object();
  w.field("activation_bytes", e.per_layer_kept_bytes);
  write_records(w, "all_tensors", e.kinds[0].inventory.tensors);
  w.field("full_bytes", e.per_layer_full_bytes);
  w.field("linear_bytes", e.per_layer_linear_bytes);
  w.field("quadratic_bytes", e.per_layer_quadratic_bytes);
  w.field("recompute", recompute_name(c.recompute));
  write_records(w, "tensors", e.kept);
  w.end_object();
}

void write_stages(JsonWriter& w, const Estimate& e) {
  const TrainConfig& c = e.config;
  w.key("stages");
  w.begin_array();
  for (const Stage& s : e.stages) {
    w.begin_object();
    w.key("activations");
    w.begin_object();
    write_activations(w, s.act);
    w.end_object();
    w.field("chunk_layers", s.chunk_layers);
    w.field("in_flight_chunks", s.in_flight);
    w.field("kept_layer_slots", s.kept_layer_slots);
    w.field("layers", s.layers);
    w.field("peak_at", s.peak_at);
    w.field("peak_bytes", s.peak_bytes);
    w.field("recompute_policy", policy_name(s.choices, c.recompute));
    w.field("stage", s.index);
    w.key("static");
    w.begin_object();
    write_static(w, s.stat);
    w.end_object();
    w.field("total_bytes", s.total_bytes);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

// The estimate answer, streamed (json_writer.hpp): the schema of docs/schema.md, the bytes
// nlohmann would write for the same value.
std::string estimate_text(const Estimate& e) {
  const TrainConfig& c = e.config;
  const Stage& st = e.worst();
  JsonWriter w;
  w.out.reserve(16384);
  w.begin_object();
  w.key("activations");
  w.begin_object();
  write_activations(w, st.act);
  w.field("in_flight_chunks", st.in_flight);
  w.field("stage", st.index);
  w.end_object();

  w.key("config");
  write_config(w, c);

  write_framework_defaults(w, c);

  if (e.has_device) write_device(w, e.device);
  if (e.has_offload_timing) write_offload(w, e.offload);

  write_explanations(w, e);

  if (e.has_gpu) write_gpu(w, e);

  w.key("input_layer");
  w.begin_object();
  write_records(w, "tensors", e.io().input_layer);
  w.end_object();

  w.key("kv_cache");
  w.begin_object();
  w.field("per_gpu_bytes", e.kv_cache.per_gpu_bytes);
  w.field("total_bytes", e.kv_cache.total_bytes);
  w.end_object();

  write_model(w, e);
  w.field("ok", true);

  w.key("output_layer");
  w.begin_object();
  write_records(w, "tensors", e.io().output_layer);
  w.end_object();

  w.key("peak");
  write_peak(w, st);
  w.field("peak_at", st.peak_at);
  w.field("peak_bytes", st.peak_bytes);
  write_phases(w, st);

  write_per_layer(w, e);

  w.field("profile", profile_name(c.profile));
  w.field("recompute_overhead_pct", e.recompute_overhead_pct);

  write_stages(w, e);

  w.key("static");
  w.begin_object();
  write_static(w, st.stat);
  w.field("stage", st.index);
  w.end_object();
  w.field("total_bytes", st.total_bytes);
  write_array(w, "warnings", e.warnings);
  w.end_object();
  return std::move(w.out);
}

// The headline answer ("summary": true): the peak and its lines, the closed form, the fit.
std::string summary_text(const Estimate& e) {
  const Stage& st = e.worst();
  JsonWriter w;
  w.begin_object();
  if (e.has_gpu) {
    w.field("fits", e.fits);
    w.key("gpu");
    w.begin_object();
    w.field("memory_bytes", e.gpu.memory_bytes);
    w.end_object();
    w.field("headroom_bytes", e.headroom_bytes);
  }
  w.field("ok", true);
  w.key("peak");
  write_peak(w, st);
  w.field("peak_at", st.peak_at);
  w.field("peak_bytes", st.peak_bytes);
  write_phases(w, st);
  w.key("per_layer");
  w.begin_object();
  w.field("activation_bytes", e.per_layer_kept_bytes);
  w.end_object();
  w.field("profile", profile_name(e.config.profile));
  w.field("recompute", recompute_name(e.config.recompute));
  w.field("recompute_overhead_pct", e.recompute_overhead_pct);
  w.field("total_bytes", st.total_bytes);
  w.end_object();
  return std::move(w.out);
}

}  // namespace actmem
