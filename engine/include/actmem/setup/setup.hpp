// The immutable setup of one request: normalized config, per-kind inventories and costs, the layers
// and static memory of each pipeline rank, and the transient sizes. Built once; every command
// (estimate, timeline, fit, plan, sweep) evaluates recompute policies against it (evaluation.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "actmem/config/config.hpp"
#include "actmem/config/sharding.hpp"
#include "actmem/core/error.hpp"
#include "actmem/inventory/flops.hpp"
#include "actmem/inventory/inventory.hpp"
#include "actmem/inventory/params.hpp"
#include "actmem/model/model.hpp"
#include "actmem/setup/policy.hpp"

namespace actmem {

// One layer kind resolved on one GPU: shared by every layer of the kind.
struct KindEstimate {
  LayerGeometry geometry;
  LayerInventory inventory;
  LayerCosts costs;          // bytes and FLOPs per layer by recompute choice (config's policy)
  LayerFlops flops;          // one layer's forward FLOPs on one GPU
  std::uint64_t layers = 0;  // layers of this kind in the model
  Bytes param_bytes = 0;     // one layer's parameters on one GPU (what ZeRO-3 gathers per layer)
  std::uint64_t param_elems = 0;  // their elements
  Bytes largest_param = 0;        // elements of its largest parameter tensor on one GPU
  // ZeRO-3 / FSDP buffers of one layer's forward and backward (setup.cpp: the gathered layer;
  // FSDP2's all-gather, prefetch, gradient and reduce-scatter buffers; the backward transient
  // adds Setup::fsdp_root_grads beside them).
  Bytes fsdp_fwd = 0, fsdp_bwd = 0;
  Bytes trans_fwd = 0;  // transients alive while one layer of the kind runs forward
  Bytes trans_bwd = 0;  // ... and backward (gradient buffers, DDP bucket)
  // ... and while backward recomputes its forward: the forward's, with what the backward holds
  // by then (the FSDP root's gradients; FSDP2: the layer above's fp32 reduce-scatter input, which
  // its post-backward frees: the walk leaves it out at the stage's top layer, with none above).
  Bytes trans_rec = 0;
  Bytes fsdp2_rs_input = 0;  // FSDP2: one layer's fp32 reduce-scatter input (in trans_rec)
  // FSDP: the layer each layer's backward and recompute prefetch, the previous one, counted as
  // one of this kind (FSDP1's padded unit under BACKWARD_PRE, FSDP2's gathered layer); a chunk's
  // first layer prefetches Setup::first_prefetch instead (the walk's fill_layers).
  Bytes prefetch = 0;
  // Split-backward schedules: what one layer keeps from its I to its W (the wgrad_input records
  // and the wgrad_dy output gradients); 0 for a kind the engine does not split.
  Bytes wgrad_keep = 0;
};

// The layers and static memory of one pipeline rank.
struct RankSetup {
  std::uint64_t index = 0;
  std::uint64_t layers = 0;                // all of its virtual chunks
  std::vector<std::uint64_t> chunk_sizes;  // layers of each of the rank's v chunks
  std::vector<std::uint64_t> chunk_first;  // global index of each chunk's first layer
  // The pipeline stage (model chunk) each chunk runs: c·p + r (Megatron-LM), r and 2p-1-r for a
  // V (ZB-V, DualPipeV), r and p-1-r for DualPipe's two directions.
  std::vector<std::uint64_t> chunk_stage;
  // The chunk that holds the embedding side (stage 0) and the one that holds the head and loss
  // (the last stage); kNoChunk when the rank holds neither. DualPipe's end ranks hold both.
  static constexpr std::uint32_t kNoChunk = ~std::uint32_t{0};
  std::uint32_t embed_chunk = kNoChunk, head_chunk = kNoChunk;
  StaticMemory stat;
  Bytes opt_temp = 0;  // the optimizer step's transient on this rank (setup/optimizer_step.cpp)
  // FSDP2 (fsdp2_gathers): the root group's flat all-gather output (its parameters outside the
  // blocks, in the compute dtype), made on the all-gather copy-in stream before the first layer's
  // forward and freed at that layer's copy-out. The device replay allocates it; the tensor walk
  // does not (it is freed before the first layer's records and never meets the step's peak).
  Bytes fsdp_root_gather = 0;
};

struct KvCache {
  Bytes total_bytes = 0;    // whole model, one sequence batch: Σ over layers of 2·p·kv·d·s·b
  Bytes per_gpu_bytes = 0;  // the pipeline rank holding the most, kv heads divided by TP
};

// The parameter records one GPU holds as the static memory counts them: LoRA's frozen base
// tensors and adapters, QLoRA's NF4 bytes, the critic's score head in place of lm_head. One layer's
// per kind; the embedding, the head (with the final norm) and the MTP depths outside the layers.
// The device replay allocates exactly these (device/stream.cpp).
struct ParamRecords {
  std::vector<std::vector<ParamRecord>> kinds;
  std::vector<ParamRecord> embed, head, mtp;
};

struct Setup {
  ModelSpec model;
  TrainConfig config;               // normalized: seq, dropouts and micro-batches resolved
  std::vector<KindEstimate> kinds;  // one per model.kinds entry; kinds[0] is layer 0's kind
  std::vector<RankSetup> ranks;     // one per pipeline rank
  std::uint64_t model_params = 0;
  std::uint64_t mtp_params = 0;  // multi-token-prediction depths, apart from model_params
  ParamRecords param_records;
  double logits_flops = 0;  // forward FLOPs of the output projection on one GPU
  KvCache kv_cache;
  // Step-wide sizes (docs/schedules.md, transients).
  Bytes in_bytes = 0;   // input-layer records of one micro-batch (first rank)
  Bytes out_bytes = 0;  // output-layer records of one micro-batch (last rank)
  Bytes workspace = 0;  // cuBLAS workspace, all step long
  Bytes sp_gather = 0;  // SP all-gather of the layer input before the TP GEMMs
  // The loss's transients (config.loss, docs/frameworks.md): one buffer in its forward, up to two
  // in its backward. Eager: the fp32 logits copy, then it again with its gradient.
  Bytes loss_fwd_ws = 0;
  // The eager loss of plain PyTorch (the pytorch profile): the head's output in the compute
  // dtype, not a record (the training loop holds it, torchtitan's `pred`, until the loss
  // returns), made before loss_fwd_ws and freed after it (measured on an H200: the step's
  // trace, docs/validation.md 4.6).
  Bytes loss_logits = 0;
  // The FSDP root's gradients (head, final norm; FSDP2's root group, verl's FSDP1 root unit),
  // alive from the head's backward to the end of backward (setup.cpp root_grad_bytes).
  Bytes fsdp_root_grads = 0;
  // verl's FSDP1 (sharding.hpp fsdp1_root_held; setup.cpp set_fsdp1_root): its root unit
  // gathered in the compute dtype, held in every forward, loss and backward event but not the
  // optimizer step; its joined gradient (compute dtype) and what its post-backward stream adds
  // (the fp32 copy and its padding). The root's post-backward event holds the larger of its
  // two moments: held + 2 x grad (the pieces and their join), grad + reduce (the root freed).
  Bytes fsdp_root_held = 0, fsdp_root_grad = 0, fsdp_root_reduce = 0;
  Bytes fsdp_root_post_backward() const {
    if (verl_fsdp2(config)) return fsdp2_post_backward;
    return std::max(fsdp_root_held + 2 * fsdp_root_grad,
                    fsdp_root_grad + fsdp_root_reduce + fsdp_root_shard);
  }
  // verl's FSDP2 (sharding.hpp verl_fsdp2; setup.cpp set_verl_fsdp2): fsdp_root_held is its root
  // group's copies, gathered in every forward and backward event and in the loss only for the
  // head (resharded after forward); an untied embedding's group (fsdp2_embed, gathered at
  // forward's start and for the end of backward); what forward's start adds beside the root
  // (an event of its own), what the head's backward adds beside the root and the loss's
  // buffers, and the end of backward (the embedding's backward and the root's post-backward,
  // the root event).
  // FSDP that makes its gradients in backward, one micro-batch a step (sharding.hpp
  // grads_in_backward; setup.cpp set_grads_made): per global layer, the gradient shards made
  // before its backward (the layers above's), and before the root event (every layer's); the
  // root event's own shards (the embedding's, the root's) are in fsdp_root_post_backward().
  std::vector<Bytes> grads_made_before;
  Bytes grads_made_root = 0, fsdp_root_shard = 0;
  Bytes fsdp2_embed = 0, fsdp2_forward_start = 0, fsdp2_loss_bwd = 0;
  Bytes fsdp2_embed_reduce = 0;  // its fp32 reduce-scatter input (the replay's embed_backward)
  // What a chunk's first layer prefetches in place of a layer (KindEstimate::prefetch): nothing,
  // or verl's FSDP2's untied embedding group.
  Bytes first_prefetch = 0;
  // torchtitan's FSDP2 at one stage: its last block, kept gathered from its forward to its
  // post-backward as a static line (gathered_params_bytes), which the layer transients must not
  // count again, and which is freed for the layers below (the walk's fill_layers).
  Bytes fsdp2_last_kept = 0;
  Bytes fsdp2_post_backward = 0;
  Bytes loss_bwd_bufs[3] = {0, 0, 0};  // loss parallel's backward holds three
  Bytes opt_temp = 0;                  // the optimizer step's transient, the largest rank's
  Bytes zero3_gather = 0;              // the largest layer's gathered parameters (ZeRO-3)
  Bytes grad_peak = 0;                 // the largest layer backward's gradient buffers
  std::string grad_peak_at;

  const KindEstimate& kind_at(std::uint64_t layer) const { return kinds[model.kind_index(layer)]; }
  // The embedding-side and output-layer records (model-wide, carried by every kind's inventory).
  const LayerInventory& io() const { return kinds[0].inventory; }
};

// Validates the model and config (field-named errors) and builds the setup. The config's
// recompute policy only sets the per-kind costs' custom keep set; evaluate() takes the policy.
Result<Setup> make_setup(const ModelSpec& m, const TrainConfig& c);

// The widest layer's working set per token in elements under tensor parallelism tp, what a
// forward without grad holds at once (an estimate: the RL rollouts and reference forwards): the
// hidden state and residual, q/k/v, and the FFN's gate, up and activation, or an MoE layer's
// top-k experts', its router's fp32 logits and its shared experts.
std::uint64_t widest_layer_width(const ModelSpec& m, std::uint64_t tp);

// The sequence length a config without seq runs: 2048, or a learned position table if shorter.
std::uint64_t default_seq(const ModelSpec& m);

// Recomputes each kind's costs for a policy (only custom keep sets change them). Errors when a
// custom id names no record of any kind.
std::optional<Error> set_policy_costs(Setup& s, const Recompute& r);

// Inference KV-cache elements per token and layer of kind `k` with `kv` KV heads on the GPU: K and
// V at every KV head (seed 002_13aa127c0ff0c20b.txt: 2·H·d), or under MLA the compressed latent
// and the shared RoPE key, whole on every TP rank (DeepSeek-V2, Sec. 2.1.4: d_c + d_h^R).
std::uint64_t kv_cache_width(const LayerKind& k, std::uint64_t kv, Checked& ck);
// Tokens a layer caches at inference: every one, or its attention window's.
std::uint64_t kv_tokens(const LayerKind& k, std::uint64_t tokens);

// Structural validation alone (also used by the JSON readers).
std::optional<Error> validate(const ModelSpec& m, const TrainConfig& c);

// For requests from users (the JSON entry point, actmem-validate): a layers:PATTERN longer than
// the longest model chunk. The engine reads a pattern per chunk, repeating it when shorter, so
// letters past the chunk would go unused; the C++ API keeps that reading for its own callers.
std::optional<Error> check_pattern_fits(const ModelSpec& m, const TrainConfig& c);

}  // namespace actmem
