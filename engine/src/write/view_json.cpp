// Writes the page's view (view.hpp) as JSON: the "view" command's answer, everything the page draws
// (docs/schema.md, "The view answer"). Numbers only; the page formats them. Streamed
// (json_writer.hpp), the estimate answer nested as the text estimate_text writes.
#include <optional>

#include "actmem/json_io.hpp"
#include "actmem/names/names.hpp"
#include "actmem/report/view.hpp"
#include "write/config_json.hpp"
#include "write/json_writer.hpp"

namespace actmem {

using detail::JsonWriter;

namespace {

void write_suggestion(JsonWriter& w, const Suggestion& s) {
  w.begin_object();
  w.key("change");
  w.begin_object();
  if (s.micro_batch) w.field("micro_batch", *s.micro_batch);
  if (s.dp) w.field("dp", *s.dp);
  if (s.zero) w.field("zero", *s.zero);
  if (s.recompute) w.field("recompute", *s.recompute);
  if (s.offload) w.field("offload", *s.offload);
  w.end_object();
  w.field("fits", s.fits);
  w.field("gpus", s.gpus);
  w.field("kind", s.kind);
  w.field("peak_bytes", s.peak_bytes);
  w.field("recompute_overhead_pct", s.recompute_overhead_pct);
  w.end_object();
}

template <class F>
void write_column(JsonWriter& w, std::string_view key, const StageSeries& s, F get) {
  w.key(key);
  w.begin_array();
  for (const SeriesPoint& p : s.points) w.value(get(p));
  w.end_array();
}

// A stage's series as parallel arrays (compact, and what a polyline needs), each point's event in
// words for its tooltip.
void write_series(JsonWriter& w, const StageSeries& s, const Estimate& e, bool chunks) {
  const StageEval& st = e.eval.stages[s.stage];
  w.begin_object();
  w.field("events", s.events);
  w.field("fragmentation_bytes", st.fragmentation_bytes);
  w.field("peak_bytes", st.peak_bytes);
  w.field("peak_words", event_words(st.peak_at, chunks));
  // The point holding the stage's peak event (the first highest).
  std::uint64_t top = 0;
  for (std::size_t i = 1; i < s.points.size(); ++i)
    if (s.points[i].bytes.live > s.points[top].bytes.live) top = i;
  w.field("peak_point", top);
  w.key("points");
  w.begin_object();
  write_column(w, "activations", s, [](const SeriesPoint& p) { return p.bytes.activations; });
  write_column(w, "index", s, [](const SeriesPoint& p) { return p.index; });
  write_column(w, "live_bytes", s, [](const SeriesPoint& p) { return p.bytes.live; });
  write_column(w, "low_bytes", s, [](const SeriesPoint& p) { return p.low; });
  write_column(w, "recompute", s, [](const SeriesPoint& p) { return p.bytes.recompute; });
  write_column(w, "regenerates", s, [](const SeriesPoint& p) { return p.recompute; });
  write_column(w, "transients", s, [](const SeriesPoint& p) { return p.bytes.transients; });
  write_column(w, "words", s, [&](const SeriesPoint& p) { return event_words(p.at, chunks); });
  w.end_object();
  w.field("stage", s.stage);
  w.field("static_bytes", e.ranks[s.stage].stat.total_bytes);
  w.end_object();
}

// What each recompute letter and each event label means (layers:PATTERN, the timeline's labels).
void write_glossary(JsonWriter& w) {
  const char* const meaning[] = {
      "keep: the layer keeps every record for backward",
      ("selective: keeps all but the attention core, which backward recomputes (Korthikanti et al. "
       "2022, Sec. 5)"),
      "checkpoint: keeps only its input and starts a recompute segment (Chen et al. 2016)",
      "recompute: keeps nothing; regenerated from the checkpoint below it",
      "custom: keeps its input and the records named in custom_keep"};
  w.begin_object();
  w.key("labels");
  w.begin_object();
  w.field("B", "backward of a layer");
  w.field("F", "forward of a layer");
  w.field("L", "layer index in the whole model");
  w.field("R", "recompute: backward regenerates dropped activations");
  w.field("c", "model chunk (virtual pipeline stage) on this GPU");
  w.field("groups",
          "verl's FSDP2: its root and embedding groups gathered as the forward starts (F ... "
          "groups)");
  w.field("mb", "micro-batch index within the step");
  w.field("root",
          "verl's FSDP: the root's post-backward, after the chunk's last layer backward (B ... "
          "root)");
  w.end_object();
  w.key("recompute_letters");
  w.begin_object();
  static const std::string letters[] = {"K", "S", "C", "R", "X"};
  static_assert(sizeof(kChoiceLetters) == 6, "one meaning per recompute letter");
  for (std::size_t i = 0; i < 5; ++i) w.field(letters[i], meaning[i]);
  // Lower case: the same choice with the layer's kept bytes in host memory (policy.hpp). The
  // writer keeps each key's view until the object closes: the keys are static.
  static_assert(sizeof(kOffloadLetters) == 5, "one meaning per offload letter");
  static const std::string lower[] = {"k", "s", "c", "x"};
  for (std::size_t i = 0; i < 4; ++i)
    w.field(lower[i], std::string("as ") + static_cast<char>(kOffloadLetters[i] - 'a' + 'A') +
                          ", with the layer's kept bytes offloaded to host memory");
  w.end_object();
  w.end_object();
}

// The verdict: the peak, where it falls, and what the GPU holds at its fullest (device.hpp).
void write_verdict(JsonWriter& w, const View& v, bool chunks) {
  const Estimate& e = v.est;
  const Stage& worst = e.worst();
  const StageEval& we = e.eval.worst_stage();
  const DeviceMemory& dev = e.device;
  w.key("verdict");
  w.begin_object();
  w.field("peak_bytes", worst.peak_bytes);
  w.field("stage", worst.index);
  w.field("stages", static_cast<std::uint64_t>(e.stages.size()));
  w.field("peak_at", worst.peak_at);
  w.field("peak_words", event_words(we.peak_at, chunks));
  w.field("gpus", v.gpus);
  w.field("total_bytes", dev.total_bytes);
  w.field("allocated_bytes", dev.allocated_peak_bytes);
  w.field("reserved_bytes", dev.reserved_peak_bytes);
  if (e.has_gpu) {
    w.field("fits", e.fits);
    w.field("capacity_bytes", dev.capacity_bytes);
    w.field("capacity_source", dev.capacity_source);
    w.field("headroom_bytes", e.headroom_bytes);
    w.field("gpu", e.gpu.name.empty() ? e.gpu.id : e.gpu.name);
    w.field("out_of_memory", dev.out_of_memory);
  }
  w.key("notes");
  w.begin_array();
  for (const std::string& n : dev.notes) w.value(n);
  w.end_array();
  w.end_object();
}

// The layout as the view shows it, and the schedule that runs when it is not the one given.
void write_layout_panel(JsonWriter& w, const View& v, Schedule sched) {
  const Estimate& e = v.est;
  const Parallel& par = e.config.par;
  w.key("layout");
  w.begin_object();
  detail::write_layout(w, e.config, detail::LayoutFor::kView);
  if (sched != e.config.schedule)
    w.field("schedule_note", std::string(schedule_table().name(sched)) + " because vpp = " +
                                 std::to_string(par.vpp) + " > 1 (Megatron-LM's interleaved 1F1B)");
  w.end_object();
}

void write_segment(JsonWriter& w, const char* id, const char* label, Bytes bytes) {
  w.begin_object();
  w.field("bytes", bytes);
  w.field("id", id);
  w.field("label", label);
  w.end_object();
}

// The bar: what the peak event holds, part by part (the static lines, a switch's only when held,
// then the step's own); the parts add up to the peak.
void write_tensor_bar(JsonWriter& w, const View& v) {
  const Stage& worst = v.est.worst();
  w.key("tensor_bar");
  w.begin_object();
  w.key("segments");
  w.begin_array();
  for (const StaticLine& l : static_lines()) {
    const Bytes bytes = worst.peak_stat.*l.bytes;
    if (l.place == StaticPlace::kCore || (l.place == StaticPlace::kResident && bytes > 0))
      write_segment(w, l.id, l.label, bytes);
  }
  write_segment(w, "activations", "kept activations", worst.peak_activations);
  write_segment(w, "recompute", "recomputed", worst.peak_recompute);
  write_segment(w, "transients", "transients (logits, gradients, buffers)", worst.peak_transients);
  write_segment(w, "fragmentation", "fragmentation allowance", worst.peak_fragmentation);
  w.end_array();
  w.field("total_bytes", worst.peak_bytes);
  w.end_object();
}

void write_device_bar(JsonWriter& w, const View& v) {
  const Estimate& e = v.est;
  const DeviceMemory& dev = e.device;
  // The device bar: allocated blocks, what the allocator keeps reserved beyond them, each fixed
  // cost; they add up to the verdict's total.
  w.key("bar");
  w.begin_object();
  w.key("segments");
  w.begin_array();
  auto seg = [&](const std::string& id, const std::string& label, Bytes bytes,
                 const std::string& source) {
    w.begin_object();
    w.field("bytes", bytes);
    w.field("id", id);
    w.field("label", label);
    w.field("source", source);
    w.end_object();
  };
  seg("allocated", "allocated (tensors)", dev.allocated_peak_bytes,
      "the step's tensors through PyTorch's caching allocator (torch.cuda.max_memory_allocated)");
  seg("cached", "reserved, not allocated", dev.reserved_peak_bytes - dev.allocated_peak_bytes,
      "the allocator's cache and fragmentation (max_memory_reserved - max_memory_allocated)");
  for (const DeviceOverhead& o : dev.overheads) seg("overhead", o.name, o.bytes, o.source);
  w.end_array();
  w.field("total_bytes", dev.total_bytes);
  if (e.has_gpu) w.field("capacity_bytes", dev.capacity_bytes);
  w.end_object();
}

void write_timeline(JsonWriter& w, const View& v, Schedule sched, bool chunks) {
  const Estimate& e = v.est;
  const Stage& worst = e.worst();
  const DeviceMemory& dev = e.device;
  // The step: y from 0 to the larger of the highest point and the capacity.
  const Bytes y_max =
      e.has_gpu && dev.capacity_bytes > worst.peak_bytes ? dev.capacity_bytes : worst.peak_bytes;
  w.key("timeline");
  w.begin_object();
  w.field("schedule", schedule_table().name(sched));
  w.field("micro_batches", e.config.grad_accum);
  w.field("stages", static_cast<std::uint64_t>(e.stages.size()));
  w.field("worst_stage", static_cast<std::uint64_t>(e.worst_stage));
  w.field("y_min", 0);
  w.field("y_max", y_max);
  w.field("recompute_overhead_pct", e.recompute_overhead_pct);
  if (e.has_gpu) w.field("capacity_bytes", dev.capacity_bytes);
  w.key("series");
  w.begin_array();
  for (const StageSeries& s : v.series) write_series(w, s, e, chunks);
  w.end_array();
  w.end_object();
}

// Rows and grid cells are screened like the planner's candidates: the tensor peak against the
// capacity less the fixed costs (the allocator is replayed for the configuration itself, the
// plan's choice and fit's answer, not for every cell).
void write_policies(JsonWriter& w, const View& v, Bytes screen) {
  const Estimate& e = v.est;
  const std::string current = recompute_name(e.config.recompute);
  w.key("policies");
  w.begin_array();
  for (const PolicyRow& p : v.policies) {
    w.begin_object();
    w.field("policy", p.policy);
    w.field("ok", p.ok);
    w.field("current", p.policy == current);
    if (p.ok) {
      w.field("peak_bytes", p.peak_bytes);
      w.field("recompute_overhead_pct", p.recompute_overhead_pct);
      if (e.has_gpu) w.field("fits", p.peak_bytes <= screen);
    }
    w.end_object();
  }
  w.end_array();
}

void write_profiles(JsonWriter& w, const View& v) {
  const Estimate& e = v.est;
  w.key("profiles");
  w.begin_array();
  for (const ProfileRow& p : v.profiles) {
    w.begin_object();
    w.field("profile", profile_name(p.profile));
    w.field("ok", p.ok);
    w.field("current", p.profile == e.config.profile);
    if (p.ok) {
      w.field("per_layer_bytes", p.per_layer_bytes);
      w.field("peak_bytes", p.peak_bytes);
    }
    w.end_object();
  }
  w.end_array();
}

void write_plan_and_fit(JsonWriter& w, const View& v) {
  // plan and fit: their answers, or why they refused this configuration.
  auto answer_or_refusal = [&w](std::string_view key, const auto& answer, const std::string& why) {
    if (answer) {
      w.key(key);
      w.raw(answer->dump());
    } else if (!why.empty()) {
      w.key(key);
      w.begin_object();
      w.field("message", why);
      w.field("ok", false);
      w.end_object();
    }
  };
  answer_or_refusal("plan", v.plan ? std::optional(plan_to_json(*v.plan)) : std::nullopt,
                    v.plan_error);
  answer_or_refusal("fit", v.fit ? std::optional(fit_to_json(*v.fit)) : std::nullopt, v.fit_error);
}

void write_grid(JsonWriter& w, const View& v, Bytes screen) {
  const Estimate& e = v.est;
  const DeviceMemory& dev = e.device;
  w.key("grid");
  w.begin_object();
  w.key("micro_batches");
  w.begin_array();
  for (auto b : v.grid.micro_batches) w.value(b);
  w.end_array();
  w.key("seqs");
  w.begin_array();
  for (auto s : v.grid.seqs) w.value(s);
  w.end_array();
  w.key("peak_bytes");
  w.begin_array();
  for (const auto& row : v.grid.peak_bytes) {
    w.begin_array();
    for (auto x : row) w.value(x);
    w.end_array();
  }
  w.end_array();
  if (e.has_gpu) {
    // Which cells fit the GPU (the page draws the capacity contour between them).
    w.key("fits");
    w.begin_array();
    for (const auto& row : v.grid.peak_bytes) {
      w.begin_array();
      for (auto x : row) w.value(x >= 0 && static_cast<Bytes>(x) <= screen);
      w.end_array();
    }
    w.end_array();
  }
  w.key("current");
  w.begin_array();
  w.value(static_cast<std::uint64_t>(v.grid_b));
  w.value(static_cast<std::uint64_t>(v.grid_s));
  w.end_array();
  if (e.has_gpu) w.field("capacity_bytes", dev.capacity_bytes);
  w.end_object();
}

}  // namespace

std::string view_text(const View& v, const std::string& estimate_answer,
                      const std::string& example_answer) {
  const Estimate& e = v.est;
  const Parallel& par = e.config.par;
  const Schedule sched = effective_schedule(e.config);
  const bool chunks = par.vpp > 1 || sched == Schedule::kDualPipe;  // DualPipe: its directions
  JsonWriter w;
  w.begin_object();
  w.field("ok", true);
  w.field("command", "view");
  w.key("estimate");
  w.raw(estimate_answer);
  if (!example_answer.empty()) {
    w.key("example");
    w.raw(example_answer);
  }
  w.key("model");
  w.begin_object();
  w.field("name", e.model.name);
  w.field("params", e.model_params);
  w.end_object();

  write_verdict(w, v, chunks);

  write_layout_panel(w, v, sched);

  w.key("suggestions");
  w.begin_array();
  for (const Suggestion& s : v.suggestions) write_suggestion(w, s);
  w.end_array();
  // Asked without its searches: what the full view adds (its plan, fit and suggestions).
  if (v.searches_pending) {
    w.key("pending");
    w.raw(R"(["plan","fit","suggestions"])");
  }

  write_tensor_bar(w, v);
  write_device_bar(w, v);

  write_timeline(w, v, sched, chunks);

  // Rows and grid cells are screened like the planner's candidates (write_policies).
  const DeviceMemory& dev = e.device;
  const Bytes screen =
      dev.capacity_bytes > dev.overhead_bytes ? dev.capacity_bytes - dev.overhead_bytes : 0;
  write_policies(w, v, screen);
  write_profiles(w, v);

  write_plan_and_fit(w, v);

  write_grid(w, v, screen);
  w.key("glossary");
  write_glossary(w);
  w.end_object();
  return std::move(w.out);
}

}  // namespace actmem
