// A real run against the prediction: a torch.cuda.memory._snapshot() pickle (and optionally the
// run's torch.cuda.memory_stats()) read and compared with the device figure of the same
// configuration: measured vs predicted allocated and reserved peaks, where each peak happens, the
// largest live blocks at the measured peak with the record each most likely is, and what no record
// explains.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actmem/core/checked.hpp"
#include "actmem/core/error.hpp"
#include "actmem/device/allocator.hpp"

namespace actmem {

struct Estimate;

// Peaks the user measured (torch.cuda.memory_stats()'s "allocated_bytes.all.peak" and
// "reserved_bytes.all.peak"); 0 when not given.
struct MeasuredStats {
  Bytes allocated_peak = 0, reserved_peak = 0;
};

struct SnapshotBlock {
  Bytes bytes = 0;      // the block as the allocator holds it
  Bytes requested = 0;  // what the program asked for
  std::string frame;    // where it was allocated (the innermost Python frame), if recorded
  std::string record;   // the predicted record of the same size, "" when none is
  Bytes record_bytes = 0;
};

struct Comparison {
  // What the snapshot says.
  Bytes measured_allocated = 0, measured_reserved = 0;
  std::string measured_source;  // "trace replay", "memory_stats", "segments at snapshot time"
  bool trace = false;           // the snapshot recorded history (_record_memory_history)
  bool replay_exact = false;    // the replay put every allocation at its recorded address
  std::uint64_t trace_events = 0;
  std::uint64_t peak_event = 0;               // index in the trace of the measured allocated peak
  std::string peak_frame;                     // the allocation that reached it
  Bytes allocated_now = 0, reserved_now = 0;  // when the snapshot was taken
  std::string settings;                       // the allocator settings the snapshot records
  // What the engine predicts for the configuration.
  Bytes predicted_allocated = 0, predicted_reserved = 0;
  std::string predicted_peak_at;  // the tensor peak's event
  double error_allocated_pct = 0, error_reserved_pct = 0;
  std::vector<SnapshotBlock> largest;  // live at the measured peak, largest first (at most 16)
  Bytes explained_bytes = 0, unexplained_bytes = 0;  // live at the peak, with or without a record
  std::vector<std::string> notes;
};

// Reads `snapshot` (the pickle's bytes) and compares it with `e`'s device figure (e must carry it:
// estimate() with a GPU or explain). `stats` replaces the trace's peaks when given.
Result<Comparison> compare_snapshot(const Estimate& e, std::string_view snapshot,
                                    const MeasuredStats& stats);

}  // namespace actmem
