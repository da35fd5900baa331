// torchtitan's published Llama 3.1 H100 memory table
// (tests/data/torchtitan_llama3_h100_202412.json: 18 rows, reserved GiB per GPU) against the engine
// under --framework torchtitan: every row's configuration gives the engine figure recorded beside
// the published one, and the recorded errors and goal summary follow from them (docs/validation.md,
// "torchtitan's benchmark").
#include <algorithm>
#include <cmath>
#include <fstream>

#include "helpers.hpp"

namespace actmem::test {

TEST_CASE("torchtitan llama3_h100_202412: every row's engine figure and the goal summary") {
  std::ifstream in(std::string(ACTMEM_SOURCE_DIR) +
                   "/tests/data/torchtitan_llama3_h100_202412.json");
  REQUIRE(in.good());
  const json table = json::parse(in);
  std::vector<double> errors;
  std::uint64_t within = 0;
  for (const json& row : table["rows"]) {
    INFO("table " << row["table"].get<std::string>() << ": " << row["row"].get<std::string>());
    const json r = evaluate_json({{"preset", row["preset"]}, {"config", row["config"]}});
    if (row["engine_reserved_bytes"].is_null()) {
      // A configuration the engine cannot express stays listed, with the engine's refusal.
      REQUIRE_FALSE(r.value("ok", true));
      CHECK(r["error"]["message"] == row["engine_error"]);
      CHECK(row["error_pct"].is_null());
      continue;
    }
    REQUIRE(r.value("ok", false));
    const std::uint64_t reserved = u(r["device"]["reserved_peak_bytes"]);
    CHECK(reserved == u(row["engine_reserved_bytes"]));
    const double gib = static_cast<double>(reserved) / static_cast<double>(kGiB);
    const double published = row["published_gib"].get<double>();
    const double err = (gib - published) / published * 100.0;
    CHECK(std::round(err * 10) / 10 == Approx(row["error_pct"].get<double>()).margin(1e-9));
    errors.push_back(std::fabs(err));
    if (std::fabs(err) <= 5.0) ++within;
    // A row whose switches are all modelled is within 3% (issue 36's stated tolerance; the 8B
    // rows of tables 1 and 3 are within 1%, and table 1's two are measured: validation.md 4.6).
    if (row["not_modelled"] == "") CHECK(std::fabs(err) <= 3.0);
  }
  const json& s = table["summary"];
  CHECK(u(s["rows"]) == table["rows"].size());
  CHECK(u(s["engine_figures"]) == errors.size());
  CHECK(u(s["within_5pct"]) == within);
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  const double median = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  CHECK(std::round(median * 10) / 10 ==
        Approx(s["median_abs_error_pct"].get<double>()).margin(0.051));
  CHECK(median <= 3.0);  // the goal (issue 36)
  CHECK(std::round(errors.back() * 10) / 10 ==
        Approx(s["max_abs_error_pct"].get<double>()).margin(0.051));
}

}  // namespace actmem::test
