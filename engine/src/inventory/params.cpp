// Parameter records per GPU and static memory (ZeRO: Rajbhandari et al. 2020, Sec. 5; 16
// bytes/param for mixed-precision Adam, the seed 002_13aa127c0ff0c20b.txt "16Psi").
#include "actmem/inventory/params.hpp"

#include "actmem/config/sharding.hpp"

namespace actmem {

namespace {

void push(std::vector<ParamRecord>& v, const char* id, std::uint64_t rows, std::uint64_t cols,
          ParamPlace place, bool expert = false, std::uint64_t copies = 1) {
  if (rows == 0 || cols == 0 || copies == 0) return;
  v.push_back(ParamRecord{id, rows, cols, place, expert, copies});
}

void push_norm(std::vector<ParamRecord>& v, const ModelSpec& m, const char* w, const char* b,
               ParamPlace place) {
  push(v, w, m.hidden, 1, place);
  if (m.norm == NormType::kLayerNorm) push(v, b, m.hidden, 1, place);
}

}  // namespace

std::vector<ParamRecord> layer_params(const ModelSpec& m, const LayerKind& k,
                                      const ParamShards& s) {
  std::vector<ParamRecord> v;
  const std::uint64_t t = s.tp;
  const std::uint64_t a = tp_shard(k.heads, t);
  const std::uint64_t kv = tp_kv_heads(k.kv_heads, t);
  const std::uint64_t qkv_out = (a + 2 * kv) * k.head_dim;
  if (k.is_mamba()) {
    // Mamba2Mixer / NemotronHMamba2Mixer (Megatron-LM MambaMixer under TP: in_proj
    // column-parallel, out_proj row-parallel, conv1d, dt_bias, A_log, D and the gated norm's
    // weight split with the heads and groups).
    const MambaSpec x = k.mamba.split(t);
    const std::uint64_t conv = x.conv_dim(), in_proj = x.in_proj_dim();
    push_norm(v, m, "ln1.weight", "ln1.bias", ParamPlace::kLayer);
    push(v, "mamba.in_proj.weight", m.hidden, in_proj, ParamPlace::kLayer);
    if (x.proj_bias) push(v, "mamba.in_proj.bias", in_proj, 1, ParamPlace::kLayer);
    push(v, "mamba.conv1d.weight", conv, x.conv_kernel, ParamPlace::kLayer);
    if (x.conv_bias) push(v, "mamba.conv1d.bias", conv, 1, ParamPlace::kLayer);
    push(v, "mamba.dt_bias_A_log_D", x.heads, 3, ParamPlace::kLayer);
    push(v, "mamba.norm.weight", x.inner(), 1, ParamPlace::kLayer);
    push(v, "mamba.out_proj.weight", x.inner(), m.hidden, ParamPlace::kLayer);
    if (x.proj_bias) push(v, "mamba.out_proj.bias", m.hidden, 1, ParamPlace::kLayer);
  }
  if (k.has_attention()) push_norm(v, m, "ln1.weight", "ln1.bias", ParamPlace::kLayer);
  if (k.has_attention() && k.is_mla()) {
    // DeepseekV3Attention: the down projections (and their latent norms) on every TP rank, the
    // up projections column-parallel over heads, o_proj row-parallel (DeepSeek-V3
    // inference/model.py: wq_a, wkv_a Linear; wq_b, wkv_b ColumnParallelLinear).
    const MlaSpec& l = k.mla;
    if (l.q_lora_rank > 0) {
      push(v, "attn.q_down.weight", m.hidden, l.q_lora_rank, ParamPlace::kLayer);
      push(v, "attn.q_latent_norm.weight", l.q_lora_rank, 1, ParamPlace::kLayer);
      push(v, "attn.q_up.weight", l.q_lora_rank, a * k.head_dim, ParamPlace::kLayer);
    } else {
      push(v, "attn.q.weight", m.hidden, a * k.head_dim, ParamPlace::kLayer);
    }
    push(v, "attn.kv_down.weight", m.hidden, l.kv_lora_rank + l.qk_rope_dim, ParamPlace::kLayer);
    push(v, "attn.kv_latent_norm.weight", l.kv_lora_rank, 1, ParamPlace::kLayer);
    push(v, "attn.kv_up.weight", l.kv_lora_rank, a * (l.qk_nope_dim + l.v_head_dim),
         ParamPlace::kLayer);
    push(v, "attn.o.weight", a * l.v_head_dim, m.hidden, ParamPlace::kLayer);
  } else if (k.has_attention()) {
    // Column-parallel QKV, row-parallel output projection (Shoeybi et al. 2019, Sec. 3).
    push(v, "attn.qkv.weight", m.hidden, qkv_out, ParamPlace::kLayer);
    if (k.qkv_bias) push(v, "attn.qkv.bias", qkv_out, 1, ParamPlace::kLayer);
    // Qwen3RMSNorm(head_dim) on q and on k: one weight each, replicated on every TP rank.
    if (k.qk_norm) {
      push(v, "attn.q_norm.weight", k.head_dim, 1, ParamPlace::kLayer);
      push(v, "attn.k_norm.weight", k.head_dim, 1, ParamPlace::kLayer);
    }
    push(v, "attn.o.weight", a * k.head_dim, m.hidden, ParamPlace::kLayer);
    if (k.o_bias) push(v, "attn.o.bias", m.hidden, 1, ParamPlace::kLayer);  // replicated
  }
  // gpt-oss's sinks: one logit per query head (GptOssAttention.sinks), split with the heads.
  if (k.has_attention() && k.attn_sinks) push(v, "attn.sinks", a, 1, ParamPlace::kLayer);
  if (!k.has_ffn) return v;
  // Falcon-7B's parallel block normalizes once for attention and MLP (input_layernorm).
  if (m.block != BlockLayout::kParallel)
    push_norm(v, m, "ln2.weight", "ln2.bias", ParamPlace::kLayer);
  // Gemma's post-attention and post-feedforward norms (Gemma2DecoderLayer): sandwich models have
  // attention and an FFN in every layer.
  if (m.sandwich_norm) {
    push_norm(v, m, "attn.post_norm.weight", "attn.post_norm.bias", ParamPlace::kLayer);
    push_norm(v, m, "mlp.post_norm.weight", "mlp.post_norm.bias", ParamPlace::kLayer);
  }
  const std::uint64_t glu = is_gated(k.ffn) ? 2 : 1;
  if (k.is_moe()) {
    const MoeSpec& e = k.moe;
    push(v, "moe.router.weight", m.hidden, e.experts, ParamPlace::kLayer);
    // DeepSeek-V3's aux-loss-free balancing bias, one per expert (DeepseekV3TopkRouter).
    if (e.score_bias) push(v, "moe.router.score_bias", e.experts, 1, ParamPlace::kLayer);
    // gpt-oss's router: F.linear(x, weight, bias) (GptOssTopKRouter.bias).
    if (e.router_bias) push(v, "moe.router.bias", e.experts, 1, ParamPlace::kLayer);
    const std::uint64_t local_experts = e.experts / s.ep;
    const std::uint64_t fe = tp_shard(e.expert_ffn, t);
    // One matrix per local expert (Adafactor factors each separately).
    push(v, "moe.experts.fc1.weight", m.hidden, glu * fe, ParamPlace::kLayer, true, local_experts);
    push(v, "moe.experts.fc2.weight", fe, m.hidden, ParamPlace::kLayer, true, local_experts);
    // Expert biases (gpt-oss: gate_up_proj_bias, down_proj_bias), as a dense MLP's: the first
    // split with its columns, the second whole on every TP rank.
    if (k.mlp_bias) {
      push(v, "moe.experts.fc1.bias", glu * fe, 1, ParamPlace::kLayer, true, local_experts);
      push(v, "moe.experts.fc2.bias", m.hidden, 1, ParamPlace::kLayer, true, local_experts);
    }
    const std::uint64_t fs = tp_shard(e.shared_experts * e.shared_expert_ffn, t);
    push(v, "moe.shared.fc1.weight", m.hidden, glu * fs, ParamPlace::kLayer);
    push(v, "moe.shared.fc2.weight", fs, m.hidden, ParamPlace::kLayer);
    if (k.mlp_bias && fs > 0) {
      push(v, "moe.shared.fc1.bias", glu * fs, 1, ParamPlace::kLayer);
      push(v, "moe.shared.fc2.bias", m.hidden, 1, ParamPlace::kLayer);
    }
  } else {
    const std::uint64_t f = tp_shard(k.ffn_hidden, t);
    push(v, "mlp.fc1.weight", m.hidden, glu * f, ParamPlace::kLayer);
    if (k.mlp_bias) push(v, "mlp.fc1.bias", glu * f, 1, ParamPlace::kLayer);
    push(v, "mlp.fc2.weight", f, m.hidden, ParamPlace::kLayer);
    if (k.mlp_bias) push(v, "mlp.fc2.bias", m.hidden, 1, ParamPlace::kLayer);
  }
  return v;
}

std::vector<ParamRecord> embedding_params(const ModelSpec& m, const ParamShards& s) {
  std::vector<ParamRecord> v;
  // Vocab-parallel embedding: each TP rank holds ceil(V/t) rows.
  push(v, "embed.tokens", vocab_shard(m.vocab, s.tp), m.hidden, ParamPlace::kEmbedding);
  if (m.pos == PosEncoding::kLearned)
    push(v, "embed.positions", m.max_positions, m.hidden, ParamPlace::kEmbedding);
  return v;
}

std::vector<ParamRecord> head_params(const ModelSpec& m, const ParamShards& s,
                                     bool separate_stage) {
  std::vector<ParamRecord> v;
  push_norm(v, m, "final_norm.weight", "final_norm.bias", ParamPlace::kHead);
  // Tied embeddings share the embedding matrix, except that with pipeline parallelism the last
  // stage holds its own copy (Megatron-LM keeps the two in sync with an all-reduce).
  if (s.value_head) {
    // transformers modeling_layers.py GenericForTokenClassification: nn.Linear(hidden_size,
    // num_labels=1), bias=token_classification_bias (True).
    push(v, "score.weight", 1, m.hidden, ParamPlace::kHead);
    push(v, "score.bias", 1, 1, ParamPlace::kHead);
    return v;
  }
  if (!m.tied_embeddings || separate_stage)
    push(v, "lm_head.weight", vocab_shard(m.vocab, s.tp), m.hidden, ParamPlace::kHead);
  // PhiMoE's lm_head carries a bias (lm_head_bias), split with the vocabulary.
  if (m.lm_head_bias) push(v, "lm_head.bias", vocab_shard(m.vocab, s.tp), 1, ParamPlace::kHead);
  return v;
}

Result<std::uint64_t> total_params(const ModelSpec& m) {
  Checked ck;
  ParamShards one;
  std::uint64_t n = 0;
  const std::vector<std::uint64_t> counts = m.kind_counts(0, m.layers);
  for (std::size_t ki = 0; ki < m.kinds.size(); ++ki) {
    std::uint64_t per_layer = 0;
    for (const auto& p : layer_params(m, m.kinds[ki], one))
      per_layer =
          ck.add(per_layer, ck.mul(ck.mul(p.rows, p.cols, "model"), p.copies, "model"), "model");
    n = ck.add(n, ck.mul(per_layer, counts[ki], "model.num_hidden_layers"), "model");
  }
  for (const auto& p : embedding_params(m, one))
    n = ck.add(n, ck.mul(p.rows, p.cols, "model"), "model");
  for (const auto& p : head_params(m, one, false))
    n = ck.add(n, ck.mul(p.rows, p.cols, "model"), "model");
  if (ck.overflowed())
    return make_error("overflow", ck.field(),
                      ck.field() + ": the parameter count would exceed 2^63-1");
  return n;
}

std::vector<ParamRecord> mtp_param_records(const ModelSpec& m, const ParamShards& s) {
  // DeepSeek-V3 (arXiv 2412.19437), Sec. 2.2: each depth normalizes the hidden state and the
  // next token's embedding (hnorm, enorm), projects their concatenation (eh_proj, 2h x h, kept
  // whole on every TP rank here), runs one transformer layer (the last layer's kind) and
  // normalizes before the head it shares with the model, as is the embedding (the checkpoint's
  // layer 61 also stores copies of both).
  std::vector<ParamRecord> v;
  if (m.mtp_layers == 0 || m.layers == 0) return v;
  for (ParamRecord q : layer_params(m, m.kind_of(m.layers - 1), s)) {
    q.copies *= m.mtp_layers;  // bounded: copies <= experts, mtp_layers validated
    v.push_back(q);
  }
  const std::uint64_t norms = m.norm == NormType::kLayerNorm ? 2 : 1;
  push(v, "mtp.norms.weight", m.hidden, 3 * norms, ParamPlace::kHead, false, m.mtp_layers);
  push(v, "mtp.eh_proj.weight", 2 * m.hidden, m.hidden, ParamPlace::kHead, false, m.mtp_layers);
  return v;
}

Result<std::uint64_t> mtp_params(const ModelSpec& m) {
  Checked ck;
  std::uint64_t n = 0;
  for (const auto& p : mtp_param_records(m, ParamShards{}))
    n = ck.add(n,
               ck.mul(ck.mul(p.rows, p.cols, "model"), p.copies, "model.num_nextn_predict_layers"),
               "model");
  if (ck.overflowed())
    return make_error("overflow", ck.field(),
                      ck.field() + ": the parameter count would exceed 2^63-1");
  return n;
}

static Bytes one_tensor_state_bytes(Optimizer o, DType state, const ParamRecord& p, Checked& ck);

DType weight_dtype(const ParamRecord& p, const TrainConfig& c) {
  return p.adapter ? c.lora.dtype : c.param_dtype;
}

DType grad_dtype_of(const ParamRecord& p, const TrainConfig& c) {
  return p.adapter ? c.lora.dtype : c.grad_dtype;
}

bool keeps_master(const ParamRecord& p, const TrainConfig& c) {
  return !p.frozen && c.master_weights && weight_dtype(p, c) != DType::kFp32;
}

DType optimizer_state_dtype(const ParamRecord& p, const TrainConfig& c) {
  if (!p.adapter || dtype_bytes(c.lora.dtype) <= dtype_bytes(c.optimizer_dtype))
    return c.optimizer_dtype;
  return c.lora.dtype;
}

Bytes optimizer_state_bytes(Optimizer o, DType state, const ParamRecord& p, Checked& ck) {
  return ck.mul(one_tensor_state_bytes(o, state, p, ck), p.copies, "static.optimizer_bytes");
}

static Bytes one_tensor_state_bytes(Optimizer o, DType state, const ParamRecord& p, Checked& ck) {
  const Bytes n = ck.mul(p.rows, p.cols, "static.optimizer_bytes");
  switch (o) {
    case Optimizer::kAdamW:
    case Optimizer::kSgd:
    case Optimizer::kSgdMomentum: {
      std::uint64_t per = 0;
      optimizer_bytes_per_element(o, dtype_bytes(state), &per);
      return ck.mul(n, per, "static.optimizer_bytes");
    }
    case Optimizer::kAdam8bit:
      // bitsandbytes: tensors under 4096 elements stay 32-bit; larger ones keep two uint8 states
      // plus one fp32 absmax per 2048-element block per state (Dettmers et al. 2022, Sec. 2).
      if (n < 4096) return ck.mul(n, 8, "static.optimizer_bytes");
      return ck.add(ck.mul(n, 2, "static.optimizer_bytes"),
                    ck.mul(ceil_div(n, 2048), 8, "static.optimizer_bytes"),
                    "static.optimizer_bytes");
    case Optimizer::kAdafactor:
      // Factored second moment, no first moment (Shazeer & Stern 2018, Sec. 3): r + c fp32 values
      // for a matrix, n for a vector.
      if (p.cols > 1 && p.rows > 1)
        return ck.mul(ck.add(p.rows, p.cols, "static.optimizer_bytes"), 4,
                      "static.optimizer_bytes");
      return ck.mul(n, 4, "static.optimizer_bytes");
  }
  return 0;
}

void apply_lora_params(const ModelSpec& m, const LayerKind& k, const Lora& l,
                       std::vector<ParamRecord>* v) {
  // Every base tensor frozen (peft _mark_only_adapters_as_trainable; biases too, bias="none").
  const std::uint64_t h = m.hidden, q = k.heads * k.head_dim, kv = k.kv_heads * k.head_dim,
                      f = k.ffn_hidden;
  const bool gated = is_gated(k.ffn);
  for (ParamRecord& p : *v) {
    p.frozen = true;
    if (!l.qlora) continue;
    // bitsandbytes quantizes each nn.Linear weight of the blocks on its own (transformers keeps
    // norms, embeddings and lm_head unquantized); the merged records split back into them.
    const std::string_view id = p.id;
    if (id == "attn.qkv.weight")
      p.nf4_bytes = nf4_bytes(h * q) + 2 * nf4_bytes(h * kv);
    else if (id == "attn.o.weight")
      p.nf4_bytes = nf4_bytes(q * h);
    else if (id == "mlp.fc1.weight")
      p.nf4_bytes = (gated ? 2 : 1) * nf4_bytes(h * f);
    else if (id == "mlp.fc2.weight")
      p.nf4_bytes = nf4_bytes(f * h);
  }
  // Each targeted linear's adapters: A [r, in] and B [out, r] (peft lora.Linear update_layer).
  struct Linear {
    const char* name;
    const char* a_id;
    const char* b_id;
    std::uint64_t in, out;
  };
  const Linear linears[] = {
      {"q_proj", "lora.q_proj.A", "lora.q_proj.B", h, q},
      {"k_proj", "lora.k_proj.A", "lora.k_proj.B", h, kv},
      {"v_proj", "lora.v_proj.A", "lora.v_proj.B", h, kv},
      {"o_proj", "lora.o_proj.A", "lora.o_proj.B", q, h},
      {"gate_proj", "lora.gate_proj.A", "lora.gate_proj.B", h, f},
      {"up_proj", "lora.up_proj.A", "lora.up_proj.B", h, f},
      {"down_proj", "lora.down_proj.A", "lora.down_proj.B", f, h},
      {"fc1", "lora.fc1.A", "lora.fc1.B", h, f},
      {"fc2", "lora.fc2.A", "lora.fc2.B", f, h},
  };
  for (const Linear& x : linears) {
    if (!l.targets_linear(x.name)) continue;
    ParamRecord a, b;
    a.id = x.a_id, a.rows = l.rank, a.cols = x.in, a.adapter = true;
    b.id = x.b_id, b.rows = x.out, b.cols = l.rank, b.adapter = true;
    v->push_back(a);
    v->push_back(b);
  }
}

Bytes nf4_bytes(std::uint64_t n) {
  const std::uint64_t blocks = ceil_div(n, 64);
  return ceil_div(n, 2) + blocks + 4 * ceil_div(blocks, 256) + 4 + 16 * 4 + 256 * 4;
}

Bytes gather_width(const ParamRecord& q, const TrainConfig& c) {
  return c.float8_all_gather && is_block_linear(q) ? 1 : dtype_bytes(gather_dtype(c));
}

Bytes gathered_bytes(const std::vector<ParamRecord>& v, const TrainConfig& c, const char* field,
                     Checked& ck) {
  Bytes n = 0;
  for (const ParamRecord& q : v)
    n = ck.add(
        n,
        ck.mul(ck.mul(ck.mul(q.rows, q.cols, field), q.copies, field), gather_width(q, c), field),
        field);
  return n;
}

const std::vector<StaticLine>& static_lines() {
  using P = StaticPlace;
  static const std::vector<StaticLine> kLines = {
      {"params_bytes", "params", "parameters", "parameters", "parameters",
       &StaticMemory::params_bytes, P::kCore, true},
      {"grads_bytes", "grads", "gradients", "gradients", "gradients", &StaticMemory::grads_bytes,
       P::kCore, true},
      {"master_bytes", "master", "master weights", "master weights", "master weights",
       &StaticMemory::master_bytes, P::kCore, true},
      {"optimizer_bytes", "optimizer", "optimizer states", "optimizer", "optimizer states",
       &StaticMemory::optimizer_bytes, P::kCore, true},
      // FSDP residency (docs/frameworks.md): held when a switch or FSDP2's root group keeps them.
      {"gathered_params_bytes", "gathered", "gathered parameters (FSDP)",
       "gathered parameters (FSDP)", "gathered parameters (FSDP)",
       &StaticMemory::gathered_params_bytes, P::kResident, true},
      {"host_bytes", "host", "host memory (ZeRO-Offload)", "host memory", "host memory",
       &StaticMemory::host_bytes, P::kHost, false},
      {"unsharded_grads_bytes", "unsharded_grads", "unsharded gradients (FSDP)",
       "unsharded gradients (FSDP)", "unsharded gradients (FSDP)",
       &StaticMemory::unsharded_grads_bytes, P::kResident, true},
      // PyTorch DDP's buckets are allocated when DDP wraps the model (device/stream.cpp).
      {"ddp_buckets_bytes", "ddp_buckets", "DDP buckets (a gradient copy)", "DDP buckets",
       "DDP buckets", &StaticMemory::ddp_buckets_bytes, P::kResident, false},
      {"fp8_weights_bytes", "fp8_weights", "fp8 weight caches (TransformerEngine)",
       "fp8 weight caches", "fp8 weight caches", &StaticMemory::fp8_weights_bytes, P::kResident,
       true}};
  return kLines;
}

Result<StaticMemory> static_memory(const std::vector<ParamRecord>& params, const TrainConfig& c) {
  Checked ck;
  StaticMemory s;
  // Bytes per category, dense and routed-expert apart (their ZeRO groups differ).
  Bytes par_b[2] = {0, 0}, grad_b[2] = {0, 0}, master_b[2] = {0, 0}, opt_b[2] = {0, 0};
  const Bytes pw = dtype_bytes(c.param_dtype), gw = dtype_bytes(c.grad_dtype);
  for (const auto& p : params) {
    const std::uint64_t n =
        ck.mul(ck.mul(p.rows, p.cols, "static.params"), p.copies, "static.params");
    s.params = ck.add(s.params, n, "static.params");
    if (p.expert) s.expert_params = ck.add(s.expert_params, n, "static.params");
    const int e = p.expert ? 1 : 0;
    auto add = [&](Bytes* to, Bytes b, const char* f) { to[e] = ck.add(to[e], b, f); };
    if (p.frozen) {
      add(par_b,
          p.nf4_bytes > 0 ? ck.mul(p.nf4_bytes, p.copies, "static.params_bytes")
                          : ck.mul(n, pw, "static.params_bytes"),
          "static.params_bytes");
      continue;
    }
    add(par_b, ck.mul(n, dtype_bytes(weight_dtype(p, c)), "static.params_bytes"),
        "static.params_bytes");
    add(grad_b, ck.mul(n, dtype_bytes(grad_dtype_of(p, c)), "static.grads_bytes"),
        "static.grads_bytes");
    if (keeps_master(p, c))
      add(master_b, ck.mul(n, 4, "static.master_bytes"), "static.master_bytes");
    add(opt_b, optimizer_state_bytes(c.optimizer, optimizer_state_dtype(p, c), p, ck),
        "static.optimizer_bytes");
  }
  // ZeRO partitions over its shard group (dp, or dp x cp); routed experts are already split by
  // EP, so their ZeRO group is that group's ranks over ep.
  const std::uint64_t dp = shard_ranks(c.par);
  const std::uint64_t edp = expert_dp(dp, c.par.ep);
  const int z = c.par.zero;
  auto part = [&](Bytes dense_b, Bytes expert_b, int stage) {
    if (z < stage) return ck.add(dense_b, expert_b, "static");
    return ck.add(ceil_div(dense_b, dp), ceil_div(expert_b, edp), "static");
  };
  s.params_bytes = part(par_b[0], par_b[1], 3);
  s.grads_bytes = part(grad_b[0], grad_b[1], 2);
  s.master_bytes = part(master_b[0], master_b[1], 1);
  s.optimizer_bytes = part(opt_b[0], opt_b[1], 1);
  if (c.optimizer_offload) {
    // DeepSpeed stage_1_and_2.py initialize_optimizer_states: with cpu_offload the fp32
    // partition's gradient is a pinned host tensor of partition_size fp32 elements, beside the
    // fp32 partition and the optimizer's states; the GPU's gradients leave through the reduce
    // buckets (grad_bucket, a transient).
    const std::uint64_t dense = s.params - s.expert_params;
    const Bytes fp32 = part(ck.mul(dense, 4, "static.host_bytes"),
                            ck.mul(s.expert_params, 4, "static.host_bytes"), 1);
    s.host_bytes =
        ck.add(ck.mul(fp32, 2, "static.host_bytes"), s.optimizer_bytes, "static.host_bytes");
    s.grads_bytes = 0;
    s.master_bytes = 0;
    s.optimizer_bytes = 0;
  }
  // Gathered in gather_dtype (sharding.hpp); with gradient sync off FSDP2 accumulates an
  // unsharded gradient in reduce_dtype, the gradients' dtype (_fsdp_param.py
  // unsharded_accumulated_grad).
  if (gathers_resident(c))
    s.gathered_params_bytes = gathered_bytes(params, c, "static.gathered_params_bytes", ck);
  if (z == 3 && c.accumulate_unsharded)
    s.unsharded_grads_bytes = ck.mul(s.params, gw, "static.unsharded_grads_bytes");
  // DDP's buckets (torch/nn/parallel/distributed.py gradient_as_bucket_view=False: the Reducer
  // allocates each bucket's flat gradient buffer when it wraps the model; only trainable
  // parameters are bucketed, as grads_bytes counts them).
  if (!c.ddp_bucket_view && z == 0 && c.par.dp > 1) s.ddp_buckets_bytes = s.grads_bytes;
  s.total_bytes = ck.add(
      ck.add(ck.add(s.params_bytes, s.grads_bytes, "static.total_bytes"),
             ck.add(s.master_bytes, s.optimizer_bytes, "static.total_bytes"), "static.total_bytes"),
      ck.add(ck.add(s.gathered_params_bytes, s.unsharded_grads_bytes, "static.total_bytes"),
             s.ddp_buckets_bytes, "static.total_bytes"),
      "static.total_bytes");
  if (ck.overflowed())
    return make_error("overflow", "model",
                      "model: static memory (parameters, gradients, optimizer states) would exceed "
                      "2^63-1 bytes; use a smaller model or shard it (tp, pp, ZeRO)");
  return s;
}

}  // namespace actmem
