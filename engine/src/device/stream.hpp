// Internal: the allocation stream of one pipeline rank's step (device/stream.cpp), a recorder of
// the step walker that drives the caching-allocator model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "actmem/device/allocator.hpp"
#include "actmem/device/node_pool.hpp"
#include "actmem/inventory/params.hpp"
#include "actmem/setup/setup.hpp"
#include "step/walker.hpp"

namespace actmem::detail {

// The steady state of a 1F1B or interleaved step (schedule.hpp, for_each_op): the forward of
// virtual micro-batch warm + k·period, for each k with that forward below total, begins a period:
// one forward/backward pair for 1F1B (the micro-batches move by 1), p·v pairs for the interleaved
// schedule (its chunk order cycles there; the micro-batches move by p).
struct SteadyBoundaries {
  std::uint64_t p = 0, v = 1, warm = 0, total = 0;
};

// What a step's period boundaries showed: `cycle`, when its last boundary held the state of the
// boundary `cycle` periods before (the allocator's blocks by place and size, every held tensor's
// block, micro-batches counted from the boundary's; 0: none within kCycles), and what the step's
// counters moved by over those periods. The states then cycle: a step with a multiple of `cycle`
// periods more has the same peaks, its counters moved by that much per cycle (replay.cpp).
struct PeriodProof {
  std::uint64_t cycle = 0;
  std::uint64_t allocations = 0, device_allocs = 0, device_frees = 0, retries = 0, ooms = 0;
};

class AllocStream final : public Recorder {
 public:
  AllocStream(const Setup& s, const Recompute& r, std::uint64_t rank, CachingAllocator* alloc);
  // Before each walked step: the static tensors, the first time.
  void begin_step();
  // Compare the state at each of these boundaries with the one before (device/replay.cpp).
  void watch(const SteadyBoundaries& b) { watch_ = b; }
  // The step begun last: what its boundaries showed.
  const PeriodProof& proof() const { return proof_; }
  // Within a capacity, the first request that found no room decides the verdict: later events
  // are not replayed (device/replay.cpp: only for a run of the whole step, whose peaks are then
  // not reported).
  void stop_at_oom() { stop_at_oom_ = true; }
  // A shortened run (device/replay.cpp): its first step's events before its forward number
  // `forwards` (schedule.hpp shared_forwards) are the full step's, so a request that fails there
  // fails in the full step too: the run stops at it and says so.
  void stop_in_shared_prefix(std::uint64_t forwards);
  bool failed_in_shared_prefix() const { return prefix_oom_; }
  void event(const StepEvent& at, const LiveBytes& live) override;
  std::uint64_t allocations() const { return allocations_; }
  // A size product that overflowed (never for a setup that built: its totals bound every tensor).
  bool overflowed() const { return ck_.overflowed(); }

 private:
  using Handle = CachingAllocator::Handle;
  using Held = std::vector<Handle>;
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>;  // micro-batch, chunk, layer
  static constexpr std::uint64_t kInputLayer = ~std::uint64_t{0};
  static constexpr std::uint64_t kOutputLayer = ~std::uint64_t{0} - 1;
  // verl's FSDP1 root unit, as a key of grads_made_ (its gradient is made apart from the
  // embedding's and the head's).
  static constexpr std::uint64_t kRootUnit = ~std::uint64_t{0} - 2;
  static constexpr std::uint64_t kEmbedGroup = ~std::uint64_t{0} - 3;  // verl's FSDP2's embedding

  struct Kind {
    std::vector<Bytes> records;  // inventory.tensors, in order
    std::vector<bool> kept[5];   // per LayerChoice: which records stay for backward
    Bytes extra[5] = {};         // the checkpoint record a choice keeps besides them
    // The backward's gradient buffers phase by phase: (buffer number within the kind, bytes);
    // the number kDyBuffer is dY, the gradient that flows down the stack.
    std::vector<std::vector<std::pair<std::uint32_t, Bytes>>> phases;
    std::vector<Bytes> grads;  // the layer's parameter gradients
    std::vector<bool> wgrad;   // split backward: records a linear's weight gradient reads
    std::vector<Bytes> dy;     // ... and the linears' output gradients kept from I to W
    Bytes rs_out = 0;          // FSDP2 per parameter (fsdp2_params_): its reduce-scatter output
  };
  // A layer's weight-gradient store under a split-backward schedule is held under its layer
  // index with this bit set (global layer indices stay far below it).
  static constexpr std::uint64_t kWgradStore = std::uint64_t{1} << 62;

  static constexpr std::uint32_t kDyBuffer = ~std::uint32_t{0};

  // FSDP2's all-gather outputs are made on its copy-in stream (torch 2.6.0 _fsdp_collectives.py
  // foreach_all_gather under _fsdp_param_group.py get_all_gather_streams: implicit prefetching in
  // forward and backward), so their blocks are cached apart from the default stream's.
  static constexpr CachingAllocator::Stream kCopyInStream = 1;
  // verl's FSDP1: the root's post-backward stream (root_post_backward_step).
  static constexpr CachingAllocator::Stream kPostBackwardStream = 2;
  // FSDP2's reduce-scatter stream: each group's reduce-scatter output, whose views are the
  // sharded gradients (torch 2.6.0 _fsdp_collectives.py foreach_reduce: reduce_output made under
  // `with device_handle.stream(reduce_scatter_stream)`).
  static constexpr CachingAllocator::Stream kReduceScatterStream = 3;

  Handle take(Bytes bytes, CachingAllocator::Stream stream = 0);
  void drop(Handle h);
  // FSDP2: the next group's flat all-gather output is made, then the one held is freed.
  void gather(Bytes bytes);
  // FSDP2 (fsdp2_): layer g's per-parameter tensors, one allocation each: its gathered copies
  // (`width` 0: each record's gather width; _fsdp_param.py alloc_all_gather_outputs), none for
  // the last layer, which torchtitan keeps gathered (a static line; with `kept`, its copies
  // taken once per step: fsdp2_params_), or autograd's unsharded gradients (`width` the compute
  // dtype's).
  void take_params(std::vector<Handle>& out, std::uint64_t g, Bytes width, bool kept = false);
  // Each record's tensors, one allocation per copy (`width` 0: each record's gather width).
  void take_records(std::vector<Handle>& out, const std::vector<ParamRecord>& records, Bytes width);
  std::vector<ParamRecord> layer_params() const;
  void drop_all(std::vector<Handle>& v);
  // FSDP2's post-backward: the layer resharded, the previous reduce-scatter input freed, its own
  // made from its unsharded gradients, which go.
  void post_backward(const KindEstimate& ke, std::uint64_t g);
  Bytes tensor(std::uint64_t rows, std::uint64_t cols, Bytes width);
  void grad_tensors(const std::vector<ParamRecord>& records, std::vector<Bytes>& out);
  void allocate_static();
  void allocate_param(const ParamRecord& p);
  void allocate_fsdp2_static();
  // FSDP2 per parameter (fsdp2_params_): one record's shard on this rank, dim 0 padded to the
  // shard group (_fsdp_param.py _init_sharded_param: torch.chunk, padded_sharded_size).
  ParamRecord shard(const ParamRecord& p) const;
  Bytes reduce_output(const std::vector<ParamRecord>& records);
  // The group's sharded gradients, its reduce-scatter output: held from its first post-backward
  // of the step to zero_grad; at a later micro-batch's, made, added and freed.
  void reduce_scatter_output(std::uint64_t group, Bytes bytes);
  void allocate_states();
  void optimizer_step();
  Held& held(const StepEvent& at, std::uint64_t layer);
  // Layer g's position in the event's chunk (what its recompute choice depends on).
  std::uint64_t in_chunk(const StepEvent& at, std::uint64_t g) const;
  void forward_layer(const StepEvent& at);
  void recompute(const StepEvent& at);
  // B, or a split backward's input part (I) when `input_part`: the layer's records go but its
  // weight-gradient store stays, with its linears' output gradients, until weight_layer (W).
  void backward_layer(const StepEvent& at, bool input_part = false);
  void weight_layer(const StepEvent& at);
  void root_post_backward_step();
  void fsdp1_sharded_grad(std::uint64_t unit, std::uint64_t padded_elems);
  void embed_backward();
  void fsdp1_post_backward(std::uint64_t g, std::uint64_t elems);
  void release(const Key& k);
  // A period boundary: the state compared with the previous boundary's (watch()).
  void boundary(const StepEvent& at);
  // The state as words given to `put`, micro-batches counted from `base`
  // (CachingAllocator::canonical).
  template <class Put>
  void canonical(std::uint64_t base, Put&& put);
  PeriodProof counters() const;
  // The last boundaries' hashes and counters (a ring, newest at ring_at_ - 1).
  static constexpr std::size_t kCycles = 16;

  const Setup& s_;
  const Recompute& r_;
  std::uint64_t rank_;
  CachingAllocator* a_;
  Checked ck_;
  std::vector<Kind> kinds_;
  std::vector<Bytes> in_records_, out_records_, embed_grads_, head_grads_;
  std::size_t log_softmax_at_ = 0;  // out_records_'s loss.log_softmax_out (Setup::loss_logits)
  std::vector<Handle> statics_, step_grads_;
  std::vector<ParamRecord> params_;  // plain PyTorch: whose optimizer states the first step makes
  // Plain PyTorch's foreach AdamW: one exp_avg_sq-sized tensor per parameter at each step (its
  // sqrt list), in parameter order; empty where the step's transient is one block.
  std::vector<Bytes> step_list_;
  std::vector<Handle> step_held_;  // the list while the step runs
  std::set<std::uint64_t> grads_made_;
  // What each (micro-batch, chunk, layer) holds. The map's nodes come from a pool and released
  // entries' vectors are reused: a replay of thousands of micro-batches then allocates nothing
  // per layer (node_pool.hpp says why that matters).
  using LiveMap = std::map<Key, Held, std::less<Key>, PoolAllocator<std::pair<const Key, Held>>>;
  std::unique_ptr<NodePool> nodes_ = std::make_unique<NodePool>();
  LiveMap live_{PoolAllocator<std::pair<const Key, Held>>(nodes_.get())};
  std::vector<Held> spare_;                              // cleared vectors of released entries
  std::vector<Handle> made_;                             // forward_layer's scratch
  std::vector<std::pair<std::uint32_t, Handle>> alive_;  // backward_layer's scratch
  Handle dy_ = CachingAllocator::kNoHandle;
  Handle root_ = CachingAllocator::kNoHandle;  // verl's FSDP root unit, held (forward_layer)
  Handle ag_ = CachingAllocator::kNoHandle;    // FSDP2: the all-gather output held (copy-in stream)
  Handle rs_ = CachingAllocator::kNoHandle;    // FSDP2: the last reduce-scatter input (fp32)
  std::vector<Handle> copies_, unsharded_grads_;  // FSDP2: a layer's gathered parameters
  // FSDP2 per parameter (fsdp2_params_): the groups kept gathered from their forward to their
  // post-backward, the root's and torchtitan's last block's copies.
  std::vector<Handle> root_copies_, last_copies_;
  Handle root_grads_ = CachingAllocator::kNoHandle;  // ... and the root's unsharded gradients
  bool fsdp2_ = false;  // torchtitan's FSDP2, layers resharded: its buffers each layer (setup.cpp)
  // torchtitan's FSDP2 with its layers resident (gathers_resident): the all-gather outputs of a
  // chunk's first forward of the step only (later forwards find the group unsharded), and which
  // chunks have had it this step.
  bool fsdp2_resident_ = false;
  // FSDP2 with its layers resharded and one pipeline stage: its tensors as FSDP2 makes them, one
  // per parameter (the sharded parameters at fully_shard, the optimizer states at the first
  // step, carved from the cached activation blocks), the gradients per group on the reduce-
  // scatter stream in backward (docs/validation.md 4.6: the measured step's trace).
  bool fsdp2_params_ = false;
  // verl's FSDP1 (fsdp1_grads_in_backward): each unit's gradient shard made at its post-backward.
  bool fsdp1_grads_ = false;
  // verl's FSDP2 (sharding.hpp verl_fsdp2): its root resharded after forward, no last block
  // kept (last_kept_ is torchtitan's), an untied embedding's group of its own.
  bool verl2_ = false, last_kept_ = false;
  Bytes embed_rs_out_ = 0;
  std::vector<ParamRecord> root_params_;  // its root group's records
  Bytes root_rs_out_ = 0;
  std::vector<bool> chunk_gathered_;
  bool static_done_ = false, grads_static_ = false, states_done_ = false;
  bool split_ = false;  // a split-backward schedule: linear inputs are held apart
  bool stop_at_oom_ = false;
  // stop_in_shared_prefix: the forwards shared (0: off), those begun this step, the step's index.
  std::uint64_t shared_forwards_ = 0, forwards_ = 0;
  int step_ = -1;
  bool prefix_oom_ = false;
  std::uint64_t allocations_ = 0;
  SteadyBoundaries watch_;
  PeriodProof proof_;
  struct Seen {
    std::uint64_t hash = 0;
    PeriodProof counters;
  };
  Seen ring_[kCycles];
  std::size_t ring_at_ = 0, ring_n_ = 0;  // the next slot; the boundaries seen (this step)
  // A cycle the hashes suggest is checked word by word: the state of boundary `suspect_at`,
  // compared with the state `suspect_cycle` boundaries later.
  std::vector<std::uint64_t> suspect_, now_;
  std::size_t suspect_at_ = 0, suspect_cycle_ = 0;
};

}  // namespace actmem::detail
