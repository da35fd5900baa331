// The tensor-level allocation stream of one pipeline rank's training step, fed to the caching-
// allocator model: the step walker's layer events (walker.hpp) turned into the allocations and
// frees PyTorch would make for them. Every size is a record the estimate already names (inventory
// records, backward gradient buffers, parameters, gradients, optimizer states, transients), so
// allocated memory here is the same tensor model at tensor granularity; what the allocator adds is
// rounding, caching and fragmentation.
#include "device/stream.hpp"

#include <algorithm>

#include "actmem/config/sharding.hpp"
#include "actmem/inventory/params.hpp"

namespace actmem::detail {

namespace {
constexpr std::size_t kChoices = 5;  // LayerChoice values
}  // namespace

AllocStream::AllocStream(const Setup& s, const Recompute& r, std::uint64_t rank,
                         CachingAllocator* alloc)
    : s_(s), r_(r), rank_(rank), a_(alloc) {
  const TrainConfig& c = s.config;
  const ParamRecords& pr = s.param_records;
  const bool zero_grads = c.par.zero >= 2;
  split_ = is_split_backward(effective_schedule(c));
  fsdp2_ = fsdp2_buffers(c);
  fsdp2_resident_ = fsdp2_gathers(c) && gathers_resident(c);
  fsdp2_params_ = fsdp2_per_parameter(c);
  fsdp1_grads_ = fsdp1_grads_in_backward(c);
  verl2_ = verl_fsdp2(c);
  last_kept_ = fsdp2_ && !verl2_;
  chunk_gathered_.assign(s.ranks[rank].chunk_sizes.size(), false);
  // Per kind: each record's bytes, which records each choice keeps, the backward's gradient
  // buffers phase by phase, and the layer's parameter-gradient tensors.
  for (std::size_t ki = 0; ki < s.kinds.size(); ++ki) {
    const LayerInventory& inv = s.kinds[ki].inventory;
    Kind k;
    for (const TensorRecord& t : inv.tensors) k.records.push_back(t.bytes);
    for (std::size_t ch = 0; ch < kChoices; ++ch) {
      const auto kept = kept_tensors(inv, static_cast<LayerChoice>(ch), r);
      std::vector<bool> mask(inv.tensors.size(), false);
      Bytes extra = 0;
      for (const TensorRecord* t : kept) {
        if (t >= inv.tensors.data() && t < inv.tensors.data() + inv.tensors.size())
          mask[static_cast<std::size_t>(t - inv.tensors.data())] = true;
        else
          // The checkpoint record (the layer input, kept as its own tensor) and the outputs an
          // op-level policy saves: kept beside the layer's records.
          extra += t->bytes;
      }
      k.kept[ch] = mask;
      k.extra[ch] = extra;
    }
    // Buffers are matched across phases by id: number them once here.
    std::vector<std::string_view> ids;
    for (const GradPhase& ph : inv.backward_grads) {
      std::vector<std::pair<std::uint32_t, Bytes>> bufs;
      for (const TensorRecord& b : ph.buffers) {
        std::uint32_t n = kDyBuffer;
        if (b.id != "dY") {
          const auto at = std::find(ids.begin(), ids.end(), std::string_view(b.id));
          n = static_cast<std::uint32_t>(at - ids.begin());
          if (at == ids.end()) ids.push_back(b.id);
        }
        bufs.emplace_back(n, b.bytes);
      }
      k.phases.push_back(std::move(bufs));
    }
    for (const TensorRecord& t : inv.tensors) k.wgrad.push_back(t.wgrad_input);
    for (const TensorRecord& t : inv.wgrad_dy) k.dy.push_back(t.bytes);
    if (!zero_grads) grad_tensors(pr.kinds[ki], k.grads);
    if (fsdp2_params_) k.rs_out = reduce_output(pr.kinds[ki]);
    kinds_.push_back(std::move(k));
  }
  if (fsdp2_params_) {
    // The root group: the parameters outside the blocks (the embedding, the final norm, the head);
    // verl's FSDP2 makes an untied embedding a group of its own (setup.cpp set_verl_fsdp2).
    if (s.fsdp2_embed == 0) root_params_ = pr.embed;
    root_params_.insert(root_params_.end(), pr.head.begin(), pr.head.end());
    root_params_.insert(root_params_.end(), pr.mtp.begin(), pr.mtp.end());
    root_rs_out_ = reduce_output(root_params_);
    if (s.fsdp2_embed > 0) embed_rs_out_ = reduce_output(pr.embed);
  }
  for (const TensorRecord& t : s.io().input_layer) in_records_.push_back(t.bytes);
  for (const TensorRecord& t : s.io().output_layer) {
    if (t.id == std::string_view("loss.log_softmax_out")) log_softmax_at_ = out_records_.size();
    out_records_.push_back(t.bytes);
  }
  // The embedding's and the head's gradients, made at their backward.
  if (!zero_grads) {
    if (s.ranks[rank].embed_chunk != RankSetup::kNoChunk) grad_tensors(pr.embed, embed_grads_);
    if (s.ranks[rank].head_chunk != RankSetup::kNoChunk) grad_tensors(pr.head, head_grads_);
  }
}

// Each trainable record's gradient tensors (frozen records, LoRA's base weights, have none), in
// its gradient dtype (params.hpp grad_dtype_of).
void AllocStream::grad_tensors(const std::vector<ParamRecord>& records, std::vector<Bytes>& out) {
  for (const ParamRecord& p : records)
    for (std::uint64_t i = 0; i < p.copies && !p.frozen; ++i)
      out.push_back(tensor(p.rows, p.cols, dtype_bytes(grad_dtype_of(p, s_.config))));
}

// fully_shard's shard of a parameter: dim 0, padded (torchtitan); verl's shard_placement_fn
// shards the first dim the shard group divides, dim 0 padded when none does (verl b178a3c
// fsdp_utils.py get_shard_placement_fn; routed experts keep dim 0 here).
ParamRecord AllocStream::shard(const ParamRecord& p) const {
  const std::uint64_t dp = shard_ranks(s_.config.par);
  ParamRecord q = p;
  if (verl2_ && !p.expert && p.rows % dp != 0 && p.cols % dp == 0) {
    q.cols = p.cols / dp;
    return q;
  }
  q.rows = ceil_div(p.rows, p.expert ? expert_dp(dp, s_.config.par.ep) : dp);
  return q;
}

// _fsdp_collectives.py foreach_reduce: reduce_scatter_output_numel, the padded shards' elements
// in the reduce dtype (the gradients' dtype under torchtitan's MixedPrecisionPolicy).
Bytes AllocStream::reduce_output(const std::vector<ParamRecord>& records) {
  Bytes sum = 0;
  for (const ParamRecord& p : records) {
    if (p.frozen) continue;
    const ParamRecord q = shard(p);
    const Bytes one = tensor(q.rows, q.cols, dtype_bytes(grad_dtype_of(p, s_.config)));
    sum = ck_.add(sum, ck_.mul(one, p.copies, "device.tensor"), "device.tensor");
  }
  return sum;
}

// torch 2.6.0 foreach_reduce: a group's first reduce-scatter of the step makes .grad a view of its
// output (`fsdp_param.sharded_param.grad = new_sharded_dtensor_grad`); a later one adds its
// output into it (`sharded_param.grad._local_tensor += new_sharded_grad`) and the output goes.
void AllocStream::reduce_scatter_output(std::uint64_t group, Bytes bytes) {
  const Handle h = take(bytes, kReduceScatterStream);
  if (grads_made_.insert(group).second)
    step_grads_.push_back(h);
  else
    drop(h);
}

Bytes AllocStream::tensor(std::uint64_t rows, std::uint64_t cols, Bytes width) {
  return ck_.mul(ck_.mul(rows, cols, "device.tensor"), width, "device.tensor");
}

void AllocStream::release(const Key& k) {
  auto it = live_.find(k);
  if (it == live_.end()) return;
  for (Handle h : it->second) drop(h);
  it->second.clear();
  spare_.push_back(std::move(it->second));
  live_.erase(it);
}

CachingAllocator::Handle AllocStream::take(Bytes bytes, CachingAllocator::Stream stream) {
  // After the first failed request of a run that stops there (stop_at_oom), nothing more: each
  // later failure would flush the cache again (a replay of thousands of static tensors past the
  // capacity was quadratic).
  if (bytes == 0 || (stop_at_oom_ && a_->stats().ooms != 0) || prefix_oom_)
    return CachingAllocator::kNoHandle;
  allocations_ += 1;
  const Handle h = a_->malloc(bytes, stream);
  if (step_ == 0 && forwards_ < shared_forwards_ && a_->stats().ooms != 0) prefix_oom_ = true;
  return h;
}

void AllocStream::stop_in_shared_prefix(std::uint64_t forwards) {
  // Forwards are counted at their chunk's first layer, so every chunk must have one.
  for (std::uint64_t n : s_.ranks[rank_].chunk_sizes)
    if (n == 0) return;
  shared_forwards_ = forwards;
}

void AllocStream::take_params(std::vector<Handle>& out, std::uint64_t g, Bytes width, bool kept) {
  if (width == 0 && last_kept_ && g + 1 == s_.model.layers && !kept) return;
  take_records(out, s_.param_records.kinds[s_.model.kind_index(g)], width);
}

void AllocStream::take_records(std::vector<Handle>& out, const std::vector<ParamRecord>& records,
                               Bytes width) {
  for (const ParamRecord& p : records) {
    const Bytes w = width ? width : gather_width(p, s_.config);
    for (std::uint64_t i = 0; i < p.copies; ++i) out.push_back(take(tensor(p.rows, p.cols, w)));
  }
}

// The records of the rank's layers, chunk by chunk in layer order.
std::vector<ParamRecord> AllocStream::layer_params() const {
  const ParamRecords& pr = s_.param_records;
  const RankSetup& rk = s_.ranks[rank_];
  std::vector<ParamRecord> ps;
  for (std::size_t ci = 0; ci < rk.chunk_sizes.size(); ++ci)
    for (std::uint64_t j = 0; j < rk.chunk_sizes[ci]; ++j) {
      const auto& lp = pr.kinds[s_.model.kind_index(rk.chunk_first[ci] + j)];
      ps.insert(ps.end(), lp.begin(), lp.end());
    }
  return ps;
}

void AllocStream::drop_all(std::vector<Handle>& v) {
  for (Handle h : v) drop(h);
  v.clear();
}

// _fsdp_param_group.py post_backward: reshard() first, then reduce_scatter_state = None frees the
// previous group's input just before foreach_reduce allocates this group's (the gradients'
// dtype, fp32 under torchtitan) and copies the unsharded gradients into it; they go.
void AllocStream::post_backward(const KindEstimate& ke, std::uint64_t g) {
  drop_all(copies_);
  if (g + 1 == s_.model.layers) drop_all(last_copies_);
  drop(rs_);
  rs_ = take(ck_.mul(ke.param_elems, dtype_bytes(s_.config.grad_dtype), "device.tensor"));
  if (fsdp2_params_) reduce_scatter_output(g, kinds_[s_.model.kind_index(g)].rs_out);
  drop_all(unsharded_grads_);
}

// The order of _fsdp_param_group.py: unshard() allocates the group's all-gather output, then
// wait_for_unshard() frees the one held (forward: the previous group's, kept in all_gather_state
// for overlap; backward: the group's own, freed after its copy-out before the prefetch).
void AllocStream::gather(Bytes bytes) {
  const Handle next = take(bytes, kCopyInStream);
  drop(ag_);
  ag_ = next;
}

void AllocStream::drop(CachingAllocator::Handle h) {
  if (h != CachingAllocator::kNoHandle) a_->free(h);
}

// What lives all step long, allocated once before the first step in the order a job creates it:
// parameters, then (the optimizer's first step) master weights and optimizer states, the cuBLAS
// workspace at the first GEMM. Megatron-LM's and DeepSpeed's flat buffers (megatron and textbook
// profiles, or ZeRO) are one allocation each; plain PyTorch (pytorch, hf) one tensor per parameter.
void AllocStream::allocate_static() {
  const TrainConfig& c = s_.config;
  const StaticMemory& st = s_.ranks[rank_].stat;
  const bool flat =
      c.profile == Profile::kMegatron || c.profile == Profile::kTextbook || c.par.zero >= 1;
  if (fsdp2_params_) {
    allocate_fsdp2_static();
  } else if (flat) {
    // Every flat static line, one buffer each, in the lines' order: Megatron-LM's contiguous
    // gradient buffer lives all step (DistributedDataParallel's grad_data), as does ZeRO-2/3's
    // partitioned gradient buffer; FSDP residency (config.reshard_after_forward /
    // accumulate_unsharded) is counted for the whole step as the walk does.
    // verl's FSDP1 makes its gradients unit by unit in backward (fsdp1_post_backward).
    for (const StaticLine& l : static_lines())
      if (l.flat && l.place != StaticPlace::kHost &&
          !(fsdp1_grads_ && l.bytes == &StaticMemory::grads_bytes))
        statics_.push_back(take(st.*l.bytes));
    grads_static_ = true;  // (FSDP1's: fsdp1_sharded_grad, keyed by its unit)
  } else {
    // DDP's buckets are allocated when DDP wraps the model, before the first step.
    statics_.push_back(take(st.ddp_buckets_bytes));
    const ParamRecords& pr = s_.param_records;
    std::vector<ParamRecord> ps = layer_params();
    const RankSetup& rk = s_.ranks[rank_];
    if (rk.embed_chunk != RankSetup::kNoChunk)
      ps.insert(ps.end(), pr.embed.begin(), pr.embed.end());
    if (rk.head_chunk != RankSetup::kNoChunk) {
      ps.insert(ps.end(), pr.head.begin(), pr.head.end());
      ps.insert(ps.end(), pr.mtp.begin(), pr.mtp.end());
    }
    for (const ParamRecord& p : ps) allocate_param(p);
    params_ = std::move(ps);
  }
  statics_.push_back(take(s_.workspace));
}

// FSDP2 (fsdp2_params_): fully_shard makes each parameter's padded shard, in the model's order
// (the embedding, the blocks, the head: the measured trace's first allocations). The groups kept
// gathered (the root, the last block) are gathered each step and resharded at their
// post-backward (forward_layer, backward_layer), the gradients made in backward (post_backward),
// the optimizer states at the first step (allocate_states).
void AllocStream::allocate_fsdp2_static() {
  const ParamRecords& pr = s_.param_records;
  std::vector<ParamRecord> ps = pr.embed;
  const std::vector<ParamRecord> layers = layer_params();
  ps.insert(ps.end(), layers.begin(), layers.end());
  ps.insert(ps.end(), pr.head.begin(), pr.head.end());
  ps.insert(ps.end(), pr.mtp.begin(), pr.mtp.end());
  for (const ParamRecord& p : ps) {
    params_.push_back(shard(p));
    allocate_param(params_.back());
  }
  const StaticMemory& st = s_.ranks[rank_].stat;
  for (const StaticLine& l : static_lines()) {
    const Bytes StaticMemory::*b = l.bytes;
    if (l.flat && l.place != StaticPlace::kHost && b != &StaticMemory::params_bytes &&
        b != &StaticMemory::grads_bytes && b != &StaticMemory::master_bytes &&
        b != &StaticMemory::optimizer_bytes && b != &StaticMemory::gathered_params_bytes)
      statics_.push_back(take(st.*b));
  }
  grads_static_ = true;  // made by post_backward, not per layer
}

// One parameter record's tensors, as params.cpp static_memory counts them: a frozen base weight in
// the parameters' dtype (QLoRA: its NF4 bytes), an adapter in the adapters' dtype, each trainable
// one with its fp32 master copy where the config keeps one.
void AllocStream::allocate_param(const ParamRecord& p) {
  const TrainConfig& c = s_.config;
  const bool master = keeps_master(p, c);
  const Bytes width = dtype_bytes(weight_dtype(p, c));
  for (std::uint64_t i = 0; i < p.copies; ++i) {
    statics_.push_back(
        take(p.frozen && p.nf4_bytes > 0 ? p.nf4_bytes : tensor(p.rows, p.cols, width)));
    if (master) statics_.push_back(take(tensor(p.rows, p.cols, 4)));
  }
}

// torch.optim creates its state at the first step() (adamw.py _init_group: exp_avg, exp_avg_sq
// per parameter, in parameter order), after the first forward and backward have filled the
// cache: the states are carved from cached activation blocks, which is where a job's steady-state
// fragmentation starts (docs/validation.md 4.3).
void AllocStream::allocate_states() {
  const TrainConfig& c = s_.config;
  const bool two = c.optimizer == Optimizer::kAdamW;
  for (const ParamRecord& p : params_) {
    if (p.frozen) continue;  // LoRA's base weights: no optimizer state
    ParamRecord one = p;
    one.copies = 1;
    const Bytes opt = optimizer_state_bytes(c.optimizer, optimizer_state_dtype(p, c), one, ck_);
    for (std::uint64_t i = 0; i < p.copies; ++i) {
      if (two) {
        statics_.push_back(take(opt / 2));
        statics_.push_back(take(opt - opt / 2));
        if (effective_optimizer_impl(c) == OptimizerImpl::kForeach && !c.optimizer_offload)
          step_list_.push_back(opt - opt / 2);
      } else {
        statics_.push_back(take(opt));
      }
    }
  }
  params_.clear();
}

// The step's transient: plain PyTorch's foreach AdamW allocates one tensor per state (its
// torch._foreach_sqrt list, in parameter order) and frees the list last to first (CPython's
// list_dealloc), as the H200 step's trace shows (docs/validation.md 4.3); the rest is one block
// (setup/optimizer_step.cpp).
void AllocStream::optimizer_step() {
  if (step_list_.empty()) {
    drop(take(s_.ranks[rank_].opt_temp));
    return;
  }
  step_held_.clear();
  for (Bytes b : step_list_) step_held_.push_back(take(b));
  for (auto it = step_held_.rbegin(); it != step_held_.rend(); ++it) drop(*it);
}

void AllocStream::begin_step() {
  ++step_;
  forwards_ = 0;
  if (!static_done_) allocate_static(), static_done_ = true;
  proof_ = PeriodProof{};
  ring_n_ = 0;
  suspect_cycle_ = 0;
}

PeriodProof AllocStream::counters() const {
  const AllocatorStats& st = a_->stats();
  PeriodProof c;
  c.allocations = allocations_;
  c.device_allocs = st.device_allocs, c.device_frees = st.device_frees;
  c.retries = st.retries, c.ooms = st.ooms;
  return c;
}

template <class Put>
void AllocStream::canonical(std::uint64_t base, Put&& put) {
  a_->canonical(put);
  auto place = [&](Handle h) { a_->place(h, put); };
  put(live_.size());
  for (const auto& [key, hs] : live_) {
    put(std::get<0>(key) - base);  // unsigned: the same label at every boundary whatever the sign
    put(std::get<1>(key));
    put(std::get<2>(key));
    put(hs.size());
    for (Handle h : hs) place(h);
  }
  place(dy_);
  place(root_);
  place(ag_);
  place(rs_);
  for (const std::vector<Handle>* v : {&copies_, &unsharded_grads_}) {
    put(v->size());
    for (Handle h : *v) place(h);
  }
  for (bool g : chunk_gathered_) put(std::uint64_t{g});
  put(step_grads_.size());
  for (Handle h : step_grads_) place(h);
  put(grads_made_.size());
  for (std::uint64_t g : grads_made_) put(g);
  put(statics_.size());
  put(step_list_.size());
  put(std::uint64_t{states_done_});
}

// At a steady-state period boundary. The state's FNV-1a hash is compared with the last kCycles
// boundaries'; the nearest match is a suspected cycle, whose state is kept and compared word by
// word with the state a cycle later: equal, the cycle is proven (and, the replay being
// deterministic, holds at every later boundary of the step).
void AllocStream::boundary(const StepEvent& at) {
  const SteadyBoundaries& w = watch_;
  const std::uint64_t fw = at.mb / w.p * w.p * w.v + at.chunk * w.p + at.mb % w.p;
  const std::uint64_t period = w.v == 1 ? 1 : w.p * w.v;
  if (fw < w.warm || fw >= w.total || (fw - w.warm) % period != 0) return;
  const std::size_t index = ring_n_++;
  const PeriodProof c = counters();
  Seen& slot = ring_[ring_at_];
  ring_at_ = (ring_at_ + 1) % kCycles;
  if (proof_.cycle != 0) return;  // proven: the rest of the step repeats it
  std::uint64_t hash = 14695981039346656037ull;
  canonical(at.mb, [&](std::uint64_t x) { hash = (hash ^ x) * 1099511628211ull; });
  if (suspect_cycle_ != 0 && index == suspect_at_ + suspect_cycle_) {
    now_.clear();
    canonical(at.mb, [&](std::uint64_t x) { now_.push_back(x); });
    if (now_ == suspect_) {
      const PeriodProof& then = ring_[(ring_at_ + kCycles - 1 - suspect_cycle_) % kCycles].counters;
      proof_.cycle = suspect_cycle_;
      proof_.allocations = c.allocations - then.allocations;
      proof_.device_allocs = c.device_allocs - then.device_allocs;
      proof_.device_frees = c.device_frees - then.device_frees;
      proof_.retries = c.retries - then.retries;
      proof_.ooms = c.ooms - then.ooms;
    }
    suspect_cycle_ = 0;
  }
  if (proof_.cycle == 0 && suspect_cycle_ == 0)
    for (std::size_t k = 1; k <= index && k < kCycles; ++k)
      if (ring_[(ring_at_ + kCycles - 1 - k) % kCycles].hash == hash) {
        suspect_.clear();
        canonical(at.mb, [&](std::uint64_t x) { suspect_.push_back(x); });
        suspect_at_ = index;
        suspect_cycle_ = k;
        break;
      }
  slot.hash = hash;
  slot.counters = c;
}

AllocStream::Held& AllocStream::held(const StepEvent& at, std::uint64_t layer) {
  const auto [it, fresh] = live_.try_emplace(Key{at.mb, at.chunk, layer});
  if (fresh && !spare_.empty()) {
    it->second = std::move(spare_.back());
    spare_.pop_back();
  } else if (fresh) {
    // Room for a layer's kept records at once: grown from empty, each new entry's vector was
    // reallocated as it filled (32,755 times over two 405B and two 70B views, 2% of their
    // instructions; callgrind, 2026-12-05).
    it->second.reserve(32);
  }
  return it->second;
}

std::uint64_t AllocStream::in_chunk(const StepEvent& at, std::uint64_t g) const {
  return g - s_.ranks[rank_].chunk_first[at.chunk];
}

void AllocStream::forward_layer(const StepEvent& at) {
  const std::uint64_t g = at.lo, j = in_chunk(at, g);
  const std::size_t ki = s_.model.kind_index(g);
  const Kind& k = kinds_[ki];
  const KindEstimate& ke = s_.kinds[ki];
  const LayerChoice ch = choice_at(r_, j);
  const RankSetup& rk = s_.ranks[rank_];
  // The chunk's first layer: the stage's input arrives (rank 0: the embedding side's records,
  // after FSDP2's root group is gathered for the embedding).
  const bool gathers = fsdp2_ || (fsdp2_resident_ && !chunk_gathered_[at.chunk]);
  if (j == 0 && at.chunk == rk.embed_chunk) {
    if (gathers) gather(rk.fsdp_root_gather);
    // The root group's per-parameter copies (alloc_all_gather_outputs), held to its
    // post-backward: its reshard_after_forward is False (setup.cpp fsdp_root).
    if (fsdp2_params_ && root_copies_.empty()) take_records(root_copies_, root_params_, 0);
    // verl's FSDP root unit: gathered at the root's pre-forward, one block until its
    // post-backward (root_post_backward_step); the walk counts it in each event's transient.
    if (!verl2_ && root_ == CachingAllocator::kNoHandle) root_ = take(s_.fsdp_root_held);
    // verl's FSDP2: the untied embedding's group gathered for its forward, resharded after it.
    std::vector<Handle> embed;
    if (verl2_ && s_.fsdp2_embed > 0) {
      gather(s_.fsdp2_embed);
      take_records(embed, s_.param_records.embed, 0);
    }
    Held& in = held(at, kInputLayer);
    for (Bytes b : in_records_) in.push_back(take(b));
    drop_all(embed);
  }
  Bytes trans_bytes = ke.trans_fwd - std::min(ke.trans_fwd, s_.workspace);
  trans_bytes -= std::min(trans_bytes, s_.fsdp_root_held);  // held as its own block
  if (gathers) gather(ke.param_bytes);
  if (fsdp2_) {
    // FSDP2's forward buffers (setup.cpp) tensor by tensor: the all-gather output on its own
    // stream, then the copy-out's per-parameter tensors.
    trans_bytes -= std::min(trans_bytes, ck_.mul(2, ke.param_bytes, "device.tensor"));
    take_params(copies_, g, 0);
    // torchtitan's last block (reshard_after_forward False): gathered in its forward, kept to
    // its post-backward.
    if (fsdp2_params_ && last_kept_ && g + 1 == s_.model.layers && last_copies_.empty())
      take_params(last_copies_, g, 0, true);
  }
  const auto trans = take(trans_bytes);
  made_.clear();
  for (Bytes b : k.records) made_.push_back(take(b));
  drop(trans);
  const auto& mask = k.kept[static_cast<std::size_t>(ch)];
  Held& h = held(at, g);
  for (std::size_t i = 0; i < made_.size(); ++i) {
    if (mask[i] && !offloaded_at(r_, j))
      (split_ && k.wgrad[i] ? held(at, g | kWgradStore) : h).push_back(made_[i]);
    else
      drop(made_[i]);  // not kept (or moved to host memory)
  }
  if (k.extra[static_cast<std::size_t>(ch)] > 0 && !offloaded_at(r_, j))
    h.push_back(take(k.extra[static_cast<std::size_t>(ch)]));
  drop_all(copies_);  // FSDP2's post-forward reshard
  // The stage's post-forward frees the last all-gather output (_fsdp_state.py _post_forward of
  // the root); with the head, after the head's forward (kLossFwd).
  if (gathers && j + 1 == rk.chunk_sizes[at.chunk]) {
    if (at.chunk != rk.head_chunk) gather(0);
    if (fsdp2_resident_) chunk_gathered_[at.chunk] = true;
  }
}

void AllocStream::recompute(const StepEvent& at) {
  for (std::uint64_t g = at.lo; g <= at.hi; ++g) {
    const Kind& k = kinds_[s_.model.kind_index(g)];
    const auto& mask = k.kept[static_cast<std::size_t>(choice_at(r_, in_chunk(at, g)))];
    Held& h = held(at, g);
    for (std::size_t i = 0; i < k.records.size(); ++i)
      if (!mask[i])
        (split_ && k.wgrad[i] ? held(at, g | kWgradStore) : h).push_back(take(k.records[i]));
  }
}

void AllocStream::backward_layer(const StepEvent& at, bool input_part) {
  const std::uint64_t g = at.lo, j = in_chunk(at, g);
  const std::size_t ki = s_.model.kind_index(g);
  const Kind& k = kinds_[ki];
  const KindEstimate& ke = s_.kinds[ki];
  Held& h = held(at, g);
  if (offloaded_at(r_, j)) {
    // Offloaded records come back for the layer's backward.
    const auto& mask = k.kept[static_cast<std::size_t>(choice_at(r_, j))];
    for (std::size_t i = 0; i < k.records.size(); ++i)
      if (mask[i]) h.push_back(take(k.records[i]));
  }
  // The layer's weight gradients appear at its first backward of the step (AccumulateGrad
  // allocates .grad when it is None) and live until zero_grad(set_to_none=True).
  if (!grads_static_ && grads_made_.insert(g).second)
    for (Bytes b : k.grads) step_grads_.push_back(take(b));
  // Transients that are not gradient buffers (SP gather, ZeRO-3 gather, DDP bucket).
  Bytes other = ke.trans_bwd - std::min(ke.trans_bwd, s_.workspace + ke.costs.grad_peak);
  other -= std::min(other, s_.fsdp_root_held);  // verl's FSDP root unit: its own block
  // FSDP2 per parameter: the root's gradients are held as their own block (root_grads_, from the
  // head's backward), not taken again in each layer's (2026-12-04: they were, which no measured
  // peak showed: each run's peak is its loss's).
  if (fsdp2_params_) other -= std::min(other, s_.fsdp_root_grads);
  // FSDP1 (verl): the chunk's first unit prefetches nothing (the root unit is held); FSDP2's
  // prefetch is its gather below.
  if (j == 0 && !fsdp2_) other -= std::min(other, ke.prefetch);
  if (fsdp2_) {
    // FSDP2's pre-backward: the layer's own all-gather output goes after its copy-out, then the
    // previous layer's is prefetched (_backward_prefetch) on the copy-in stream; none before the
    // chunk's first layer (the root group stays gathered).
    gather(j > 0 ? s_.kind_at(g - 1).param_bytes : s_.fsdp2_embed);
    // The rest of FSDP2's backward buffers (setup.cpp) tensor by tensor: the copy-out's
    // parameters, the unsharded gradients in the compute dtype (post_backward: the input).
    other -= std::min(other, ke.fsdp_bwd);
    take_params(copies_, g, 0);
    take_params(unsharded_grads_, g, dtype_bytes(gather_dtype(s_.config)));
  }
  const auto trans = take(other);
  // The gradient buffers, phase by phase: each appears at the first phase that holds it and is
  // freed after the last; dY (the gradient flowing down the stack) stays between layers.
  auto& alive = alive_;
  alive.clear();
  for (const auto& phase : k.phases) {
    for (auto it = alive.begin(); it != alive.end();) {
      const bool still = std::any_of(phase.begin(), phase.end(),
                                     [&](const auto& b) { return b.first == it->first; });
      if (!still) {
        drop(it->second);
        it = alive.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& b : phase) {
      if (b.first == kDyBuffer) {
        if (dy_ == CachingAllocator::kNoHandle) dy_ = take(b.second);
        continue;
      }
      const bool have = std::any_of(alive.begin(), alive.end(),
                                    [&](const auto& x) { return x.first == b.first; });
      if (!have) alive.emplace_back(b.first, take(b.second));
    }
  }
  for (const auto& x : alive) drop(x.second);
  drop(trans);
  if (fsdp2_) post_backward(ke, g);
  if (fsdp1_grads_) fsdp1_post_backward(g, ke.param_elems);
  (void)h;
  release(Key{at.mb, at.chunk, g});
  if (input_part) {
    Held& w = held(at, g | kWgradStore);
    for (Bytes b : k.dy) w.push_back(take(b));
  } else {
    release(Key{at.mb, at.chunk, g | kWgradStore});
  }
  // The chunk's last backward (its first layer): the stage's input side is freed, and the
  // gradient flowing down leaves for the previous stage.
  if (j == 0) {
    if (at.chunk == s_.ranks[rank_].embed_chunk) {
      if (!grads_static_ && grads_made_.insert(kInputLayer).second)
        for (Bytes b : embed_grads_) step_grads_.push_back(take(b));
      release(Key{at.mb, at.chunk, kInputLayer});
      if (fsdp2_) {
        if (verl2_ && s_.fsdp2_embed > 0) embed_backward();
        // The root's post-backward, after the embedding's: the last layer's reduce-scatter input
        // freed, the root group's own made from its unsharded gradients, then freed by the
        // final callback (_fsdp_state.py _root_post_backward_final_callback).
        drop_all(root_copies_);  // the root's reshard, first in its post_backward
        drop(rs_);
        rs_ = CachingAllocator::kNoHandle;
        const Bytes gw = dtype_bytes(gather_dtype(s_.config));
        const auto input = take(ck_.mul(s_.ranks[rank_].fsdp_root_gather / gw,
                                        dtype_bytes(s_.config.grad_dtype), "device.tensor"));
        if (fsdp2_params_) reduce_scatter_output(kInputLayer, root_rs_out_);
        drop(root_grads_);  // copied into the input: the unsharded gradients go
        root_grads_ = CachingAllocator::kNoHandle;
        drop(input);
      }
    }
    drop(dy_);
    dy_ = CachingAllocator::kNoHandle;
  }
}

// verl's FSDP2, an untied embedding's group at the end of backward (setup.cpp set_verl_fsdp2):
// its all-gather output (prefetched by layer 0) copied out and freed, the embedding's gradient,
// then its post_backward: resharded, layer 0's reduce-scatter input freed before its own.
void AllocStream::embed_backward() {
  const ParamRecords& pr = s_.param_records;
  std::vector<Handle> copies, grads;
  take_records(copies, pr.embed, 0);
  gather(0);
  take_records(grads, pr.embed, dtype_bytes(gather_dtype(s_.config)));
  drop_all(copies);
  drop(rs_);
  rs_ = take(s_.fsdp2_embed_reduce);
  reduce_scatter_output(kEmbedGroup, embed_rs_out_);
  drop_all(grads);
}

// verl's FSDP root unit's post-backward (setup.cpp set_fsdp1_root): the views' gradients joined
// beside the gathered root, then the root freed and its gradient cast, padded and reduced.
// The fp32 cast and its padding are made on FSDP1's post-backward stream (_post_backward_hook:
// `with state._device_handle.stream(state._post_backward_stream)`), whose cached blocks the
// default stream never reuses.
void AllocStream::root_post_backward_step() {
  const auto pieces = take(s_.fsdp_root_grad), grad = take(s_.fsdp_root_grad);
  drop(pieces);
  drop(root_);
  root_ = CachingAllocator::kNoHandle;
  const auto reduce = take(s_.fsdp_root_reduce, kPostBackwardStream);
  if (fsdp1_grads_ && s_.fsdp_root_reduce > 0)
    fsdp1_sharded_grad(kRootUnit, s_.fsdp_root_held / dtype_bytes(gather_dtype(s_.config)));
  drop(reduce);
  drop(grad);
}

// verl's FSDP1 unit of `elems` elements (padded to the shard group, as its FlatParameter is), at
// its post-backward (fsdp1_grads_in_backward): the rank's fp32 shard, made on the post-backward
// stream while the cast gradient it is reduced from lives; the first of the step becomes the
// unit's gradient (_accumulate_sharded_grad), a later micro-batch's is added into it and goes.
void AllocStream::fsdp1_sharded_grad(std::uint64_t unit, std::uint64_t padded_elems) {
  const std::uint64_t ranks = shard_ranks(s_.config.par);
  const Handle h =
      take(ck_.mul(padded_elems / ranks, dtype_bytes(s_.config.grad_dtype), "device.tensor"),
           kPostBackwardStream);
  if (grads_made_.insert(unit).second)
    step_grads_.push_back(h);
  else
    drop(h);
}

// A decoder layer's unit after its backward: its shard of the gradient. The layer's own cast
// gradient and the autograd join before it are not modelled (docs/frameworks.md, "verl's FSDP
// root unit").
void AllocStream::fsdp1_post_backward(std::uint64_t g, std::uint64_t elems) {
  const std::uint64_t ranks = shard_ranks(s_.config.par);
  fsdp1_sharded_grad(g, ck_.mul(ceil_div(elems, ranks), ranks, "device.tensor"));
}

void AllocStream::weight_layer(const StepEvent& at) {
  release(Key{at.mb, at.chunk, at.lo | kWgradStore});
}

void AllocStream::event(const StepEvent& at, const LiveBytes&) {
  if ((stop_at_oom_ && a_->stats().ooms != 0) || prefix_oom_) return;
  switch (at.kind) {
    case StepEvent::kBwdInput:
      backward_layer(at, true);
      break;
    case StepEvent::kBwdWeight:
      weight_layer(at);
      break;
    case StepEvent::kFwd:
      if (forward_start(at)) break;  // verl's FSDP2: its groups are gathered by forward_layer
      if (at.lo == s_.ranks[rank_].chunk_first[at.chunk]) {
        ++forwards_;
        if (watch_.p != 0) boundary(at);
      }
      forward_layer(at);
      break;
    case StepEvent::kRecompute:
      recompute(at);
      break;
    case StepEvent::kBwd:
      // verl's FSDP root unit's post-backward: its gradient joined, cast and reduced (setup.cpp
      // set_fsdp1_root), one block as the walk counts it.
      if (root_post_backward(at))
        root_post_backward_step();
      else
        backward_layer(at);
      break;
    case StepEvent::kLossFwd: {
      // The output layer's records join the micro-batch; the fp32 logits buffer lives through
      // the loss (the walker's loss forward).
      gather(0);  // FSDP2: the root's post-forward (forward_layer); nothing held otherwise
      Held& h = held(at, kOutputLayer);
      if (s_.loss_logits > 0) {
        // The measured order (docs/validation.md 4.6): the head's input side, the logits, their
        // fp32 copy, the log-softmax and the rest; the copy freed, then the logits.
        Handle logits = CachingAllocator::kNoHandle, copy = CachingAllocator::kNoHandle;
        for (std::size_t i = 0; i < out_records_.size(); ++i) {
          if (i == log_softmax_at_) logits = take(s_.loss_logits), copy = take(s_.loss_fwd_ws);
          h.push_back(take(out_records_[i]));
        }
        drop(copy);
        drop(logits);
        if (verl2_) drop_all(root_copies_);  // (below)
        break;
      }
      for (Bytes b : out_records_) h.push_back(take(b));
      // verl's FSDP2: the root's post-forward reshards it after the head's forward.
      if (verl2_) drop_all(root_copies_);
      drop(take(s_.loss_fwd_ws));
      break;
    }
    case StepEvent::kLossBwd: {
      const auto g1 = take(s_.loss_bwd_bufs[0]), g2 = take(s_.loss_bwd_bufs[1]),
                 g3 = take(s_.loss_bwd_bufs[2]);
      // verl's FSDP2: the head's backward gathers the root again (copied out, its all-gather
      // output freed), then prefetches the last layer (setup.cpp set_verl_fsdp2).
      if (verl2_) {
        gather(s_.ranks[rank_].fsdp_root_gather);
        take_records(root_copies_, root_params_, 0);
        gather(0);
        gather(s_.kind_at(s_.model.layers - 1).param_bytes);
      }
      drop(g1);
      drop(g2);
      drop(g3);
      // The head's backward, after the loss's: its gradients; under FSDP the root's gradients,
      // counted in every layer backward's transient that follows (setup.cpp), taken here at
      // the head's.
      if (!grads_static_ && grads_made_.insert(kOutputLayer).second)
        for (Bytes b : head_grads_) step_grads_.push_back(take(b));
      // FSDP2 per parameter: held to the root's post-backward at the end of backward (its
      // post_backward runs in the final callback), as the measured trace shows them freed there.
      if (fsdp2_params_ && root_grads_ == CachingAllocator::kNoHandle)
        root_grads_ = take(s_.fsdp_root_grads);
      else
        drop(take(s_.fsdp_root_grads));
      release(Key{at.mb, at.chunk, kOutputLayer});
      break;
    }
    case StepEvent::kOptimizer: {
      if (!states_done_) allocate_states(), states_done_ = true;
      optimizer_step();
      // zero_grad(set_to_none=True), PyTorch's default since 2.0: the step's gradients go.
      for (auto hh : step_grads_) drop(hh);
      step_grads_.clear();
      grads_made_.clear();
      chunk_gathered_.assign(chunk_gathered_.size(), false);
      break;
    }
  }
}

}  // namespace actmem::detail
