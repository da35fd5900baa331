// Builds the immutable setup of a request: normalization, validation, each layer kind's geometry,
// inventory, FLOPs and parameters, each pipeline rank's layers and static memory, the KV cache and
// the step's transient sizes (docs/architecture.md).
#include "actmem/setup/setup.hpp"

#include <algorithm>

#include "actmem/config/sharding.hpp"
#include "actmem/core/text.hpp"

#include "inventory/builder.hpp"
#include "setup/optimizer_step.hpp"
#include "setup/overflow.hpp"

namespace actmem {

namespace {

// One layer's parameter records per kind, on one GPU.
using KindParams = std::vector<std::vector<ParamRecord>>;

// The parameters outside the layers: the embedding, the head (with the final norm) and, training
// with MTP, its depths.
struct OuterParams {
  std::vector<ParamRecord> embed, head, mtp;
};

// A rank's static memory depends only on how many layers of each kind it holds and whether it
// holds the embedding or the head, so ranks alike (the middle ranks of an even split) share one
// computation.
struct Seen {
  std::vector<std::uint64_t> counts;
  bool first, last;
  StaticMemory stat;
};

Bytes record_bytes(const std::vector<TensorRecord>& v, const char* id) {
  for (const auto& r : v)
    if (r.id == id) return r.bytes;
  return 0;
}

// Bytes of parameter records held at `width` bytes per element (every copy), overflow checked.
Bytes params_bytes(const std::vector<ParamRecord>& v, Bytes width, const char* field, Checked& ck) {
  Bytes n = 0;
  for (const ParamRecord& q : v)
    n = ck.add(n, ck.mul(ck.mul(q.rows, q.cols, field), q.copies, field), field);
  return ck.mul(n, width, field);
}

// Training with MTP (DeepSeek-V3, Sec. 2.2): after the model's own head and loss, each depth
// keeps, per micro-batch, the shifted tokens' embedding its enorm reads, the concatenation its
// eh_proj reads (the other half, hnorm's input, is the hidden state the final norm already keeps),
// one layer of the last layer's kind with no recompute, and its own pass through the output
// layer (shared_head norm, the shared head, its loss): the output layer's records again. They are
// added to the output layer, which the last pipeline stage holds from the loss until backward.
std::optional<Error> add_mtp_records(Setup& e) {
  static constexpr const char* kScopes[kMaxMtpDepths] = {"mtp1.", "mtp2.", "mtp3.", "mtp4."};
  constexpr const char* kSrc =
      "DeepSeek-V3 (arXiv 2412.19437), Sec. 2.2, multi-token prediction: each depth's embedding "
      "norm, projection, transformer layer and shared output head";
  const ModelSpec& m = e.model;
  std::vector<TensorRecord>& out = e.kinds[0].inventory.output_layer;
  const std::vector<TensorRecord> head = out;
  const KindEstimate& layer = e.kind_at(m.layers - 1);
  const LayerGeometry& g = layer.geometry;
  Checked ck;
  for (std::uint64_t d = 0; d < m.mtp_layers && d < kMaxMtpDepths; ++d) {
    std::vector<TensorRecord> add;
    detail::RecordBuilder rb(&add, &ck);
    rb.add("emb_norm.in", {g.b, g.s_rep, g.h}, g.act, "enorm backward",
           "the shifted tokens' embedding the depth's norm reads", kSrc);
    rb.add("eh_proj_in", {g.b, g.s_rep, Dim{"2", 2}, g.h}, g.act, "eh_proj backward",
           "[hnorm(h); enorm(emb)], the projection's input", kSrc);
    for (const TensorRecord& r : layer.inventory.tensors) add.push_back(r);
    for (const TensorRecord& r : head) add.push_back(r);
    for (TensorRecord& r : add) r.scope = kScopes[d];
    out.insert(out.end(), add.begin(), add.end());
  }
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), e.config);
  return std::nullopt;
}

// Fills the config's defaults around validate(): seq before it (validate checks the defaulted
// seq), the dropouts and the micro-batch count after it (validate checks them as given).
std::optional<Error> normalize_config(const ModelSpec& m, TrainConfig& c) {
  if (c.seq == 0) c.seq = default_seq(m);
  if (auto err = validate(m, c)) return nest_model_fields(*err, m.field);
  if (c.attention_dropout < 0) c.attention_dropout = m.attention_dropout;
  if (c.hidden_dropout < 0) c.hidden_dropout = m.hidden_dropout;
  c.grad_accum = default_micro_batches(c);
  return std::nullopt;
}

// Split-backward schedules: what one layer of the kind keeps from its I to its W (each linear's
// input and output gradient); a kind without those records cannot be split.
std::optional<Error> set_wgrad_keep(const LayerKind& lk, std::size_t ki, const TrainConfig& c,
                                    KindEstimate& ke, Checked& ck) {
  if (!is_split_backward(effective_schedule(c))) return std::nullopt;
  if (ke.inventory.wgrad_dy.empty())
    return make_error("invalid_value", "config.schedule",
                      "config.schedule: " + std::string(schedule_name(effective_schedule(c))) +
                          " splits each backward into input and weight gradients, which needs "
                          "every linear's input as a record; layer kind " +
                          std::to_string(ki) + " is " + split_refusal(lk) +
                          "; allowed for this model: gpipe, 1f1b, interleaved");
  for (const TensorRecord& t : ke.inventory.tensors)
    if (t.wgrad_input) ke.wgrad_keep = ck.add(ke.wgrad_keep, t.bytes, "timeline");
  for (const TensorRecord& t : ke.inventory.wgrad_dy)
    ke.wgrad_keep = ck.add(ke.wgrad_keep, t.bytes, "timeline");
  return std::nullopt;
}

// One layer's parameters of the kind on one GPU: bytes as gathered, elements, largest tensor.
void set_kind_params(const std::vector<ParamRecord>& params, const TrainConfig& c, KindEstimate& ke,
                     Checked& ck) {
  for (const auto& q : params) {
    const Bytes n = ck.mul(ck.mul(q.rows, q.cols, "static.params"), q.copies, "static.params");
    ke.param_bytes = ck.add(ke.param_bytes, ck.mul(n, gather_width(q, c), "static"), "static");
    ke.param_elems = ck.add(ke.param_elems, n, "static");
    // The optimizer step's temporaries follow the trainable tensors (LoRA: the adapters).
    if (!q.frozen)
      ke.largest_param = std::max<Bytes>(ke.largest_param, ck.mul(q.rows, q.cols, "static"));
  }
}

// Resolves layer kind `ki` once: its geometry, inventory, FLOPs and per-layer parameters (appended
// to kind_params).
std::optional<Error> resolve_kind(const ModelSpec& m, std::size_t ki, const TrainConfig& c,
                                  const ParamShards& shards, KindEstimate& ke,
                                  KindParams& kind_params, Checked& ck) {
  const LayerKind& lk = m.kinds[ki];
  auto geo = resolve_geometry(m, lk, c, c.act_dtype, c.attention_dropout, c.hidden_dropout);
  if (!geo.ok()) return geo.error();
  ke.geometry = geo.value();
  auto inv = build_inventory(m, lk, ke.geometry, c.profile);
  if (!inv.ok()) return inv.error();
  ke.inventory = std::move(inv.value());
  if (auto err = set_wgrad_keep(lk, ki, c, ke, ck)) return err;
  ke.flops = layer_flops(lk, ke.geometry);
  kind_params.push_back(layer_params(m, lk, shards));
  if (c.lora.on()) apply_lora_params(m, lk, c.lora, &kind_params.back());
  set_kind_params(kind_params.back(), c, ke, ck);
  return std::nullopt;
}

// Every layer kind, resolved once (Setup::kinds, in model.kinds order).
std::optional<Error> resolve_kinds(Setup& e, const ParamShards& shards, KindParams& kind_params,
                                   Checked& ck) {
  const ModelSpec& m = e.model;
  const std::vector<std::uint64_t> model_counts = m.kind_counts(0, m.layers);
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    KindEstimate ke;
    if (auto err = resolve_kind(m, ki, e.config, shards, ke, kind_params, ck)) return err;
    ke.layers = model_counts[ki];
    e.kinds.push_back(std::move(ke));
  }
  e.logits_flops = e.kinds[0].flops.logits;
  return std::nullopt;
}

// The whole model's parameter counts, MTP depths apart.
std::optional<Error> set_model_params(Setup& e) {
  auto total = total_params(e.model);
  if (!total.ok()) return total.error();
  e.model_params = total.value();
  auto mtp = mtp_params(e.model);
  if (!mtp.ok()) return mtp.error();
  e.mtp_params = mtp.value();
  return std::nullopt;
}

OuterParams outer_params(const ModelSpec& m, const TrainConfig& c, const ParamShards& shards) {
  OuterParams o{embedding_params(m, shards), head_params(m, shards, c.par.pp > 1), {}};
  // LoRA freezes the embedding, the final norm and the head (peft
  // _mark_only_adapters_as_trainable).
  if (c.lora.on())
    for (auto* v : {&o.embed, &o.head})
      for (ParamRecord& q : *v) q.frozen = true;
  // Training with MTP: its depths live on the last pipeline stage with the head they share.
  if (c.mtp) o.mtp = mtp_param_records(m, shards);
  return o;
}

// Each chunk's first global layer is the sum of the sizes of the stages before its stage.
void set_chunk_first(std::vector<RankSetup>& ranks, std::uint64_t chunks, std::uint64_t stages) {
  std::vector<std::uint64_t> stage_size(stages, 0);
  for (const RankSetup& s : ranks)
    for (std::uint64_t ci = 0; ci < chunks; ++ci) stage_size[s.chunk_stage[ci]] = s.chunk_sizes[ci];
  std::vector<std::uint64_t> stage_first(stages, 0);
  for (std::uint64_t st = 1; st < stages; ++st)
    stage_first[st] = stage_first[st - 1] + stage_size[st - 1];
  for (RankSetup& s : ranks)
    for (std::uint64_t ci = 0; ci < chunks; ++ci)
      s.chunk_first[ci] = stage_first[s.chunk_stage[ci]];
}

// Each pipeline rank's layers: its chunks' sizes, stages and first layers.
void lay_out_ranks(Setup& e) {
  const ModelSpec& m = e.model;
  const TrainConfig& c = e.config;
  const Parallel& p = c.par;
  e.ranks.resize(p.pp);
  const Schedule sched = effective_schedule(c);
  // DualPipe runs every stage on two ranks (DeepSeek-V3 report, Sec. 3.2.1: "two copies of the
  // model parameters"): rank r holds stage r for the micro-batches entering at rank 0 and stage
  // p-1-r for those entering at rank p-1; the model is cut into p stages, layer_split giving each
  // stage's layers (deepseek-ai/DualPipe takes any module per stage: DeepSeek-V3's 61 layers on
  // 16 ranks cannot be cut evenly).
  const bool dual = sched == Schedule::kDualPipe;
  const std::uint64_t chunks = dual ? 2 : p.vpp, stages = p.pp * p.vpp;
  for (std::uint64_t r = 0; r < p.pp; ++r) {
    RankSetup& s = e.ranks[r];
    s.index = r;
    auto split_at = [&](std::uint64_t i) {
      return c.layer_split.empty() ? m.layers / p.pp : c.layer_split[i];
    };
    const std::uint64_t per = split_at(r), mirror = split_at(p.pp - 1 - r);
    s.layers = dual ? per + mirror : per;
    // A rank's layers spread over its v chunks as evenly as possible (earlier chunks get the
    // extra); DualPipe's two chunks are stage r and stage p-1-r.
    for (std::uint64_t ci = 0; ci < chunks; ++ci)
      s.chunk_sizes.push_back(dual ? (ci == 0 ? per : mirror)
                                   : per / p.vpp + (ci < per % p.vpp ? 1 : 0));
    for (std::uint64_t ci = 0; ci < chunks; ++ci) {
      std::uint64_t st = ci * p.pp + r;  // Megatron-LM: model chunk c·p + r
      if (is_v_shape(sched) && ci == 1) st = 2 * p.pp - 1 - r;
      if (dual) st = ci == 0 ? r : p.pp - 1 - r;
      s.chunk_stage.push_back(st);
      if (st == 0) s.embed_chunk = static_cast<std::uint32_t>(ci);
      if (st == stages - 1) s.head_chunk = static_cast<std::uint32_t>(ci);
    }
    s.chunk_first.assign(chunks, 0);
  }
  set_chunk_first(e.ranks, chunks, stages);
}

// How many layers of each kind a rank holds, over its chunks.
std::vector<std::uint64_t> rank_kind_counts(const ModelSpec& m, const RankSetup& s) {
  std::vector<std::uint64_t> counts(m.kinds.size(), 0);
  for (std::uint64_t ci = 0; ci < s.chunk_sizes.size(); ++ci) {
    if (m.kinds.size() == 1) {
      counts[0] += s.chunk_sizes[ci];
      continue;
    }
    const auto n = m.kind_counts(s.chunk_first[ci], s.chunk_sizes[ci]);
    for (std::size_t ki = 0; ki < n.size(); ++ki) counts[ki] += n[ki];
  }
  return counts;
}

// TransformerEngine fp8 (docs/frameworks.md, "Float8"): each block linear's fp8 weight and
// transpose, cached for the run (1 B each per weight), and four TE modules per layer (qkv
// and fc1 LayerNormLinear, proj and fc2 Linear), each with fp8_meta of 4 x (5L + 10) bytes.
Bytes fp8_weight_caches(const ModelSpec& m, const TrainConfig& c,
                        const std::vector<std::uint64_t>& counts, const KindParams& kind_params,
                        Checked& ck) {
  const char* f = "static.fp8_weights_bytes";
  const Bytes meta = ck.mul(4 * 4, ck.add(ck.mul(5, c.fp8_amax_history, f), 10, f), f);
  Bytes fp8 = 0;
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    if (counts[ki] == 0) continue;
    Bytes layer = meta;
    for (const ParamRecord& q : kind_params[ki])
      if (is_block_linear(q)) layer = ck.add(layer, ck.mul(2, ck.mul(q.rows, q.cols, f), f), f);
    fp8 = ck.add(fp8, ck.mul(layer, counts[ki], f), f);
  }
  return fp8;
}

// The FSDP root's parameters, those outside the blocks: the embedding where the rank holds it,
// the final norm, head and MTP depths where it holds the head (FSDP2's root group; verl's FSDP1
// root unit, set_fsdp1_root). FSDP2 in torch 2.6, the torch of torchtitan's table, never
// reshards its root group after forward (_fsdp_state.py: the root's post_forward_mesh_info =
// None; torch 2.8 and later honour an explicit reshard_after_forward=True, pytorch PR #154704,
// measured in docs/validation.md 4.6), and torchtitan leaves the last
// block gathered (parallelize_llama.py l.325-339: reshard_after_forward = layer_id <
// n_layers - 1): both stay gathered from their forward to their backward, through the step's
// activation peak. The rank with the head holds the last layer in every placement.
// verl's FSDP2 makes an untied embedding a group of its own (sharding.hpp verl_fsdp2): `embed`
// false leaves it out of the root.
std::vector<ParamRecord> fsdp_root(bool first, bool last, const OuterParams& outer,
                                   bool embed = true) {
  std::vector<ParamRecord> root;
  if (first && embed) root.insert(root.end(), outer.embed.begin(), outer.embed.end());
  if (last) {
    root.insert(root.end(), outer.head.begin(), outer.head.end());
    root.insert(root.end(), outer.mtp.begin(), outer.mtp.end());
  }
  return root;
}

bool embed_in_root(const ModelSpec& m, const TrainConfig& c) {
  return !verl_fsdp2(c) || m.tied_embeddings;
}

Bytes fsdp2_gathered(const ModelSpec& m, const TrainConfig& c, bool first, bool last,
                     const OuterParams& outer, const KindParams& kind_params, Checked& ck) {
  std::vector<ParamRecord> root = fsdp_root(first, last, outer);
  if (last) {
    const auto& lp = kind_params[m.kind_index(m.layers - 1)];
    root.insert(root.end(), lp.begin(), lp.end());
  }
  return gathered_bytes(root, c, "static.gathered_params_bytes", ck);
}

// The parameter tensors one GPU holds, against kMaxParamTensors (limits.hpp): counted before the
// device replay allocates each (a model of 10^9 experts aborted it with bad_alloc). Only routed
// experts can pass it, so the refusal names the expert count of the kind with the most.
std::optional<Error> check_param_tensors(const ModelSpec& m, const std::vector<ParamRecord>& v) {
  std::uint64_t n = 0;
  for (const ParamRecord& q : v)
    n = q.copies > kMaxParamTensors - n ? kMaxParamTensors + 1 : n + q.copies;
  if (n <= kMaxParamTensors) return std::nullopt;
  // The kind with the most experts is the one to shard (or correct).
  std::string field = m.field + ".num_hidden_layers";
  std::uint64_t most = 0;
  for (const LayerKind& k : m.kinds)
    if (k.is_moe() && k.moe.experts > most) {
      most = k.moe.experts;
      field = k.field + ".num_local_experts";
    }
  return make_error("invalid_value", field,
                    field + ": one GPU would hold more than " + std::to_string(kMaxParamTensors) +
                        " parameter tensors (each routed expert's weights are tensors of their "
                        "own), more than the device replay allocates; shard the experts with ep, "
                        "or use more pipeline stages");
}

// One rank's static memory: one set of parameters per layer it holds, per kind, the embedding
// and head where it holds them, and the fp8 caches and FSDP2's gathered parameters.
std::optional<Error> rank_static_memory(const ModelSpec& m, const TrainConfig& c,
                                        const std::vector<std::uint64_t>& counts, bool first,
                                        bool last, const KindParams& kind_params,
                                        const OuterParams& outer, Checked& ck, StaticMemory& stat) {
  std::vector<ParamRecord> scaled;
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    if (counts[ki] == 0) continue;
    for (ParamRecord q : kind_params[ki]) {
      q.copies = ck.mul(q.copies, counts[ki], "static.params");
      scaled.push_back(q);
    }
  }
  if (first) scaled.insert(scaled.end(), outer.embed.begin(), outer.embed.end());
  if (last) scaled.insert(scaled.end(), outer.head.begin(), outer.head.end());
  if (last) scaled.insert(scaled.end(), outer.mtp.begin(), outer.mtp.end());
  auto st = static_memory(scaled, c);
  if (!st.ok()) return st.error();  // an overflow names its own field first
  if (auto err = check_param_tensors(m, scaled)) return err;
  stat = st.value();
  if (c.float8 == Float8::kDelayed) {
    const Bytes fp8 = fp8_weight_caches(m, c, counts, kind_params, ck);
    stat.fp8_weights_bytes = fp8;
    stat.total_bytes = ck.add(stat.total_bytes, fp8, "static.fp8_weights_bytes");
  }
  if (fsdp2_buffers(c) && !verl_fsdp2(c)) {  // torchtitan's root group and last block
    stat.gathered_params_bytes = fsdp2_gathered(m, c, first, last, outer, kind_params, ck);
    stat.total_bytes =
        ck.add(stat.total_bytes, stat.gathered_params_bytes, "static.gathered_params_bytes");
  }
  return std::nullopt;
}

// Every rank's static memory, computed once per distinct rank (Seen).
std::optional<Error> set_rank_statics(Setup& e, const KindParams& kind_params,
                                      const OuterParams& outer, Checked& ck) {
  const ModelSpec& m = e.model;
  std::vector<Seen> seen;
  for (RankSetup& s : e.ranks) {
    const std::vector<std::uint64_t> counts = rank_kind_counts(m, s);
    const bool first = s.embed_chunk != RankSetup::kNoChunk,
               last = s.head_chunk != RankSetup::kNoChunk;
    if (fsdp2_gathers(e.config))
      s.fsdp_root_gather = gathered_bytes(fsdp_root(first, last, outer, embed_in_root(m, e.config)),
                                          e.config, "device.fsdp2_root_gather", ck);
    const Seen* hit = nullptr;
    for (const Seen& x : seen)
      if (x.first == first && x.last == last && x.counts == counts) hit = &x;
    if (hit) {
      s.stat = hit->stat;
      continue;
    }
    if (auto err =
            rank_static_memory(m, e.config, counts, first, last, kind_params, outer, ck, s.stat))
      return err;
    seen.push_back(Seen{counts, first, last, s.stat});
  }
  return std::nullopt;
}
// verl's actor loss (framework.hpp, kLogprob): what the forward and backward allocate beyond what
// they keep, from the code (verl b178a3c dp_actor.py and torch_functional.py; flash-attn 058ad35
// cross_entropy.py), N = b x s tokens, X = N x V in the logits' dtype. Forward: the eager
// entropy's pd * logits product (X; with checkpointing the softmax as well, 2X), one fp32 chunk
// product for the chunked entropy (2,048 tokens, verl's chunk). Backward: div_'s gradient
// (grad / temperature, X) always; a second X where the log-probability's gradient is not written
// into the logits (flash-attn's inplace_backward is off once the entropy is computed; the torch
// fallback's per-row gradients are stacked).
static void set_rl_loss_transients(Setup& e, const LayerGeometry& g0, Checked& ck) {
  const TrainConfig& c = e.config;
  const char* lf = "timeline.loss";
  const Bytes n = ck.mul(g0.b.value, g0.s_tp.value, lf);
  const Bytes x = ck.mul(ck.mul(n, g0.v.value, lf), dtype_bytes(c.act_dtype), lf);
  switch (c.loss.entropy) {
    case Entropy::kNone:
    case Entropy::kCompiled:
      break;
    case Entropy::kEager:
      e.loss_fwd_ws = x;
      break;
    case Entropy::kCheckpoint:
      e.loss_fwd_ws = ck.mul(x, 2, lf);
      break;
    case Entropy::kChunked:
      e.loss_fwd_ws = ck.mul(ck.mul(std::min<Bytes>(n, 2048), g0.v.value, lf), 4, lf);
      break;
  }
  e.loss_bwd_bufs[0] = x;
  if (c.loss.entropy != Entropy::kNone || c.loss.impl == LossImpl::kLogprobTorch)
    e.loss_bwd_bufs[1] = x;
}

// TRL's GRPO loss (huggingface/trl f2cd577 grpo_trainer.py _get_per_token_logps_and_entropies,
// utils.py entropy_from_logits), from the code, X = b x R x V and X1 = b x (R + 1) x V in the
// logits' dtype. Forward: the logits (X1, freed when the loss returns), the entropy's
// reshape(-1, V) of the [:, :-1] view (a copy, X) and one chunk's log_softmax, exp and product
// (3 x min(128, b x R) rows of V). Backward: the rows' gradients stacked by unbind's backward (X)
// and the logits' gradient (X1), which the slice and the in-place division write into.
static void set_trl_loss_transients(Setup& e, const LayerGeometry& g0, Checked& ck) {
  const char* lf = "timeline.loss";
  const Bytes w = dtype_bytes(e.config.act_dtype);
  const Bytes rows = ck.mul(g0.b.value, g0.response.value, lf);
  const Bytes x = ck.mul(ck.mul(rows, g0.v.value, lf), w, lf);
  const Bytes x1 =
      ck.mul(ck.mul(ck.mul(g0.b.value, g0.response.value + 1, lf), g0.v.value, lf), w, lf);
  const Bytes chunk = ck.mul(ck.mul(std::min<Bytes>(rows, 128), g0.v.value, lf), w, lf);
  e.loss_fwd_ws = ck.add(ck.add(x1, x, lf), ck.mul(chunk, 3, lf), lf);
  e.loss_bwd_bufs[0] = x;
  e.loss_bwd_bufs[1] = x1;
}

// TRL's DPO loss (huggingface/trl f2cd577 dpo_trainer.py _compute_loss), from the code, X = b x s
// x V and X1 = b x (s - 1) x V in the logits' dtype. Forward, the larger of: the reference's
// forward under no_grad beside the policy's logits (X, held by outputs until the loss returns):
// the widest layer's working set over b x s tokens (widest_layer_width, an estimate) and ZeRO-3's
// gather of a layer; and later both models' logits (2X) with the entropy's reshape copy of the
// shifted view (X1) and one 128-row chunk's log_softmax, exp and product. Backward: the rows'
// stacked gradients (X1) and the logits' gradient (X).
static void set_dpo_loss_transients(Setup& e, const LayerGeometry& g0, Checked& ck) {
  const char* lf = "timeline.loss";
  const Bytes w = dtype_bytes(e.config.act_dtype);
  const Bytes tokens = ck.mul(g0.b.value, g0.s_tp.value, lf);
  const Bytes rows = ck.mul(g0.b.value, g0.s_tp.value - 1, lf);
  const Bytes x = ck.mul(ck.mul(tokens, g0.v.value, lf), w, lf);
  const Bytes x1 = ck.mul(ck.mul(rows, g0.v.value, lf), w, lf);
  const Bytes chunk = ck.mul(ck.mul(std::min<Bytes>(rows, 128), g0.v.value, lf), w, lf);
  const Bytes reference =
      ck.add(ck.mul(ck.mul(tokens, widest_layer_width(e.model, 1), lf), w, lf), e.zero3_gather, lf);
  e.loss_fwd_ws = std::max(ck.add(x, reference, lf),
                           ck.add(ck.add(ck.mul(x, 2, lf), x1, lf), ck.mul(chunk, 3, lf), lf));
  e.loss_bwd_bufs[0] = x1;
  e.loss_bwd_bufs[1] = x;
}

// Step-wide transients (docs/schedules.md): the input and output layers' records, the cuBLAS
// workspace and SP's gather of the layer input.
void set_step_sizes(Setup& e, Checked& ck) {
  const TrainConfig& c = e.config;
  const Parallel& p = c.par;
  const LayerInventory& io = e.io();
  for (const auto& r : io.input_layer) e.in_bytes = ck.add(e.in_bytes, r.bytes, "timeline");
  for (const auto& r : io.output_layer) e.out_bytes = ck.add(e.out_bytes, r.bytes, "timeline");
  // TransformerEngine's comm-overlap GEMMs take their own cuBLAS workspaces: three where there was
  // one (Megatron-LM --tp-comm-overlap with TE v1.13; docs/frameworks.md, "Async TP").
  e.workspace = c.async_tp && c.profile == Profile::kMegatron
                    ? ck.mul(c.cublas_workspace, 3, "config.cublas_workspace_bytes")
                    : c.cublas_workspace;
  // The layer input is b·s·h for every kind; SP gathers it to the full sequence.
  e.sp_gather =
      p.sp && p.tp > 1 ? ck.mul(e.kinds[0].costs.checkpoint, p.tp, "timeline.sp_allgather") : 0;
}

// The loss's buffers in its forward and backward (config.loss).
void set_loss_buffers(Setup& e, Checked& ck) {
  const TrainConfig& c = e.config;
  const LayerInventory& io = e.io();
  // X: the fp32 logits (Megatron-LM's softmax, PyTorch's log-softmax) the eager loss keeps;
  // each implementation's transients follow from it (docs/frameworks.md, "The loss").
  const Bytes x = std::max(record_bytes(io.output_layer, "logits.fp32"),
                           record_bytes(io.output_layer, "loss.log_softmax_out"));
  const LayerGeometry& g0 = e.kinds[0].geometry;
  const char* lf = "timeline.loss";
  switch (c.loss.impl) {
    case LossImpl::kEager:
      e.loss_fwd_ws = x, e.loss_bwd_bufs[0] = x, e.loss_bwd_bufs[1] = x;
      // F.cross_entropy(pred.float()) where the logits are no record (not hf's ModelOutput):
      // pred lives through the upcast and the log-softmax (torchtitan 9dec370 train.py: `del
      // pred` after the loss).
      if (record_bytes(io.output_layer, "loss.log_softmax_out") > 0 &&
          record_bytes(io.output_layer, "logits") == 0)
        e.loss_logits = ck.mul(ck.mul(ck.mul(g0.b.value, g0.s_tp.value, lf), g0.v.value, lf),
                               dtype_bytes(c.act_dtype), lf);
      break;
    case LossImpl::kParallel: {
      // torch 2.6.0 distributed/tensor/parallel/loss.py on the vocabulary shards, X = N x V/t
      // in fp32. Forward (_log_softmax): beside the head's output (torchtitan's pred, deleted
      // only after the loss: train.py l.302-307) and its fp32 copy, `shifted` lives until the
      // result is made, with exp(shifted) before it (the same 3.5X at both moments).
      // Backward (_nll_loss_and_log_softmax_backward, which also does log_softmax's: its
      // handler only casts): grad_input = zeros_like(x), then (grad_input + exp(x)) *
      // grad_output holds grad_input, the sum and the product beside the saved output.
      const Bytes n = ck.mul(ck.mul(g0.b.value, g0.s_tp.value, lf), g0.v.value, lf);
      e.loss_fwd_ws = ck.add(ck.mul(2, x, lf), ck.mul(n, dtype_bytes(c.act_dtype), lf), lf);
      e.loss_bwd_bufs[0] = e.loss_bwd_bufs[1] = e.loss_bwd_bufs[2] = x;
      break;
    }
    case LossImpl::kChunked:
      // One chunk upcast at a time (torchtune CEWithChunkedOutputLoss, PR #1390).
      e.loss_fwd_ws = ceil_div(x, c.loss.chunks);
      e.loss_bwd_bufs[0] = e.loss_bwd_bufs[1] = e.loss_fwd_ws;
      break;
    case LossImpl::kCompiled:
      // The fused kernel's only large buffer is the bf16 logits' gradient (measured:
      // tests/reference/loss_saved.py, docs/validation.md).
      e.loss_bwd_bufs[0] = ck.mul(ck.mul(ck.mul(g0.b.value, g0.s_tp.value, lf), g0.v.value, lf),
                                  dtype_bytes(c.act_dtype), lf);
      break;
    case LossImpl::kFused:
      // One [chunk, V] logits chunk in the input's dtype (Liger-Kernel 77ff1a9
      // fused_linear_cross_entropy.py: chunk_size = next_power_of_2(cdiv(BT, cdiv(V, H)))).
      e.loss_fwd_ws = ck.mul(ck.mul(liger_chunk(g0), g0.v.value, lf), dtype_bytes(c.act_dtype), lf);
      break;
    case LossImpl::kLogprob:
    case LossImpl::kLogprobTorch:
      set_rl_loss_transients(e, g0, ck);
      break;
    case LossImpl::kLogprobTrl:
      set_trl_loss_transients(e, g0, ck);
      break;
    case LossImpl::kDpoTrl:
      set_dpo_loss_transients(e, g0, ck);
      break;
    case LossImpl::kLogprobOpenrlhf: {
      // OpenRLHF 3c3be62 models/actor.py l.267: the bf16 logits live while their fp32 copy is
      // made; flash-attn 2.8.3's cross entropy backward writes a new fp32 gradient
      // (inplace_backward off), and the cast's backward a bf16 one.
      const Bytes n = ck.mul(ck.mul(g0.b.value, g0.s_tp.value, lf), g0.v.value, lf);
      e.loss_fwd_ws = ck.mul(n, dtype_bytes(c.act_dtype), lf);
      e.loss_bwd_bufs[0] = ck.mul(n, 4, lf);
      e.loss_bwd_bufs[1] = ck.mul(n, dtype_bytes(c.act_dtype), lf);
      // +entropy: the compiled entropy's backward writes a second fp32 gradient of the logits,
      // which autograd adds into the first before the cast's backward runs (torch 2.6
      // input_buffer.cpp accumulate, in place): two fp32 gradients at once, then one and the
      // bf16 one (from the code, not measured).
      if (c.loss.entropy == Entropy::kCompiled)
        e.loss_bwd_bufs[1] = std::max(e.loss_bwd_bufs[1], ck.mul(n, 4, lf));
      break;
    }
    case LossImpl::kValue:  // one value per token: no vocabulary-wide buffer
      break;
  }
}

// The largest layer's ZeRO-3 gather and gradient peak.
void set_layer_peaks(Setup& e) {
  const TrainConfig& c = e.config;
  const Parallel& p = c.par;
  for (const KindEstimate& ke : e.kinds) {
    if (p.zero >= 3 && !gathers_resident(c) && !fsdp2_buffers(c))
      e.zero3_gather = std::max(e.zero3_gather, ke.param_bytes);
    if (e.grad_peak_at.empty() || ke.costs.grad_peak > e.grad_peak)
      e.grad_peak = ke.costs.grad_peak, e.grad_peak_at = ke.costs.grad_peak_at;
  }
}

// verl's FSDP1 root unit (fsdp1_root_held: one rank of the pipeline, the embedding, final norm
// and head in one FlatParameter). Gathered: padded to a multiple of the shard group (torch 2.6
// fsdp/_flat_param.py _get_shard: torch.chunk's ceil(R / ranks) elements a rank; verl's
// use_orig_params false leaves no alignment padding), in the compute dtype, from the root's
// pre-forward to its post-backward at the end of each micro-batch's backward
// (_runtime_utils.py _post_forward_reshard never frees the root after forward). That
// post-backward holds the most of two moments: autograd joins the views' gradients into one
// flat gradient of R elements (SplitWithSizesBackward's cat) while the root is still gathered
// and the pieces are alive; then _post_backward_hook reshards the root and, on its
// post-backward stream, casts the gradient to fp32 (reduce_dtype), pads it to the shard group
// (_get_reduce_scatter_tensors: F.pad when R is not a multiple) and reduce-scatters it into the
// rank's fp32 shard. A frozen root (LoRA) has no gradient: it is resharded by
// _catch_all_reshard at the end of backward, nothing reduced.
void set_fsdp1_root(Setup& e, const OuterParams& outer, Checked& ck) {
  const TrainConfig& c = e.config;
  if (!fsdp1_root_held(c)) return;
  const char* f = "timeline.fsdp_root_unit";
  const std::vector<ParamRecord> root = fsdp_root(true, true, outer);
  const std::uint64_t r = params_bytes(root, 1, f, ck), ranks = shard_ranks(c.par);
  const std::uint64_t padded = ck.mul(ceil_div(r, ranks), ranks, f);
  const Bytes w = dtype_bytes(gather_dtype(c));
  e.fsdp_root_held = ck.mul(padded, w, f);
  const bool trainable =
      std::none_of(root.begin(), root.end(), [](const ParamRecord& q) { return q.frozen; });
  if (!trainable) return;
  // The joined gradient, and its pieces before the join; held + 2 x grad and grad + reduce are
  // checked here so that Setup::fsdp_root_post_backward's sums cannot wrap.
  e.fsdp_root_grad = ck.mul(r, w, f);
  // The rank's fp32 shard it returns becomes the gradient (_accumulate_sharded_gradient), which
  // the static gradients line already counts.
  e.fsdp_root_reduce = ck.mul(r, 4, f);
  if (padded != r) e.fsdp_root_reduce = ck.add(e.fsdp_root_reduce, ck.mul(padded, 4, f), f);
  // Made in backward (grads_in_backward): the rank's shard beside the cast gradient it is
  // reduced from.
  if (grads_in_backward(c))
    e.fsdp_root_shard = ck.mul(padded / ranks, dtype_bytes(c.grad_dtype), f);
  ck.add(ck.add(e.fsdp_root_held, ck.mul(e.fsdp_root_grad, 2, f), f),
         ck.add(e.fsdp_root_reduce, e.fsdp_root_shard, f), f);
}

// verl's FSDP2 (validate.cpp: every layer resharded): the root group's per-parameter copies, held
// in forward and backward (set_verl_fsdp2 says when), and the untied embedding's group apart;
// before the layer transients, which hold the root.
void set_verl_fsdp2_root(Setup& e, const OuterParams& outer, Checked& ck) {
  const TrainConfig& c = e.config;
  if (!verl_fsdp2(c)) return;
  const bool tied = embed_in_root(e.model, c);
  e.fsdp_root_held = gathered_bytes(fsdp_root(true, true, outer, tied), c, "timeline", ck);
  if (!tied) e.fsdp2_embed = gathered_bytes(outer.embed, c, "timeline", ck);
  e.first_prefetch = e.fsdp2_embed;
}

// The gradient shards each layer's post-backward makes (grads_in_backward): one stage holds every
// layer (pp 1), each layer's shard its elements in the gradients' dtype over the shard group, as
// the static line divides them (params.cpp static_memory).
void set_grads_made(Setup& e, Checked& ck) {
  const TrainConfig& c = e.config;
  if (!grads_in_backward(c)) return;
  const char* f = "timeline";
  const std::uint64_t ranks = shard_ranks(c.par), n = e.model.layers;
  e.grads_made_before.assign(n, 0);
  Bytes above = 0;
  for (std::uint64_t g = n; g-- > 0;) {
    e.grads_made_before[g] = above;
    above = ck.add(
        above, ceil_div(ck.mul(e.kind_at(g).param_elems, dtype_bytes(c.grad_dtype), f), ranks), f);
  }
  e.grads_made_root = above;
}

// The root group's gradients in the compute dtype, held from the head's backward until the
// root's post-backward at the end of backward (FSDP2: the group's unsharded gradients; verl's
// FSDP1: the FlatParameter's views' gradients, which autograd joins only when the embedding's
// arrives): the final norm's and the head's, the head's matrix included when it is the
// embedding's (tied: the head's use's gradient waits for the embedding's backward to add its
// own). Frozen parameters (LoRA) have none.
Bytes root_grad_bytes(const ModelSpec& m, const TrainConfig& c, const OuterParams& outer,
                      Checked& ck) {
  std::vector<ParamRecord> v;
  for (const ParamRecord& q : outer.head)
    if (!q.frozen) v.push_back(q);
  const bool value_head = c.loss.impl == LossImpl::kValue;
  if (m.tied_embeddings && !value_head)
    for (const ParamRecord& q : outer.embed)
      if (!q.frozen && q.id == "embed.tokens") v.push_back(q);
  return params_bytes(v, dtype_bytes(gather_dtype(c)), "timeline.fsdp_root_grads", ck);
}

// FSDP2 under torchtitan (docs/frameworks.md, "FSDP2's buffers"): forward keeps a group's flat
// all-gather result beside its per-parameter copies until the next group's copy-in
// (_fsdp_param_group.py all_gather_state); backward prefetches the previous group and holds the
// layer's unsharded gradients in the compute dtype until their copy into the fp32 reduce-scatter
// input, while the previous group's input lives on until this group's post-backward frees it
// (comm_ctx.reduce_scatter_state = None) just before allocating its own (foreach_reduce): one
// reduce-scatter input at a time (torch 2.6.0 _fsdp_param_group.py post_backward). The root
// group's unsharded gradients (head, final norm) wait for the root's post-backward at the end of
// backward (single stage; under pipelining they are accumulate_unsharded's static line).
void set_layer_transients(Setup& e, const OuterParams& outer, Checked& ck) {
  const TrainConfig& c = e.config;
  const Parallel& p = c.par;
  const bool fsdp2 = fsdp2_buffers(c);
  if ((fsdp2 || fsdp1_root_held(c)) && p.pp == 1)
    e.fsdp_root_grads = root_grad_bytes(e.model, c, outer, ck);
  for (KindEstimate& ke : e.kinds) {
    const char* f = "timeline.peak_bytes";
    // ZeRO-3 gathers a layer for its forward and again for its backward, unless FSDP keeps the
    // stage gathered (a static line then: params.cpp gathered_params_bytes).
    Bytes gather_fwd = p.zero >= 3 && !gathers_resident(c) ? ke.param_bytes : 0;
    Bytes gather_bwd = gather_fwd;
    if (fsdp1_root_held(c)) {
      // verl's FSDP1: a unit is one FlatParameter, gathered padded to the shard group (torch 2.6
      // _flat_param.py _get_shard); FSDP's default backward_prefetch BACKWARD_PRE (verl sets
      // none: fsdp_workers.py l.527-539) gathers the previous unit at each unit's pre-backward
      // (_runtime_utils.py _pre_backward_hook, _prefetch_handle), so a layer's backward and its
      // recompute (checkpointing runs inside the unit's backward) hold two.
      const std::uint64_t ranks = shard_ranks(p);
      gather_fwd = ck.mul(ck.mul(ceil_div(ke.param_elems, ranks), ranks, f),
                          dtype_bytes(gather_dtype(c)), f);
      ke.prefetch = gather_fwd;
      gather_bwd = ck.mul(gather_fwd, 2, f);
    }
    if (fsdp2) {
      // Forward: the all-gather output and the copies; backward: the copies, the prefetched
      // layer (the same bytes as the output, KindEstimate::prefetch), the unsharded gradients and
      // the fp32 reduce-scatter input.
      const Bytes elems = ke.param_elems;
      ke.prefetch = ke.param_bytes;
      gather_fwd = ck.mul(2, ke.param_bytes, f);
      gather_bwd =
          ck.add(ck.mul(3, ke.param_bytes, f), ck.mul(elems, dtype_bytes(c.grad_dtype), f), f);
    }
    ke.fsdp_fwd = gather_fwd;
    ke.fsdp_bwd = gather_bwd;
    gather_fwd = ck.add(gather_fwd, e.fsdp_root_held, f);
    gather_bwd = ck.add(ck.add(gather_bwd, e.fsdp_root_grads, f), e.fsdp_root_held, f);
    ke.trans_fwd = ck.add(ck.add(e.workspace, e.sp_gather, f), gather_fwd, f);
    // A recompute runs inside backward, after the head's: the root's gradients are held, and
    // under FSDP2 the layer above's reduce-scatter input until this layer's post-backward.
    ke.fsdp2_rs_input = fsdp2 ? ck.mul(ke.param_elems, dtype_bytes(c.grad_dtype), f) : 0;
    // FSDP1's prefetched unit beside the forward's gathered one (FSDP2's forward buffers count
    // the same two layers already).
    ke.trans_rec = ck.add(ck.add(ck.add(ke.trans_fwd, e.fsdp_root_grads, f), ke.fsdp2_rs_input, f),
                          fsdp2 ? 0 : ke.prefetch, f);
    ke.trans_bwd = ck.add(ck.add(ck.add(e.workspace, e.sp_gather, f), gather_bwd, f),
                          ck.add(ke.costs.grad_peak, p.dp > 1 ? c.grad_bucket : 0, f), f);
  }
}

// torchtitan's last block at one stage: gathered in its forward and kept to its post-backward as
// a static line (fsdp2_gathered), which the walk's layer events count once (fill_layers).
void set_titan_last_block(Setup& e) {
  if (fsdp2_buffers(e.config) && !verl_fsdp2(e.config) && e.config.par.pp == 1)
    e.fsdp2_last_kept = e.kind_at(e.model.layers - 1).param_bytes;
}

// verl's FSDP2 (sharding.hpp verl_fsdp2; docs/frameworks.md, "verl's FSDP2"), moment by moment as
// torch 2.9's fully_shard runs each group (unshard() allocates a group's all-gather output before
// wait_for_unshard() frees the one held; the copy-out makes the per-parameter copies):
// - forward's start: the root gathered (output and copies), then the untied embedding's group
//   (its output beside the root's, then its copies and the embedding's output), then layer 0's
//   output beside the embedding's (tied: the root's); the input side's records are counted
//   throughout (the rotary tables come after the embedding: at most their bytes over);
// - the head's backward: the root gathered again beside the loss's buffers, then layer L-1
//   prefetched in place of its output;
// - layer 0's backward prefetches the embedding's group (tied: nothing), not a layer;
// - the end of backward: the embedding's copies and gradient beside layer 0's reduce-scatter
//   input, then its own input (layer 0's freed), then the root's post-backward in the final
//   callback: the root resharded, its input beside its unsharded gradients.
void set_verl_fsdp2(Setup& e, const OuterParams& outer, Checked& ck) {
  if (!verl_fsdp2(e.config)) return;
  const TrainConfig& c = e.config;
  const char* f = "timeline";
  const Bytes root = e.fsdp_root_held, emb = e.fsdp2_embed, in = e.in_bytes;
  const Bytes p0 = e.kind_at(0).param_bytes, last = e.kind_at(e.model.layers - 1).param_bytes;
  const Bytes gw = dtype_bytes(c.grad_dtype);
  const bool tied = emb == 0;
  // The embedding's output, the first layer's input (one rank of tp = cp = 1: validate.cpp).
  const Bytes out = ck.mul(ck.mul(ck.mul(c.micro_batch, c.seq, f), e.model.hidden, f),
                           dtype_bytes(c.act_dtype), f);
  // The input side's records (token ids, rotary tables) counted from the start.
  if (tied)
    e.fsdp2_forward_start = ck.add(ck.add(ck.add(root, in, f), out, f), p0, f);
  else
    e.fsdp2_forward_start =
        ck.add(ck.add(emb, in, f), std::max(root, ck.add(out, std::max(emb, p0), f)), f);
  e.fsdp2_loss_bwd = std::max(root, last);
  const Bytes rg = e.fsdp_root_grads;
  const std::vector<ParamRecord> rp = fsdp_root(true, true, outer, tied);
  const Bytes root_in = params_bytes(rp, gw, f, ck);
  // Made in backward (grads_in_backward): each group's shard beside the input it is reduced
  // from, kept (the embedding's before the root's).
  const bool made = grads_in_backward(c);
  const std::uint64_t ranks = shard_ranks(c.par);
  const Bytes root_shard = made ? ceil_div(root_in, ranks) : 0;
  const Bytes emb_in = tied ? 0 : params_bytes(outer.embed, gw, f, ck);
  e.fsdp2_embed_reduce = emb_in;
  const Bytes emb_shard = made ? ceil_div(emb_in, ranks) : 0;
  Bytes pb = ck.add(ck.add(rg, root_in, f), ck.add(emb_shard, root_shard, f), f);
  if (!tied) {
    const Bytes rs0 = ck.mul(e.kind_at(0).param_elems, gw, f);
    const Bytes held = ck.add(root, rg, f);
    pb = std::max({pb, ck.add(ck.add(held, ck.mul(emb, 2, f), f), rs0, f),
                   ck.add(ck.add(ck.add(held, emb, f), emb_in, f), emb_shard, f)});
  }
  e.fsdp2_post_backward = pb;
}

// KV cache for inference, kept apart from training activations (seed 002_13aa127c0ff0c20b.txt:
// 2 · 2 · L · H · d · s · b with H the KV heads, GQA-aware), summed over the layers of each kind.
void set_kv_cache_total(Setup& e, Checked& ck) {
  const ModelSpec& m = e.model;
  const TrainConfig& c = e.config;
  const Bytes pw = dtype_bytes(c.act_dtype);
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    const LayerKind& lk = m.kinds[ki];
    e.kv_cache.total_bytes =
        ck.add(e.kv_cache.total_bytes,
               ck.mul(ck.mul(ck.mul(pw, e.kinds[ki].layers, "kv_cache"),
                             kv_cache_width(lk, lk.kv_heads, ck), "kv_cache"),
                      ck.mul(kv_tokens(lk, c.seq), c.micro_batch, "kv_cache"), "kv_cache"),
               "kv_cache");
  }
}

// The KV cache per GPU: the pipeline rank holding the most, its kv heads divided by TP, its
// tokens by CP.
void set_kv_cache_per_gpu(Setup& e, Checked& ck) {
  const ModelSpec& m = e.model;
  const TrainConfig& c = e.config;
  const Bytes pw = dtype_bytes(c.act_dtype);
  for (const RankSetup& s : e.ranks) {
    Bytes stage_kv = 0;
    for (std::uint64_t ci = 0; ci < c.par.vpp; ++ci)
      for (std::uint64_t j = 0; j < s.chunk_sizes[ci]; ++j) {
        const std::uint64_t layer = s.chunk_first[ci] + j;
        const LayerGeometry& lg = e.kind_at(layer).geometry;
        stage_kv = ck.add(
            stage_kv,
            ck.mul(ck.mul(pw, kv_cache_width(m.kind_of(layer), lg.kv.value, ck), "kv_cache"),
                   ck.mul(kv_tokens(m.kind_of(layer), lg.s_tp.value), c.micro_batch, "kv_cache"),
                   "kv_cache"),
            "kv_cache");
      }
    e.kv_cache.per_gpu_bytes = std::max(e.kv_cache.per_gpu_bytes, stage_kv);
  }
}

}  // namespace

std::uint64_t kv_cache_width(const LayerKind& k, std::uint64_t kv, Checked& ck) {
  if (!k.has_attention()) return 0;  // Mamba-2 and MLP layers cache no keys or values
  if (k.is_mla()) return ck.add(k.mla.kv_lora_rank, k.mla.qk_rope_dim, "kv_cache");
  return ck.mul(ck.mul(2, kv, "kv_cache"), k.head_dim, "kv_cache");
}

// A windowed layer (sliding window, Llama 4's chunks) caches its last `window` tokens only
// (transformers' sliding-window cache layers); full attention caches every token.
std::uint64_t kv_tokens(const LayerKind& k, std::uint64_t tokens) {
  return k.window > 0 ? std::min(k.window, tokens) : tokens;
}

std::optional<Error> set_policy_costs(Setup& s, const Recompute& r) {
  // An op-level policy needs every kind's ops named (inventory/ops.cpp), and op:LIST ids that
  // name ops of some kind; a kind without them would silently keep only its input.
  if (r.ops || !r.op_policy.empty()) {
    for (std::size_t ki = 0; ki < s.kinds.size(); ++ki)
      if (s.kinds[ki].inventory.ops.empty())
        return make_error(
            "invalid_value", "config.recompute",
            "config.recompute: '" + shown_text(recompute_name(r)) +
                "' saves op outputs, which the engine names for dense attention and MLP layers "
                "under the pytorch and hf profiles; layer kind " +
                std::to_string(ki) + " ('" + shown_text(s.model.kinds[ki].name) +
                "') has none (allowed here: custom with record ids, or another policy)");
    for (const std::string& id : r.ops ? r.custom_keep : std::vector<std::string>{}) {
      bool known = false;
      std::string ids;
      for (const OpOutput& op : s.kinds[0].inventory.ops)
        ids += (ids.empty() ? "" : ", ") + std::string(op.id);
      for (const KindEstimate& ke : s.kinds)
        for (const OpOutput& op : ke.inventory.ops) known = known || op.id == id;
      if (!known)
        return make_error("invalid_value", "config.recompute",
                          "config.recompute: op '" + shown_text(id) +
                              "' is not an op of this layer; allowed: " + ids);
    }
    for (KindEstimate& ke : s.kinds)
      ke.costs = layer_costs(ke.inventory, r, ke.flops.total, ke.flops.attention_core);
    return std::nullopt;
  }
  // A custom-kept id must name a record of at least one layer kind; each kind keeps those it has.
  for (std::size_t i = 0; i < r.custom_keep.size(); ++i) {
    const std::string& id = r.custom_keep[i];
    bool known = false;
    std::string ids;
    std::vector<std::string_view> listed;  // each id once, in inventory order
    for (const KindEstimate& ke : s.kinds)
      for (const auto& t : ke.inventory.tensors) {
        known = known || t.id == id;
        if (std::find(listed.begin(), listed.end(), t.id) != listed.end()) continue;
        listed.push_back(t.id);
        ids += (ids.empty() ? "" : ", ") + std::string(t.id);
      }
    if (!known)
      return make_error("invalid_value", "config.custom_keep[" + std::to_string(i) + "]",
                        "config.custom_keep[" + std::to_string(i) + "]: '" + shown_text(id) +
                            "' is not a tensor of this layer under the " +
                            profile_name(s.config.profile) + " profile; allowed: " + ids);
  }
  for (KindEstimate& ke : s.kinds)
    ke.costs = layer_costs(ke.inventory, r, ke.flops.total, ke.flops.attention_core);
  return std::nullopt;
}

// An MoE layer's working set per token: each of its top-k experts' gate/up, activation and output
// (vLLM's fused_moe caches [T, k, 2f], [T, k, f], [T, k, h]; the grouped experts alike), the
// router's fp32 logits (two bf16 units per expert), and the shared experts' gate, up and
// activation.
std::uint64_t widest_layer_width(const ModelSpec& m, std::uint64_t tp) {
  std::uint64_t w = 0;
  for (const LayerKind& k : m.kinds) {
    std::uint64_t ffn = 3 * k.ffn_hidden / tp;
    if (k.is_moe())
      ffn = k.moe.top_k * (3 * k.moe.expert_ffn / tp + m.hidden) + 2 * k.moe.experts +
            3 * k.moe.shared_experts * k.moe.shared_expert_ffn / tp;
    w = std::max(w, 2 * m.hidden + (k.heads + 2 * k.kv_heads) * k.head_dim / tp + ffn);
  }
  return w;
}

std::uint64_t default_seq(const ModelSpec& m) {
  return m.pos == PosEncoding::kLearned && m.max_positions > 0
             ? std::min<std::uint64_t>(2048, m.max_positions)
             : 2048;
}

Result<Setup> make_setup(const ModelSpec& m, const TrainConfig& c_in) {
  Setup e;
  e.model = m;
  e.config = c_in;
  if (auto err = normalize_config(m, e.config)) return *err;
  const TrainConfig& c = e.config;
  // One overflow record for the whole setup: the first field to overflow is the one named.
  Checked ck;
  const ParamShards shards{c.par.tp, c.par.ep, c.loss.impl == LossImpl::kValue};
  KindParams kind_params;
  if (auto err = resolve_kinds(e, shards, kind_params, ck)) return *err;
  if (auto err = set_model_params(e)) return *err;
  const OuterParams outer = outer_params(m, c, shards);
  lay_out_ranks(e);
  if (auto err = set_rank_statics(e, kind_params, outer, ck)) return *err;
  if (auto err = set_policy_costs(e, c.recompute)) return *err;
  if (c.mtp)
    if (auto err = add_mtp_records(e)) return *err;
  set_step_sizes(e, ck);
  set_layer_peaks(e);  // before the loss: DPO's reference forward gathers a layer under ZeRO-3
  set_loss_buffers(e, ck);
  detail::set_optimizer_step(e, outer.embed, outer.head, ck);
  set_fsdp1_root(e, outer, ck);
  set_verl_fsdp2_root(e, outer, ck);
  set_layer_transients(e, outer, ck);
  set_grads_made(e, ck);
  set_titan_last_block(e);
  set_verl_fsdp2(e, outer, ck);
  set_kv_cache_total(e, ck);
  set_kv_cache_per_gpu(e, ck);
  if (ck.overflowed()) return detail::activation_overflow(ck.field(), c);
  e.param_records = ParamRecords{std::move(kind_params), outer.embed, outer.head, outer.mtp};
  return e;
}

}  // namespace actmem
