// Pipeline schedules as per-stage op lists (GPipe, 1F1B, Megatron-LM interleaved 1F1B).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace actmem {

enum class Schedule { kGpipe, k1F1B, kInterleaved };

const char* schedule_name(Schedule s);
bool parse_schedule(const std::string& s, Schedule* out);
constexpr const char* kScheduleNames = "gpipe, 1f1b, interleaved";

// One forward or backward of one micro-batch through one model chunk on one pipeline rank.
struct PipeOp {
  bool forward = true;
  std::uint32_t micro_batch = 0;
  std::uint32_t chunk = 0;  // virtual stage index on this rank, 0..v-1
};

// The op order of rank `r` of `p` with `v` chunks per rank and `m` micro-batches:
// - GPipe (Huang et al. 2019): all m forwards, then all m backwards (last micro-batch first).
// - 1F1B (Narayanan et al. 2021, Sec. 2.2): p - r - 1 warm-up forwards, then one forward / one
//   backward, then the remaining backwards.
// - Interleaved (Megatron-LM schedules.py, forward_backward_pipelining_with_interleaving):
//   warm-up (p - r - 1) * 2 + (v - 1) * p virtual micro-batches (all of them when m == p); virtual
//   micro-batch k runs chunk (k / p) % v of micro-batch (k / (p v)) p + k % p; backwards visit the
//   chunks in reverse.
std::vector<PipeOp> pipeline_ops(Schedule s, std::uint64_t r, std::uint64_t p, std::uint64_t v,
                                 std::uint64_t m);

// The moment the most kept bytes are in flight: (micro-batch, chunk) forwards whose backward has
// not run, each weighted by its chunk's kept bytes; with the count per chunk at that moment.
struct InFlight {
  std::uint64_t chunks = 0;
  std::vector<std::uint64_t> per_chunk;  // v entries
  std::uint64_t weight = 0;              // sum of the weights in flight
};
InFlight max_in_flight(const std::vector<PipeOp>& ops,
                       const std::vector<std::uint64_t>& chunk_weight);

}  // namespace actmem
