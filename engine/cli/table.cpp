// Renders the engine's JSON response as aligned text tables for the terminal.
#include "table.hpp"

#include <cstdio>
#include <sstream>

namespace actmem::cli {

using nlohmann::json;

namespace {

std::string commas(unsigned long long v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string human(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024.0 && u < 6) b /= 1024.0, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

std::string pad(const std::string& s, std::size_t w) {
  // Pads by code points so the "·" in shapes keeps columns aligned.
  std::size_t cps = 0;
  for (unsigned char c : s) cps += (c & 0xC0) != 0x80;
  return cps >= w ? s + " " : s + std::string(w - cps, ' ');
}

std::string text(const json& j) {
  return j.is_string() ? printable(j.get_ref<const std::string&>()) : "";
}

unsigned long long u(const json& j) {
  return j.is_number_unsigned() ? j.get<unsigned long long>() : 0ULL;
}

}  // namespace

// Names come from users' files (metadata.name, layer kind names, warnings quoting keys), so control
// characters, C1 controls and invalid UTF-8 are written as escapes: a downloaded config cannot move
// the cursor or print a fake line.
std::string printable(const std::string& s) {
  std::string out;
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, continuation bytes checked.
    const std::size_t n = c >= 0xC2 && c <= 0xDF   ? 2
                          : c >= 0xE0 && c <= 0xEF ? 3
                          : c >= 0xF0 && c <= 0xF4 ? 4
                                                   : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    const bool c1 = ok && n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;
    if (!ok || c1) {
      std::snprintf(buf, sizeof buf, ok ? "\\u%04x" : "\\x%02x",
                    ok ? static_cast<unsigned char>(s[i + 1]) : c);
      out += buf;
      i += ok ? 2 : 1;
      continue;
    }
    out.append(s, i, n);
    i += n;
  }
  return out;
}

std::string format_bytes(unsigned long long bytes) {
  return commas(bytes) + " B (" + human(static_cast<double>(bytes)) + ")";
}

// The GPU and the verdict, for every answer that carries them (estimate, explain, timeline): the
// headroom is the GPU's bytes less the answer's peak, as the engine decided `fits`.
void write_gpu_verdict(std::ostream& o, const json& r) {
  if (!r.contains("gpu")) return;
  const bool fits = r["fits"].get<bool>();
  if (r.contains("device") && r["device"].contains("capacity_bytes")) {
    // The device's figure decides: what nvidia-smi would show against what it reports.
    const json& d = r["device"];
    const unsigned long long cap = u(d["capacity_bytes"]), total = u(d["total_bytes"]);
    o << "  " << pad(("GPU " + text(r["gpu"]["name"])).c_str(), 30) << format_bytes(cap)
      << " (as the driver reports it)\n";
    o << "  " << pad(fits ? "fits, headroom" : "DOES NOT FIT, short by", 30)
      << format_bytes(total <= cap ? cap - total : total - cap) << "\n";
    return;
  }
  const unsigned long long mem = u(r["gpu"]["memory_bytes"]), peak = u(r["peak_bytes"]);
  o << "  " << pad(("GPU " + text(r["gpu"]["name"])).c_str(), 30) << format_bytes(mem) << "\n";
  o << "  " << pad(fits ? "fits, headroom" : "DOES NOT FIT, short by", 30)
    << format_bytes(fits ? mem - peak : peak - mem) << "\n";
}

// The phase of the peak, its three largest lines, and each phase's own peak (issue 36): "the
// optimizer step peaks 3.1 GiB above backward" reads off these lines. `phases` and `peak_phase`
// are the answer's (estimate: the worst stage's; timeline: each stage's).
void write_phases(std::ostream& o, const json& phases, const json& peak_phase, const json* top) {
  std::string phase = text(peak_phase);
  for (const auto& p : phases)
    if (p["phase"] == peak_phase) phase = text(p["label"]);
  o << "  peak in the " << phase;
  if (top) {
    o << "; largest lines:";
    for (std::size_t i = 0; i < top->size(); ++i) o << (i ? ", " : " ") << text((*top)[i]["label"]);
  }
  o << "\n  peak of each phase:\n";
  for (const auto& p : phases) {
    const unsigned long long below = u(p["below_peak_bytes"]);
    o << "    " << pad(text(p["label"]), 16) << pad(format_bytes(u(p["peak_bytes"])), 34)
      << (below == 0 ? std::string("the peak") : human(static_cast<double>(below)) + " below")
      << ", at " << text(p["at"]) << "\n";
  }
}

// What the GPU holds beyond the tensors: the allocator model's peaks and each fixed cost, adding
// up to what nvidia-smi would show.
void write_device(std::ostream& o, const json& r) {
  if (!r.contains("device")) return;
  const json& d = r["device"];
  o << "\non the device (PyTorch's caching allocator, " << text(d["allocator"])
    << (d["allocator"] == "default" ? " settings" : "") << "; second step of stage "
    << u(d["worst_stage"]) << ")\n";
  const unsigned long long alloc = u(d["allocated_peak_bytes"]), res = u(d["reserved_peak_bytes"]);
  o << "  " << pad("allocated (tensors, rounded)", 30) << format_bytes(alloc) << "\n";
  o << "  " << pad("reserved but not allocated", 30) << format_bytes(res - alloc) << "\n";
  for (const auto& st : d["stages"])
    if (st["stage"] == d["worst_stage"] && u(st["side_stream_reserved_bytes"]) > 0)
      o << "    " << pad("on the all-gather stream", 28)
        << format_bytes(u(st["side_stream_reserved_bytes"])) << " (FSDP2: cached apart)\n";
  for (const auto& x : d["overheads"])
    o << "  " << pad(text(x["name"]), 30) << format_bytes(u(x["bytes"])) << "\n";
  o << "  " << pad("total (nvidia-smi's used)", 30) << format_bytes(u(d["total_bytes"])) << "\n";
  for (const auto& n : d["notes"]) o << "  note: " << text(n) << "\n";
}

std::string render_estimate(const json& r) {
  std::ostringstream o;
  const json& m = r["model"];
  const json& c = r["config"];
  o << "model    " << text(m["name"]) << " (" << commas(u(m["params"])) << " parameters)\n";
  o << "profile  " << text(r["profile"]) << "   attention " << text(c["attention"])
    << "   recompute " << text(c["recompute"]) << "   dtype " << text(c["dtype"]) << "\n";
  o << "shape    b=" << u(c["micro_batch"]) << " s=" << u(c["seq"]) << "   tp=" << u(c["tp"])
    << (c["sp"].get<bool>() ? "+sp" : "") << " pp=" << u(c["pp"]) << " vpp=" << u(c["vpp"])
    << " cp=" << u(c["cp"]) << " dp=" << u(c["dp"])
    << (u(c["dp_replicate"]) > 1 ? " (" + std::to_string(u(c["dp_replicate"])) + " replicas)" : "")
    << " zero=" << c["zero"].get<int>() << " ep=" << u(c["ep"])
    << "   micro-batches/step=" << u(c["grad_accum"]) << "\n";
  // The framework's defaults the answer applied (their sources are in --json's
  // framework_defaults), and the framework switches that are not at their plain values.
  if (r.contains("framework_defaults") && !r["framework_defaults"].empty()) {
    o << "framework " << text(c["framework"]) << " filled:";
    for (const auto& d : r["framework_defaults"])
      o << " " << text(d["key"]) << "="
        << (d["value"].is_string() ? text(d["value"]) : d["value"].dump());
    o << "\n";
  }
  if (c.contains("float8") && c["float8"] != "none")
    o << "float8   " << text(c["float8"]) << " linears (torchao Float8Linear)\n";
  if (c.contains("loss") &&
      (c["loss"] != "eager" || c["shard_group"] != "dp" ||
       !c["reshard_after_forward"].get<bool>() || c["accumulate_unsharded"].get<bool>()))
    o << "loss " << text(c["loss"]) << "   shard group " << text(c["shard_group"])
      << "   reshard after forward " << (c["reshard_after_forward"].get<bool>() ? "yes" : "no")
      << "   accumulate unsharded " << (c["accumulate_unsharded"].get<bool>() ? "yes" : "no")
      << (c.contains("fsdp_version") && c["zero"] == 3 ? "   FSDP" + c["fsdp_version"].dump()
                                                       : std::string())
      << "\n";
  o << "\n";
  auto tensors = [&](const json& list) {
    o << "  " << pad("tensor", 26) << pad("shape", 22) << pad("dtype", 7) << "bytes\n";
    for (const auto& t : list)
      o << "  " << pad(text(t["name"]), 26) << pad(text(t["shape"]), 22) << pad(text(t["dtype"]), 7)
        << format_bytes(u(t["bytes"])) << "\n";
  };
  const bool stack = m.contains("layer_kinds");
  o << (stack ? "layer 0: tensors kept for backward under the recompute policy (one GPU)\n"
              : "per-layer tensors kept for backward (one layer, one GPU)\n");
  tensors(r["per_layer"]["tensors"]);
  const json& pl = r["per_layer"];
  o << "  " << pad("per layer", 55) << format_bytes(u(pl["activation_bytes"])) << "\n";
  o << "    linear in s " << format_bytes(u(pl["linear_bytes"])) << ", quadratic in s "
    << format_bytes(u(pl["quadratic_bytes"])) << "\n\n";
  // A stack of kinds (Nemotron-H's Mamba, MLP and attention layers, DeepSeek's dense and MoE
  // layers): every record of one layer of each kind, as the engine lists it (no recompute).
  if (stack)
    for (const auto& k : m["layer_kinds"]) {
      o << "layer kind '" << text(k["name"]) << "' (" << u(k["layers"])
        << " layers): every tensor one layer saves, no recompute (one GPU)\n";
      tensors(k["tensors"]);
      o << "  " << pad("per layer", 55) << format_bytes(u(k["full_bytes"])) << "\n\n";
    }
  // One answer: what the most loaded GPU holds at its peak, line by line, adding up to the peak.
  const json& pk = r["peak"];
  const json& a = r["activations"];
  o << "most loaded GPU: pipeline stage " << u(pk["stage"]) << ", peak at " << text(pk["at"])
    << " (" << u(a["in_flight_chunks"]) << " chunk(s) in flight)\n";
  auto line = [&](const char* name, const json& v) {
    o << "  " << pad(name, 30) << format_bytes(u(v)) << "\n";
  };
  line("parameters", pk["params_bytes"]);
  line("gradients", pk["grads_bytes"]);
  line("master weights", pk["master_bytes"]);
  line("optimizer states", pk["optimizer_bytes"]);
  // FSDP residency lines, shown only when a switch holds them (config.reshard_after_forward,
  // config.accumulate_unsharded).
  if (u(pk["gathered_params_bytes"]) > 0) line("gathered parameters", pk["gathered_params_bytes"]);
  if (u(pk["unsharded_grads_bytes"]) > 0) line("unsharded gradients", pk["unsharded_grads_bytes"]);
  if (u(pk["ddp_buckets_bytes"]) > 0) line("DDP buckets", pk["ddp_buckets_bytes"]);
  if (u(pk["fp8_weights_bytes"]) > 0) line("fp8 weight caches", pk["fp8_weights_bytes"]);
  line("kept activations", pk["kept_activations_bytes"]);
  line("recomputed (working set)", pk["recomputed_bytes"]);
  line("transients", pk["transient_bytes"]);
  if (u(pk["fragmentation_bytes"]) > 0) line("fragmentation allowance", pk["fragmentation_bytes"]);
  line("peak (sum of the above)", r["peak_bytes"]);
  write_phases(o, r["phases"], pk["phase"], &pk["top"]);
  if (u(a["host_bytes"]) > 0) line("offloaded to host", a["host_bytes"]);
  if (r["static"].contains("host_bytes") && u(r["static"]["host_bytes"]) > 0)
    line("optimizer on the host", r["static"]["host_bytes"]);
  write_device(o, r);
  write_gpu_verdict(o, r);
  if (r.contains("offload_timing")) {
    const json& t = r["offload_timing"];
    if (!t["known"].get<bool>()) {
      o << "offload timing: unknown (" << text(t["why_unknown"]) << ")\n";
    } else {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "offload timing: %.3f s of copies out per step beside %.3f s of forwards "
                    "(%.0f%% MFU assumed), %s\n",
                    t["copy_out_s"].get<double>(), t["forward_s"].get<double>(),
                    100 * t["assumed_mfu"].get<double>(),
                    t["hidden"].get<bool>() ? "hidden" : "not hidden:");
      o << buf;
      if (!t["hidden"].get<bool>()) {
        std::snprintf(buf, sizeof buf,
                      "  %.3f s per step exposed; layer %llu copies %.4f s against a %.4f s "
                      "forward\n",
                      t["exposed_s"].get<double>(), u(t["worst_layer"]),
                      t["worst_copy_s"].get<double>(), t["worst_forward_s"].get<double>());
        o << buf;
      }
    }
  }
  o << "\nclosed form (Korthikanti et al. 2022: activations at the in-flight maximum, no "
       "transients): layers "
    << commas(u(a["layers_bytes"])) << " + input " << commas(u(a["input_layer_bytes"]))
    << " + output " << commas(u(a["output_layer_bytes"])) << " + recompute "
    << commas(u(a["recompute_working_bytes"])) << " = " << commas(u(a["total_bytes"])) << " B\n";
  o << "inference KV cache (whole model, b x s): " << format_bytes(u(r["kv_cache"]["total_bytes"]))
    << "\n";
  for (const auto& w : r["warnings"]) o << "note: " << text(w) << "\n";
  return o.str();
}

std::string render_explain(const json& r) {
  std::ostringstream o;
  const json& m = r["model"];
  o << "profile " << text(r["profile"]) << "; b=" << u(r["config"]["micro_batch"])
    << " s=" << u(r["config"]["seq"]) << " h=" << u(m["hidden_size"]) << " V=" << u(m["vocab_size"])
    << " t=" << u(r["config"]["tp"]) << " c=" << u(r["config"]["cp"]) << "\n";
  // Each layer kind's axes (one kind: the model's own): attention's a, kv, d; the FFN's f; a
  // Mamba-2 mixer's H, P, N, G, K, Q.
  auto axes = [&](const json& k) {
    std::string s;
    if (k.contains("mamba")) {
      const json& x = k["mamba"];
      s += " Mamba-2 H=" + std::to_string(u(x["num_heads"])) +
           " P=" + std::to_string(u(x["head_dim"])) + " N=" + std::to_string(u(x["state_size"])) +
           " G=" + std::to_string(u(x["n_groups"])) + " K=" + std::to_string(u(x["conv_kernel"])) +
           " Q=" + std::to_string(u(x["chunk_size"])) + " (I=H·P)";
    } else if (text(k["mixer"]) == "attention") {
      s += " a=" + std::to_string(u(k["num_attention_heads"])) +
           " kv=" + std::to_string(u(k["num_key_value_heads"])) +
           " d=" + std::to_string(u(k["head_dim"]));
    }
    if (u(k["num_local_experts"]) > 0)
      s += " E=" + std::to_string(u(k["num_local_experts"])) +
           " k=" + std::to_string(u(k["num_experts_per_tok"])) + " (" + text(k["ffn_type"]) + ")";
    else if (text(k["ffn_type"]) != "none")
      s += " f=" + std::to_string(u(k["intermediate_size"])) + " (" + text(k["ffn_type"]) + ")";
    return s;
  };
  if (m.contains("layer_kinds"))
    for (const auto& k : m["layer_kinds"])
      o << "  kind '" << text(k["name"]) << "' x" << u(k["layers"]) << ":" << axes(k) << "\n";
  else
    o << " " << axes(m) << "\n";
  o << "\n";
  for (const auto& e : r["explain"]) {
    o << text(e["title"]) << "\n";
    o << "  = " << text(e["formula"]) << "\n";
    o << "  = " << text(e["substituted"]) << " B  (" << human(static_cast<double>(u(e["bytes"])))
      << ")\n";
    o << "  source: " << text(e["source"]) << "\n\n";
  }
  write_gpu_verdict(o, r);
  return o.str();
}

std::string render_presets(const json& r) {
  std::ostringstream o;
  o << "models\n";
  for (const auto& m : r["models"]) {
    o << "  " << pad(text(m["id"]), 18) << (m.contains("name") ? text(m["name"]) : "");
    if (m.contains("published_params"))
      o << " (" << commas(u(m["published_params"])) << " params published)";
    o << "\n";
  }
  o << "gpus\n";
  for (const auto& g : r["gpus"])
    o << "  " << pad(text(g["id"]), 18) << (g.contains("name") ? text(g["name"]) : "") << ", "
      << format_bytes(u(g["memory_bytes"])) << "\n";
  o << "examples\n";
  for (const auto& x : r["examples"])
    o << "  " << pad(text(x["id"]), 30) << (x.contains("title") ? text(x["title"]) : "") << "\n";
  return o.str();
}

std::string render_timeline(const json& r) {
  std::ostringstream o;
  o << "schedule " << text(r["schedule"]) << ", " << u(r["micro_batches"])
    << " micro-batches, recompute " << text(r["recompute"])
    << (r["offload"].get<bool>() ? " + offload" : "") << "\n";
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.2f%%", r["recompute_overhead_pct"].get<double>());
  o << "recompute overhead " << pct << " of the step's FLOPs\n\n";
  o << "  " << pad("stage", 7) << pad("peak", 34) << pad("at", 22) << "static\n";
  for (const auto& s : r["stages"])
    o << "  " << pad(std::to_string(u(s["stage"])), 7) << pad(format_bytes(u(s["peak_bytes"])), 34)
      << pad(text(s["peak_at"]), 22) << format_bytes(u(s["static_bytes"])) << "\n";
  const json& w = r["stages"][static_cast<std::size_t>(u(r["peak_stage"]))];
  o << "\nmost loaded: stage " << u(w["stage"]) << " at " << text(w["peak_at"]) << "\n";
  auto line = [&](const char* name, unsigned long long v) {
    o << "  " << pad(name, 26) << format_bytes(v) << "\n";
  };
  line("static", u(w["static_bytes"]));
  line("kept activations", u(w["at_peak"]["activations"]));
  line("recomputed", u(w["at_peak"]["recompute"]));
  line("transients", u(w["at_peak"]["transients"]));
  line("fragmentation allowance", u(w["fragmentation_bytes"]));
  line("peak", u(w["peak_bytes"]));
  write_phases(o, w["phases"], w["peak_phase"], nullptr);
  write_gpu_verdict(o, r);
  if (u(w["host_peak_bytes"]) > 0) {
    line("host (offloaded) peak", u(w["host_peak_bytes"]));
    line("PCIe traffic per step", u(w["pcie_bytes"]));
  }
  o << "transient buffers (named records):\n";
  for (const auto& t : w["transients"])
    if (u(t["bytes"]) > 0)
      o << "  " << pad(text(t["name"]), 26) << pad(format_bytes(u(t["bytes"])), 34)
        << text(t["when"]) << "\n";
  o << "(every event: --csv or --json; at most " << commas(u(r["events_limit"]))
    << " are written, the peaks cover them all)\n";
  return o.str();
}

std::string render_timeline_csv(const json& r) {
  std::ostringstream o;
  o << "stage,event,label,live_bytes,activations,recompute,transients\n";
  for (const auto& s : r["stages"]) {
    std::size_t i = 0;
    for (const auto& e : s["events"])
      o << u(s["stage"]) << "," << i++ << "," << text(e["label"]) << "," << u(e["live_bytes"])
        << "," << u(e["activations"]) << "," << u(e["recompute"]) << "," << u(e["transients"])
        << "\n";
  }
  // A cut list says so in a comment line per stage (the peaks in --json cover every event).
  for (const auto& s : r["stages"])
    if (s.value("events_truncated", false))
      o << "# stage " << u(s["stage"]) << ": the first " << s["events"].size() << " of "
        << commas(u(s["events_total"])) << " events (limit " << commas(u(r["events_limit"]))
        << " per answer)\n";
  return o.str();
}

std::string render_fit(const json& r) {
  std::ostringstream o;
  o << "budget " << format_bytes(u(r["budget_bytes"])) << "\n";
  o << "largest micro-batch that fits: " << u(r["max_micro_batch"])
    << (u(r["max_micro_batch"]) == 0
            ? " (not even one: see `actmem estimate` for the static memory)"
        : r.value("micro_batch_at_limit", false) ? " (the search's bound: at least this many fit)"
                                                 : "")
    << "\n";
  o << "largest sequence that fits (at the given micro-batch, in steps of " << u(r["seq_step"])
    << "): " << u(r["max_seq"])
    << (!r.value("seq_at_limit", false) ? ""
        : r.value("seq_limit_is_positions", false)
            ? " (the learned position table's length)"
            : " (the search's bound: longer sequences may fit)")
    << "\n";
  return o.str();
}

namespace {
std::string pct_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", x);
  return buf;
}
}  // namespace

// rl: each phase's lines, the peak phase and verdict, vLLM's KV cache (when vLLM runs on these
// GPUs: not for TRL's transformers generation or a vLLM server).
std::string render_rl(const json& r) {
  std::ostringstream o;
  const std::uint64_t cap = u(r["capacity_bytes"]);
  for (const json& p : r["phases"]) {
    const bool peak = p["id"] == r["peak"]["phase"] &&
                      p.value("pool", std::string()) == r["peak"].value("pool", std::string());
    o << text(p["label"]) << ": " << format_bytes(u(p["total_bytes"]))
      << (peak ? "  <- the step's peak" : "") << "\n";
    for (const json& l : p["lines"])
      o << "  " << pad(text(l["process"]), 10) << pad(human(static_cast<double>(u(l["bytes"]))), 12)
        << pad(text(l["basis"]), 9) << text(l["what"]) << "\n";
  }
  // OpenRLHF's separate pools: each pool's GPUs and peak, then the largest.
  for (const json& p : r.value("pools", json::array()))
    o << "pool " << pad(text(p["name"]), 16) << pad(std::to_string(u(p["gpus"])) + " GPUs", 10)
      << "peak " << format_bytes(u(p["peak"]["bytes"])) << " in " << text(p["peak"]["phase"])
      << (p["fits"].get<bool>() ? "" : "  does NOT fit") << "\n";
  o << "peak " << format_bytes(u(r["peak"]["bytes"])) << " in "
    << (r["peak"].contains("pool") ? text(r["peak"]["pool"]) + "/" : std::string())
    << text(r["peak"]["phase"]) << " against " << format_bytes(cap) << ": "
    << (r["fits"].get<bool>() ? "fits" : "does NOT fit")
    << (r.contains("gpus") ? " (" + std::to_string(u(r["gpus"])) + " GPUs in all)" : std::string())
    << "\n";
  const json& v = r["vllm"];
  const bool sglang = r.contains("rollout") && r["rollout"].value("engine", "") == "sglang";
  if (v.value("on_these_gpus", true) && sglang)
    o << "SGLang: awake " << human(static_cast<double>(u(v["requested_bytes"]))) << ", weights "
      << human(static_cast<double>(u(v["weights_bytes"]))) << ", KV pool "
      << human(static_cast<double>(u(v["kv_cache_bytes"]))) << " = " << commas(u(v["kv_tokens"]))
      << " tokens (" << commas(u(v["kv_bytes_per_token"])) << " B per token; "
      << commas(u(v["free_at_start_bytes"])) << " B free at its start); "
      << (v["starts"].get<bool>() ? "starts" : "does NOT start") << "\n";
  else if (v.value("on_these_gpus", true))
    o << "vLLM: budget " << human(static_cast<double>(u(v["requested_bytes"]))) << ", weights "
      << human(static_cast<double>(u(v["weights_bytes"])))
      << (v.contains("expert_parallel_size")
              ? " (experts split over " + std::to_string(u(v["expert_parallel_size"])) + " GPUs)"
              : std::string())
      << (v.contains("lora_slots_bytes")
              ? ", LoRA slots " + human(static_cast<double>(u(v["lora_slots_bytes"]))) +
                    " (max_lora_rank " + std::to_string(u(v["max_lora_rank"])) + ")"
              : std::string())
      << ", KV cache " << human(static_cast<double>(u(v["kv_cache_bytes"]))) << " = "
      << commas(u(v["kv_blocks"])) << " blocks, " << commas(u(v["kv_tokens"])) << " tokens ("
      << commas(u(v["kv_bytes_per_token"])) << " B per token); "
      << (v["starts"].get<bool>() ? "starts" : "does NOT start") << "\n";
  for (const json& x : r.value("rollout_options", json::array()))
    o << "rollout tp " << u(x["tp"])
      << (x.contains("num_engines") ? " x " + std::to_string(u(x["num_engines"])) + " engines"
                                    : std::string())
      << ": peak " << human(static_cast<double>(u(x["peak_bytes"]))) << " in "
      << text(x["peak_phase"]) << ", KV cache " << commas(u(x["kv_tokens"])) << " tokens"
      << (!x["starts"].get<bool>() ? " (vLLM does not start)"
          : !x["fits"].get<bool>() ? " (does not fit)"
                                   : "")
      << "\n";
  for (const json& f : r.value("fixes", json::array()))
    o << "fits with " << text(f["change"]) << ": peak " << format_bytes(u(f["peak_bytes"]))
      << " in " << text(f["phase"])
      << (f.contains("gpus") ? " (" + std::to_string(u(f["gpus"])) + " GPUs in all)"
                             : std::string())
      << "\n";
  for (const json& n : r["notes"]) o << "note: " << text(n) << "\n";
  return o.str();
}

// data: the lengths, the worst and median micro-batch, the limits and what passes them.
std::string render_data(const json& r) {
  std::ostringstream o;
  auto shape = [&](const json& s) {
    std::ostringstream t;
    t << u(s["rows"]) << " x " << u(s["seq"]) << " tokens (" << u(s["sequences"]) << " sequences, "
      << commas(u(s["tokens"])) << " real tokens; step " << u(s["step"]) << ", rank "
      << u(s["rank"]) << "): peak " << format_bytes(u(s["peak_bytes"])) << ", device "
      << format_bytes(u(s["device_total_bytes"]))
      << (s["fits"].get<bool>() ? ", fits" : ", does NOT fit");
    return t.str();
  };
  o << commas(u(r["sequences"])) << " sequences, " << commas(u(r["tokens"])) << " tokens, longest "
    << u(r["longest"]) << "; batching " << text(r["batching"]) << ": "
    << commas(u(r["micro_batches"])) << " micro-batches in " << commas(u(r["steps"]))
    << " steps (up to " << u(r["micro_batches_per_step"]) << " per rank and step)\n";
  o << "padding: " << commas(u(r["padding_tokens"])) << " tokens; micro-batch tokens min "
    << commas(u(r["shape_tokens"]["min"])) << ", median " << commas(u(r["shape_tokens"]["median"]))
    << ", max " << commas(u(r["shape_tokens"]["max"])) << "\n";
  o << "worst micro-batch:  " << shape(r["worst"]) << "\n";
  o << "median micro-batch: " << shape(r["median"]) << "\n";
  for (const json& l : r["limits"])
    o << "longest row that fits with " << u(l["rows"]) << (u(l["rows"]) == 1 ? " row" : " rows")
      << ": " << (u(l["max_seq"]) == 0 ? std::string("none") : commas(u(l["max_seq"])) + " tokens")
      << (l["at_limit"].get<bool>() ? " (the search's bound: longer may fit)" : "") << "\n";
  o << "past the GPU: " << commas(u(r["over"]["micro_batches"])) << " of "
    << commas(u(r["micro_batches"])) << " micro-batches, " << commas(u(r["over"]["steps"]))
    << " of " << commas(u(r["steps"])) << " steps";
  if (r["over"]["shuffled_step_share"].is_number())
    o << "; with the order shuffled, "
      << pct_text(100 * r["over"]["shuffled_step_share"].get<double>()) << " of steps";
  o << "\n";
  if (r.contains("fitting_max_tokens"))
    o << "max_tokens whose partition of this data fits every micro-batch: "
      << (u(r["fitting_max_tokens"]) == 0 ? std::string("none found")
                                          : commas(u(r["fitting_max_tokens"])))
      << "\n";
  for (const json& n : r["notes"]) o << "note: " << text(n) << "\n";
  return o.str();
}

std::string render_plan(const json& r) {
  std::ostringstream o;
  char pct[32];
  o << "budget " << format_bytes(u(r["budget_bytes"])) << " (" << u(r["evaluated"])
    << " policies simulated)\n";
  if (r["found"].get<bool>()) {
    std::snprintf(pct, sizeof pct, "%.2f%%", r["recompute_overhead_pct"].get<double>());
    o << "cheapest policy that fits: " << text(r["policy"])
      << (r["offload"].get<bool>() ? " + offload" : "") << ", peak "
      << format_bytes(u(r["peak_bytes"])) << ", recompute overhead " << pct;
    // Lost compute is what plan ranks by: recompute plus offload copies no forward hides.
    if (r.contains("offload_exposed_pct")) {
      std::snprintf(pct, sizeof pct, "%.2f%%", r["offload_exposed_pct"].get<double>());
      o << ", offload copies exposed " << pct << " of the step";
    }
    o << "\n";
  } else {
    o << "no policy fits the budget\n";
  }
  o << "\nPareto front (less recompute <-> less memory):\n";
  for (const auto& p : r["pareto"]) {
    std::snprintf(pct, sizeof pct, "%7.2f%%", p["recompute_overhead_pct"].get<double>());
    o << "  " << pct << "  " << pad(format_bytes(u(p["peak_bytes"])), 34) << text(p["policy"])
      << (p["offload"].get<bool>() ? " + offload" : "")
      << (p["fits"].get<bool>() ? "" : "  (over budget)") << "\n";
  }
  o << "offload (host memory and PCIe traffic; recompute overhead, peak, policy):\n";
  for (const auto& p : r["offload_points"]) {
    // A lower-case pattern says which layers offload; the switch offloads every layer.
    std::snprintf(pct, sizeof pct, "%7.2f%%", p["recompute_overhead_pct"].get<double>());
    o << "  " << pct << "  " << pad(format_bytes(u(p["peak_bytes"])), 34) << text(p["policy"])
      << (p["offload"].get<bool>() ? " + offload" : "")
      << (p["fits"].get<bool>() ? "" : "  (over budget)");
    if (p.contains("offload_hidden")) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f s", p["offload_exposed_s"].get<double>());
      o << (p["offload_hidden"].get<bool>()
                ? std::string("  (copies hide behind the forwards)")
                : std::string("  (copies not hidden: ") + buf + " per step, " +
                      pct_text(p["offload_exposed_pct"].get<double>()) + " of the step)");
    }
    o << "\n";
  }
  return o.str();
}

std::string render_warnings(const json& r) {
  std::string o;
  if (r.contains("warnings"))
    for (const auto& w : r["warnings"]) o += "note: " + text(w) + "\n";
  return o;
}

std::string render_advice(const json& r) {
  std::ostringstream o;
  const json& n = r["num_gpus"];
  o << "global batch " << u(r["global_batch"]) << " sequences on "
    << (u(n["min"]) == u(n["max"])
            ? std::to_string(u(n["min"]))
            : std::to_string(u(n["min"])) + " to " + std::to_string(u(n["max"])))
    << " GPUs of " << format_bytes(u(r["capacity_bytes"])) << "\n";
  o << u(r["enumerated"]) << " layouts, " << u(r["screened_fit"]) << " fit on their tensor peak, "
    << u(r["front_size"]) << " on the front (none beaten on every criterion); "
    << u(r["device_checks"]) << " replayed on the device, " << u(r["device_refused"])
    << " refused there\n";
  if (r["layouts"].empty()) {
    o << (u(r["enumerated"]) == 0
              ? "no layout to try: no split of these GPU counts into tp (at most gpus_per_node), "
                "cp, pp and a dp dividing the global batch suits this model\n"
              : "no layout fits\n");
    return o.str();
  }
  o << "\nranked: lost compute (bubble + recompute + exposed offload copies), then bytes sent per "
       "GPU, GPUs, headroom\n";
  o << pad("#", 4) << pad("gpus", 6) << pad("tp", 4) << pad("pp", 4) << pad("vpp", 5)
    << pad("cp", 4) << pad("dp", 6) << pad("ep", 4) << pad("zero", 5) << pad("mb", 4) << pad("m", 6)
    << pad("schedule", 12) << pad("recompute", 20) << pad("bubble", 8) << pad("recomp", 8)
    << pad("offload", 8) << pad("sent/GPU", 12) << pad("device", 12) << "headroom\n";
  int i = 0;
  char pct[3][32];
  for (const auto& l : r["layouts"]) {
    const bool off = l["offload"].get<bool>();
    std::snprintf(pct[0], sizeof pct[0], "%.2f%%", l["bubble_pct"].get<double>());
    std::snprintf(pct[1], sizeof pct[1], "%.2f%%", l["recompute_overhead_pct"].get<double>());
    std::snprintf(pct[2], sizeof pct[2], "%.2f%%", l["offload_exposed_pct"].get<double>());
    o << pad(std::to_string(++i), 4) << pad(std::to_string(u(l["num_gpus"])), 6)
      << pad(std::to_string(u(l["tp"])), 4) << pad(std::to_string(u(l["pp"])), 4)
      << pad(std::to_string(u(l["vpp"])), 5) << pad(std::to_string(u(l["cp"])), 4)
      << pad(std::to_string(u(l["dp"])), 6) << pad(std::to_string(u(l["ep"])), 4)
      << pad(std::to_string(u(l["zero"])), 5) << pad(std::to_string(u(l["micro_batch"])), 4)
      << pad(std::to_string(u(l["micro_batches"])), 6) << pad(text(l["schedule"]), 12)
      << pad(text(l["recompute"]) + (off ? " + offload" : ""), 20) << pad(pct[0], 8)
      << pad(pct[1], 8) << pad(off ? pct[2] : "-", 8)
      << pad(human(static_cast<double>(u(l["comm_bytes"]))), 12)
      << pad(human(static_cast<double>(u(l["device_total_bytes"]))), 12)
      << human(static_cast<double>(l["headroom_bytes"].get<long long>())) << "\n";
  }
  o << "\n";
  for (const auto& note : r["notes"]) o << "note: " << text(note) << "\n";
  return o.str();
}

std::string render_sweep(const json& r) {
  std::ostringstream o;
  const bool budget = r.contains("budget_bytes");
  const unsigned long long cap = budget ? u(r["budget_bytes"]) : 0;
  if (budget) o << "budget " << format_bytes(cap) << "; * marks a cell over it\n";
  o << pad("b \\ s", 8);
  for (const auto& s : r["seqs"]) o << pad(std::to_string(u(s)), 14);
  o << "\n";
  for (std::size_t i = 0; i < r["micro_batches"].size(); ++i) {
    o << pad(std::to_string(u(r["micro_batches"][i])), 8);
    for (const auto& v : r["peak_bytes"][i]) {
      const long long b = v.get<long long>();
      const bool over = budget && b >= 0 && static_cast<unsigned long long>(b) > cap;
      o << pad(b < 0 ? "invalid" : human(static_cast<double>(b)) + (over ? "*" : ""), 14);
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace actmem::cli

namespace actmem::cli {

// compare: measured vs predicted peaks, where the measured peak happened, the largest blocks live
// then with the record each most likely is, and what remains unexplained.
std::string render_compare(const json& r) {
  std::ostringstream o;
  const json& m = r["measured"];
  const json& p = r["predicted"];
  char pct[64];
  o << "snapshot: " << text(m["source"]) << " (" << u(m["trace_events"])
    << " trace events, allocator " << text(m["allocator"]) << ")\n";
  o << "  " << pad("", 24) << pad("measured", 30) << pad("predicted", 30) << "error\n";
  for (const char* k : {"allocated", "reserved"}) {
    const std::string key = std::string(k) + "_peak_bytes";
    std::snprintf(pct, sizeof pct, "%+.1f %%", r["error_pct"][k].get<double>());
    o << "  " << pad((std::string(k) + " peak").c_str(), 24)
      << pad(format_bytes(u(m[key])).c_str(), 30) << pad(format_bytes(u(p[key])).c_str(), 30) << pct
      << "\n";
  }
  if (m["trace"].get<bool>())
    o << "measured peak at trace event " << u(m["peak_event"]) << ": " << text(m["peak_frame"])
      << "\n";
  o << "predicted tensor peak at " << text(p["peak_at"]) << "\n";
  if (!r["largest_blocks"].empty()) {
    o << "\nlargest blocks live at the measured peak\n";
    o << "  " << pad("bytes", 30) << pad("allocated at", 44) << "most likely\n";
    for (const auto& b : r["largest_blocks"])
      o << "  " << pad(format_bytes(u(b["bytes"])).c_str(), 30)
        << pad(text(b["frame"]).substr(0, 42).c_str(), 44)
        << (b["record"].is_null() ? std::string("(no record of this size)") : text(b["record"]))
        << "\n";
    o << "  explained by a record " << format_bytes(u(r["explained_bytes"])) << ", unexplained "
      << format_bytes(u(r["unexplained_bytes"])) << "\n";
  }
  for (const auto& n : r["notes"]) o << "note: " << text(n) << "\n";
  return o.str();
}

}  // namespace actmem::cli
