// The compare answer as JSON (docs/schema.md, "The compare answer").
#include "actmem/compare/compare.hpp"
#include "actmem/json_io.hpp"

namespace actmem {

using nlohmann::json;

json compare_to_json(const Comparison& c) {
  json blocks = json::array();
  for (const SnapshotBlock& b : c.largest)
    blocks.push_back(json{{"bytes", b.bytes},
                          {"requested_bytes", b.requested},
                          {"frame", b.frame},
                          {"record", b.record.empty() ? json() : json(b.record)},
                          {"record_bytes", b.record_bytes}});
  return json{
      {"ok", true},
      {"measured",
       {{"allocated_peak_bytes", c.measured_allocated},
        {"reserved_peak_bytes", c.measured_reserved},
        {"source", c.measured_source},
        {"trace", c.trace},
        {"trace_events", c.trace_events},
        {"replay_exact", c.replay_exact},
        {"peak_event", c.peak_event},
        {"peak_frame", c.peak_frame},
        {"allocated_at_snapshot_bytes", c.allocated_now},
        {"reserved_at_snapshot_bytes", c.reserved_now},
        {"allocator", c.settings}}},
      {"predicted",
       {{"allocated_peak_bytes", c.predicted_allocated},
        {"reserved_peak_bytes", c.predicted_reserved},
        {"peak_at", c.predicted_peak_at}}},
      {"error_pct", {{"allocated", c.error_allocated_pct}, {"reserved", c.error_reserved_pct}}},
      {"largest_blocks", blocks},
      {"explained_bytes", c.explained_bytes},
      {"unexplained_bytes", c.unexplained_bytes},
      {"notes", c.notes}};
}

}  // namespace actmem
