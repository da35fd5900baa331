// Internal: the step walker of one pipeline rank, shared by evaluate() (peak only, the collapsed op
// walk) and the timeline (every op, with a recorder that receives each event).
#pragma once

#include "actmem/schedules/schedule.hpp"
#include "actmem/step/evaluation.hpp"

namespace actmem::detail {

// Receives the events of a recorded walk (the timeline's report builds labels from them).
class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual void event(const StepEvent& at, const LiveBytes& live) = 0;
};

// Walks rank `rank` of the step. With `rec`, every op is walked and recorded (one event per layer
// when `layer_events`, else each op's highest); without, the collapsed walk (schedule.hpp).
void walk_rank(const Setup& s, std::uint64_t rank, Evaluation::Scratch& sc, Checked& ck,
               Recorder* rec, bool layer_events, StageEval* out);

// The whole step: every rank walked, the most loaded found, the recompute overhead. `recorders`
// (one per rank, null entries for ranks not recorded) turns on the recorded walk; null, the
// collapsed peak walk that evaluate() is.
std::optional<Error> walk_step(const Setup& s, const Recompute& r, Recorder* const* recorders,
                               bool layer_events, Evaluation* out);

}  // namespace actmem::detail
