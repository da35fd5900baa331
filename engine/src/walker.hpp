// Internal: the step walker of one pipeline rank, shared by evaluate() (peak only, the collapsed op
// walk) and the timeline (every op, with a recorder that receives each event).
#pragma once

#include "actmem/evaluation.hpp"
#include "actmem/schedule.hpp"

namespace actmem::detail {

// Receives the events of a recorded walk (the timeline's report builds labels from them).
class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual void event(const StepEvent& at, const LiveBytes& live) = 0;
};

// Fills the scratch's per-layer arrays for policy `r` (choices, kept, regenerated, full bytes,
// transients, recompute FLOPs); returns the recompute FLOPs (extra) and all layers' forward FLOPs
// through the pointers. `compact` (one-kind stacks only) keeps one chunk's worth of layers, which
// serves every chunk; a walk that records layer events needs every global layer (false).
void fill_layers(const Setup& s, const Recompute& r, Evaluation::Scratch& sc, double* layers_fwd,
                 double* extra, bool compact);

// Walks rank `rank` of the step. With `rec`, every op is walked and recorded (one event per layer
// when `layer_events`, else each op's highest); without, the collapsed walk (schedule.hpp).
void walk_rank(const Setup& s, bool offload, std::uint64_t rank, Evaluation::Scratch& sc,
               Checked& ck, Recorder* rec, bool layer_events, StageEval* out);

}  // namespace actmem::detail
