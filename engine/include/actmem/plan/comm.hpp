// Bytes one GPU sends over the network per training step, by parallelism (tensor, context,
// pipeline, data, expert), from the setup's layout: the advisor's communication criterion.
// Counts bytes sent per GPU under NCCL's ring algorithms, never a time: bandwidth and overlap are
// the user's to apply (docs/advisor.md).
#pragma once

#include <cstdint>

#include "actmem/config/config.hpp"
#include "actmem/core/checked.hpp"
#include "actmem/core/error.hpp"

namespace actmem {

struct Setup;

struct CommBytes {
  Bytes tp = 0;  // TP/SP all-reduces (or all-gather + reduce-scatter pairs) of the layer blocks
  Bytes cp = 0;  // context-parallel ring exchanges of K and V (and their gradients)
  Bytes pp = 0;  // pipeline point-to-point activations and their gradients
  Bytes dp = 0;  // gradient reduction, ZeRO's parameter gathers
  Bytes ep = 0;  // expert-parallel all-to-all dispatch and combine
  Bytes total = 0;
  std::uint64_t stage = 0;  // the pipeline rank that sends the most (whose figures these are)
};

// The pipeline rank that sends the most under `r` on `s` (ties: the first), with its figures.
// Sources per term in docs/advisor.md; each product checked (overflow is an error naming the
// parallelism).
Result<CommBytes> comm_per_step(const Setup& s, const Recompute& r);

}  // namespace actmem
