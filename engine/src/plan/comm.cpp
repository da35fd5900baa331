// Bytes one GPU sends per training step, by parallelism: the advisor's communication criterion.
// Every term counts what NCCL's ring algorithms send per GPU (NCCL PERFORMANCE.md, "bus
// bandwidth": an all-reduce of n bytes over g ranks sends 2(g-1)/g·n per rank, an all-gather or a
// reduce-scatter (g-1)/g·n); the message sizes follow Megatron-LM's layouts (docs/advisor.md).
#include "actmem/plan/comm.hpp"

#include "actmem/setup/policy.hpp"
#include "actmem/setup/setup.hpp"

namespace actmem {

namespace {

// What one rank of g sends in an all-gather or reduce-scatter of n bytes: floor((g-1)/g·n),
// written n - ceil(n/g) so that no product can wrap.
Bytes ring_share(Bytes n, std::uint64_t g) {
  return g <= 1 ? 0 : n - ceil_div(n, g);
}

// A layer re-runs its forward in backward (full, every:K, custom and pattern segments): its
// tensor-parallel collectives and all-to-alls run again.
bool reruns_forward(LayerChoice c) {
  return c == LayerChoice::kCheckpoint || c == LayerChoice::kRecompute || c == LayerChoice::kCustom;
}

}  // namespace

Result<CommBytes> comm_per_step(const Setup& s, const Recompute& r) {
  const TrainConfig& c = s.config;
  const Parallel& p = c.par;
  const std::uint64_t m = c.grad_accum, act = dtype_bytes(c.act_dtype);
  const std::uint64_t tok = c.seq / p.cp;  // tokens of one sequence on one CP rank
  const bool sp = p.sp && p.tp > 1;
  Checked ck;
  // One micro-batch's hidden states on a CP rank: b·(s/cp)·h elements (Korthikanti et al. 2022,
  // Sec. 4.2.2: the tensor each TP all-reduce, or SP all-gather / reduce-scatter pair, moves).
  const Bytes hidden =
      ck.mul(ck.mul(ck.mul(c.micro_batch, tok, "comm"), s.model.hidden, "comm"), act, "comm");
  // An all-reduce and an SP all-gather + reduce-scatter pair send the same bytes per rank.
  const Bytes tp_msg = ck.mul(ring_share(hidden, p.tp), 2, "comm.tp");
  // Micro-batches through each chunk: all m, or half under DualPipe (a chunk is a direction).
  const std::uint64_t mc = effective_schedule(c) == Schedule::kDualPipe ? m / 2 : m;
  CommBytes best;
  bool first = true;
  for (const RankSetup& rs : s.ranks) {
    CommBytes cb;
    cb.stage = rs.index;
    for (std::size_t ci = 0; ci < rs.chunk_sizes.size(); ++ci)
      for (std::uint64_t j = 0; j < rs.chunk_sizes[ci]; ++j) {
        const LayerKind& k = s.model.kind_of(rs.chunk_first[ci] + j);
        const LayerChoice choice = choice_at(r, j);
        const std::uint64_t again = reruns_forward(choice) ? 1 : 0;
        // Tensor parallelism: one collective in the forward and one in the backward of each block
        // (the mixer's output and the FFN's; Narayanan et al. 2021, Sec. 3.3 and Fig. 4), the
        // forward's again when backward re-runs it.
        const std::uint64_t blocks = (k.mixer != Mixer::kNone ? 1 : 0) + (k.has_ffn ? 1 : 0);
        cb.tp =
            ck.add(cb.tp, ck.mul(ck.mul(tp_msg, blocks * (2 + again), "comm.tp"), mc, "comm.tp"),
                   "comm.tp");
        // Context parallelism: the ring passes each rank's K and V chunk cp-1 times in the forward,
        // and K, V and their gradients cp-1 times each in the backward (Megatron-LM
        // transformer_engine attention with cp_comm_type p2p, Liu et al. 2023 "Ring Attention");
        // a recomputed attention core (selective or re-run forward) runs its forward ring again.
        if (p.cp > 1 && k.has_attention()) {
          const std::uint64_t kvh = k.kv_heads >= p.tp ? k.kv_heads / p.tp : 1;
          const Bytes kv = ck.mul(ck.mul(ck.mul(c.micro_batch, tok, "comm.cp"),
                                         ck.mul(kvh, k.head_dim + k.v_dim(), "comm.cp"), "comm.cp"),
                                  act, "comm.cp");
          const std::uint64_t rings = 3 + (again || choice == LayerChoice::kSelective ? 1 : 0);
          cb.cp = ck.add(cb.cp, ck.mul(ck.mul(kv, (p.cp - 1) * rings, "comm.cp"), mc, "comm.cp"),
                         "comm.cp");
        }
        // Expert parallelism: each GPU's routed token copies (top-k per token) go out in the
        // dispatch and come back in the combine, forward and backward (Lepikhin et al. 2020,
        // GShard Sec. 2.2; Megatron-LM's all-to-all token dispatcher); (ep-1)/ep of them leave
        // the GPU. Under sequence parallelism a TP rank holds s/(cp·tp) of the tokens.
        if (p.ep > 1 && k.is_moe()) {
          const Bytes routed =
              ck.mul(ck.mul(ck.mul(c.micro_batch, sp ? tok / p.tp : tok, "comm.ep"), k.moe.top_k,
                            "comm.ep"),
                     ck.mul(s.model.hidden, act, "comm.ep"), "comm.ep");
          cb.ep = ck.add(
              cb.ep,
              ck.mul(ck.mul(ring_share(routed, p.ep), 2 * (2 + again), "comm.ep"), mc, "comm.ep"),
              "comm.ep");
        }
      }
    // Pipeline parallelism: every chunk sends its output forward and its input's gradient back,
    // each micro-batch, except the model's last chunk forward and its first backward (Narayanan
    // et al. 2021, Sec. 2.2); under SP the tensor is the rank's s/tp share (Megatron-LM p2p
    // communication sends the sequence-parallel shard).
    // A chunk on stage 0 sends no gradient back and one on the last stage no output forward,
    // wherever the schedule places them (a V puts both on rank 0). DualPipe's chunks are its two
    // directions, each carrying half the micro-batches.
    if (p.pp > 1) {
      const Bytes msg = sp ? hidden / p.tp : hidden;
      const std::uint64_t v = rs.chunk_sizes.size();
      const std::uint64_t sends = 2 * v - (rs.embed_chunk != RankSetup::kNoChunk ? 1 : 0) -
                                  (rs.head_chunk != RankSetup::kNoChunk ? 1 : 0);
      cb.pp = ck.mul(ck.mul(msg, sends, "comm.pp"), mc, "comm.pp");
    }
    // Data parallelism: weights are replicated over dp x cp ranks (Megatron-LM reduces gradients
    // over the data-and-context-parallel group), routed experts over dp x cp / ep. Plain DP
    // all-reduces the gradients once a step; ZeRO-1 (Megatron-LM's distributed optimizer)
    // reduce-scatters them and all-gathers the updated parameters; ZeRO-2 reduce-scatters every
    // micro-batch's gradients (it keeps only its shard); ZeRO-3 also gathers the parameters for
    // each micro-batch's forward and backward (Rajbhandari et al. 2020, Sec. 7: 2Ψ for DP and
    // ZeRO-1/2 at one micro-batch, 3Ψ for ZeRO-3).
    // Hybrid sharding (dp_replicate = R > 1, zero >= 1): the stages above run inside each replica's
    // dp x cp / R ranks, and the reduced gradient shard is then all-reduced across the R replicas
    // as often as it is reduced (PyTorch FSDP HYBRID_SHARD; FSDP2's HSDP all_reduce_grads).
    const std::uint64_t expert = rs.stat.expert_params, dense = rs.stat.params - expert;
    const std::uint64_t R = p.zero >= 1 && p.dp_replicate > 1 ? p.dp_replicate : 1;
    const std::uint64_t groups[2] = {p.dp * p.cp / R, p.ep > 0 ? p.dp * p.cp / p.ep : 1};
    const std::uint64_t counts[2] = {dense, expert};
    for (int g = 0; g < 2; ++g) {
      const Bytes grad = ck.mul(counts[g], dtype_bytes(c.grad_dtype), "comm.dp");
      const Bytes par = ck.mul(counts[g], dtype_bytes(c.param_dtype), "comm.dp");
      const Bytes rg = ring_share(grad, groups[g]), rp = ring_share(par, groups[g]);
      Bytes d = 0;
      switch (p.zero) {
        case 0:
          d = ck.mul(rg, 2, "comm.dp");
          break;
        case 1:
          d = ck.add(rg, rp, "comm.dp");
          break;
        case 2:
          d = ck.add(ck.mul(rg, mc, "comm.dp"), rp, "comm.dp");
          break;
        default:
          d = ck.mul(ck.add(ck.mul(rp, 2, "comm.dp"), rg, "comm.dp"), mc, "comm.dp");
          break;
      }
      if (R > 1 && counts[g] > 0) {
        const Bytes shard = ceil_div(grad, groups[g]);
        const Bytes ar = ck.mul(ring_share(shard, R), 2, "comm.dp");
        d = ck.add(d, p.zero == 1 ? ar : ck.mul(ar, mc, "comm.dp"), "comm.dp");
      }
      cb.dp = ck.add(cb.dp, d, "comm.dp");
    }
    cb.total = ck.add(ck.add(ck.add(cb.tp, cb.cp, "comm"), ck.add(cb.pp, cb.dp, "comm"), "comm"),
                      cb.ep, "comm");
    if (first || cb.total > best.total) best = cb;
    first = false;
  }
  if (ck.overflowed())
    return make_error("overflow", ck.field(), ck.field() + ": bytes per step exceed 2^63-1");
  return best;
}

}  // namespace actmem
