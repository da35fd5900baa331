// Recompute choices per layer and what each keeps, regenerates and costs.
#include "actmem/setup/policy.hpp"

#include <algorithm>

namespace actmem {

LayerChoice pattern_choice(char letter) {
  for (int i = 0; i < 5; ++i)
    if (kChoiceLetters[i] == letter) return static_cast<LayerChoice>(i);
  switch (letter) {
    case 's':
      return LayerChoice::kSelective;
    case 'c':
      return LayerChoice::kCheckpoint;
    case 'x':
      return LayerChoice::kCustom;
    default:
      return LayerChoice::kKeep;
  }
}

bool offloaded_at(const Recompute& r, std::uint64_t j) {
  if (r.offload) return true;
  if (r.kind != RecomputeKind::kPattern || r.pattern.empty()) return false;
  const char ch = r.pattern[j % r.pattern.size()];
  return ch >= 'a' && ch <= 'z';
}

bool any_offload(const Recompute& r) {
  return r.offload || (r.kind == RecomputeKind::kPattern &&
                       r.pattern.find_first_of(kOffloadLetters) != std::string::npos);
}

LayerChoice choice_at(const Recompute& r, std::uint64_t j) {
  LayerChoice c = LayerChoice::kKeep;
  switch (r.kind) {
    case RecomputeKind::kNone:
      c = LayerChoice::kKeep;
      break;
    case RecomputeKind::kSelective:
      c = LayerChoice::kSelective;
      break;
    case RecomputeKind::kFull:
      c = LayerChoice::kCheckpoint;
      break;
    case RecomputeKind::kEveryK:
      c = j % r.every_k == 0 ? LayerChoice::kCheckpoint : LayerChoice::kRecompute;
      break;
    case RecomputeKind::kCustom:
      c = LayerChoice::kCustom;
      break;
    case RecomputeKind::kPattern:
      c = pattern_choice(r.pattern[j % r.pattern.size()]);
      break;
  }
  // A chunk's first layer has no checkpoint below it inside the chunk: it starts the segment.
  return j == 0 && c == LayerChoice::kRecompute ? LayerChoice::kCheckpoint : c;
}

std::vector<LayerChoice> layer_choices(const Recompute& r, std::uint64_t n) {
  std::vector<LayerChoice> v(n);
  for (std::uint64_t j = 0; j < n; ++j) v[j] = choice_at(r, j);
  return v;
}

namespace {
// The layer's first norm keeps the layer input itself when it has the checkpoint's dtype and
// size: ln1's (before the mixer), or ln2's in an FFN-only layer (Nemotron-H's MLP and MoE layers),
// where it is the layer's first record.
bool is_layer_input(const TensorRecord& t, const LayerInventory& inv) {
  const bool first_norm =
      t.id == "ln1.in" || (t.id == "ln2.in" && !inv.tensors.empty() && &t == &inv.tensors.front());
  return first_norm && t.dtype == inv.checkpoint.dtype && t.bytes == inv.checkpoint.bytes;
}
}  // namespace

bool op_saved(const OpOutput& op, const Recompute& r) {
  if (r.op_policy == "torchtitan") return op.torchtitan_saves;
  return r.ops &&
         std::find(r.custom_keep.begin(), r.custom_keep.end(), op.id) != r.custom_keep.end();
}

LayerCosts layer_costs(const LayerInventory& inv, const Recompute& r, double flops_fwd,
                       double flops_core) {
  LayerCosts k;
  k.checkpoint = inv.checkpoint.bytes;
  k.flops_fwd = flops_fwd;
  k.flops_core = flops_core;
  for (const GradPhase& ph : inv.backward_grads)
    if (ph.bytes > k.grad_peak || k.grad_peak_at.empty())
      k.grad_peak = ph.bytes, k.grad_peak_at = ph.at;
  for (const auto& t : inv.tensors) {
    k.full += t.bytes;
    if (t.attn_core) k.core += t.bytes;
    if (is_layer_input(t, inv)) k.alias = t.bytes;
    const bool named =
        std::find(r.custom_keep.begin(), r.custom_keep.end(), t.id) != r.custom_keep.end();
    if (named) {
      k.custom += t.bytes;
      if (is_layer_input(t, inv)) k.custom_has_input = true;
    } else if (!t.attn_core) {
      k.custom_drops_non_core = true;
    }
  }
  // An op-level policy keeps the saved ops' outputs besides the layer input; its recompute runs
  // the forward but those ops (a saved SDPA spares the attention core).
  if (r.ops || !r.op_policy.empty()) {
    k.by_ops = true;
    double spared = 0;
    for (const OpOutput& op : inv.ops) {
      if (!op_saved(op, r)) continue;
      for (const TensorRecord& t : op.outputs) k.custom_ops += t.bytes;
      spared += op.outputs.size() > 1 ? flops_core : op.flops;
    }
    k.ops_regen_flops = flops_fwd > spared ? flops_fwd - spared : 0;
  }
  return k;
}

Bytes kept_bytes(LayerChoice c, const LayerCosts& k) {
  switch (c) {
    case LayerChoice::kKeep:
      return k.full;
    case LayerChoice::kSelective:
      return k.full - k.core;
    case LayerChoice::kCheckpoint:
      return k.checkpoint;
    case LayerChoice::kRecompute:
      return 0;
    case LayerChoice::kCustom:
      return k.custom + k.custom_ops + (k.custom_has_input ? 0 : k.checkpoint);
  }
  return 0;
}

Bytes regen_bytes(LayerChoice c, const LayerCosts& k) {
  switch (c) {
    case LayerChoice::kKeep:
      return 0;
    case LayerChoice::kSelective:
      return k.core;
    case LayerChoice::kCheckpoint:
      return k.full - k.alias;  // the input is the checkpoint itself
    case LayerChoice::kRecompute:
      return k.full;
    case LayerChoice::kCustom:
      return k.full - k.custom - (k.custom_has_input ? 0 : k.alias);
  }
  return 0;
}

double regen_flops(LayerChoice c, const LayerCosts& k) {
  switch (c) {
    case LayerChoice::kKeep:
      return 0;
    case LayerChoice::kSelective:
      return k.core > 0 ? k.flops_core : 0;  // flash: nothing to redo
    case LayerChoice::kCheckpoint:
    case LayerChoice::kRecompute:
      return k.flops_fwd;
    case LayerChoice::kCustom:
      if (k.by_ops) return k.ops_regen_flops;
      return k.custom_drops_non_core ? k.flops_fwd : (k.core > 0 ? k.flops_core : 0);
  }
  return 0;
}

std::vector<const TensorRecord*> kept_tensors(const LayerInventory& inv, LayerChoice c,
                                              const Recompute& r) {
  std::vector<const TensorRecord*> out;
  bool input_named = false;
  for (const auto& t : inv.tensors) {
    const bool named =
        std::find(r.custom_keep.begin(), r.custom_keep.end(), t.id) != r.custom_keep.end();
    switch (c) {
      case LayerChoice::kKeep:
        out.push_back(&t);
        break;
      case LayerChoice::kSelective:
        if (!t.attn_core) out.push_back(&t);
        break;
      case LayerChoice::kCustom:
        if (named) out.push_back(&t), input_named = input_named || is_layer_input(t, inv);
        break;
      default:
        break;
    }
  }
  if (c == LayerChoice::kCustom)
    for (const OpOutput& op : inv.ops)
      if (op_saved(op, r))
        for (const TensorRecord& t : op.outputs) out.push_back(&t);
  if (c == LayerChoice::kCheckpoint || (c == LayerChoice::kCustom && !input_named))
    out.push_back(&inv.checkpoint);
  return out;
}

bool regenerates_before(const std::vector<LayerChoice>& chunk, const std::vector<Bytes>& regen,
                        std::size_t j, std::size_t* first) {
  return regenerates_before(chunk.data(), regen.data(), chunk.size(), j, first);
}

bool regenerates_before(const LayerChoice* chunk, const Bytes* regen, std::size_t n, std::size_t j,
                        std::size_t* first) {
  const LayerChoice c = chunk[j];
  if (c == LayerChoice::kCheckpoint || c == LayerChoice::kRecompute) {
    if (j + 1 < n && chunk[j + 1] == LayerChoice::kRecompute) return false;  // not the top
    std::size_t s0 = j;
    while (s0 > 0 && chunk[s0] == LayerChoice::kRecompute) --s0;
    *first = s0;
    return true;
  }
  *first = j;
  return regen[j] > 0;
}

std::string policy_name(const std::vector<LayerChoice>& chunk, const Recompute& r) {
  const auto uniform = layer_choices(r, chunk.size());
  if (uniform == chunk) return recompute_name(r);
  std::string s = "layers:";
  for (LayerChoice c : chunk) s += kChoiceLetters[static_cast<int>(c)];
  return s;
}

}  // namespace actmem
