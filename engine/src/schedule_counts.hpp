// Internal: how many micro-batch chunks each pipeline rank holds at its activation peak (1F1B and
// Megatron-LM's interleaved 1F1B warm-up counts).
#pragma once

#include <cstdint>

namespace actmem::detail {

struct InFlight {
  std::uint64_t chunks = 0;       // model chunks (of L/(p*v) layers) whose activations coexist
  std::uint64_t first_chunk = 0;  // of which belong to chunk 0 (the embedding side on rank 0)
  std::uint64_t last_chunk = 0;   // of which belong to chunk v-1 (the logits side on rank p-1)
};

// Rank `r` of `p`, `v` virtual chunks, `m` micro-batches per step.
// 1F1B (v = 1): rank r runs p - r - 1 warm-up forwards, then one more before its first backward
// (Narayanan et al. 2021, Sec. 2.2). Interleaved: (p - r - 1) * 2 + (v - 1) * p warm-up forwards
// (Megatron-LM schedules.py, forward_backward_pipelining_with_interleaving), virtual micro-batch k
// running chunk (k / p) % v.
InFlight in_flight(std::uint64_t r, std::uint64_t p, std::uint64_t v, std::uint64_t m);

}  // namespace actmem::detail
