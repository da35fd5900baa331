// JSON for the advise answer: the ranked layouts confirmed on the device, the screened front, and
// each layout's config as estimate reads it (one-click apply on the page, --config on the CLI).
#include "actmem/json_io.hpp"
#include "actmem/plan/advisor.hpp"
#include "write/config_json.hpp"

namespace actmem {

using nlohmann::json;

namespace {

json layout_json(const Layout& l) {
  const TrainConfig& c = l.config;
  // The config's keys at the top level too (layer_split and offload always, seq only in config),
  // with the criteria and figures beside them.
  // The keys advise chose, as the request's config takes them: passed back to estimate with the
  // same model, GPU and base config they give the same peak.
  const json config = detail::layout_config(c);
  json j = config;
  j.erase("seq");
  j["layer_split"] = c.layer_split;
  j["offload"] = c.recompute.offload;
  j.update(json{{"num_gpus", l.num_gpus},
                {"peak_bytes", l.peak_bytes},
                {"screen_headroom_bytes", l.screen_headroom_bytes},
                {"bubble_pct", l.bubble_pct},
                {"recompute_overhead_pct", l.recompute_overhead_pct},
                {"offload_exposed_pct", l.offload_exposed_pct},
                {"comm_bytes", l.comm.total},
                {"comm",
                 {{"tp", l.comm.tp},
                  {"cp", l.comm.cp},
                  {"pp", l.comm.pp},
                  {"dp", l.comm.dp},
                  {"ep", l.comm.ep},
                  {"stage", l.comm.stage}}},
                {"config", config}});
  if (l.device_checked) {
    j["fits"] = l.fits;
    j["device_total_bytes"] = l.device_total_bytes;
    j["headroom_bytes"] = l.headroom_bytes;
  }
  return j;
}

}  // namespace

json advice_to_json(const Advice& a) {
  json layouts = json::array(), front = json::array();
  for (const Layout& l : a.layouts) layouts.push_back(layout_json(l));
  // The front can hold hundreds of layouts for a large range; the first kMaxFrontListed are
  // written (front_size says how many there are).
  constexpr std::size_t kMaxFrontListed = 200;
  for (std::size_t i = 0; i < a.front.size() && i < kMaxFrontListed; ++i)
    front.push_back(layout_json(a.front[i]));
  return json{
      {"ok", true},
      {"capacity_bytes", a.capacity},
      {"global_batch", a.global_batch},
      {"num_gpus", {{"min", a.gpus_min}, {"max", a.gpus_max}}},
      {"enumerated", a.enumerated},
      {"simulated", a.simulated},
      {"screened_fit", a.screened_fit},
      {"device_checks", a.device_checks},
      {"device_refused", a.device_refused},
      {"front_size", a.front.size()},
      {"criteria",
       json::array({"bubble_pct + recompute_overhead_pct (lost compute, % of the ideal "
                    "step)",
                    "comm_bytes (sent per GPU per step)", "num_gpus", "headroom (most first)"})},
      {"layouts", layouts},
      {"front", front},
      {"notes", a.notes}};
}

}  // namespace actmem
