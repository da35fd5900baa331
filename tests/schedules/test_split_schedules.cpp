// Split-backward schedules (split_schedule.hpp): each rank's op order equal to what the code that
// runs them produces (PyTorch 2.6's ScheduleInterleavedZeroBubble and ScheduleZBVZeroBubble called
// on p = 4, m = 8; deepseek-ai/DualPipe 3da1bbea's DualPipe.step and DualPipeV.step transcribed and
// run, p = 4), and the micro-batches each rank holds at once equal to the sources' tables (ZB
// authors' README: ZB-H1 and ZB-V 1x 1F1B's activations; DualPipe README and DeepSeek-V3 Table 2:
// PP + 1).
#include <string>

#include <catch2/catch.hpp>

#include "actmem/schedules/split_schedule.hpp"

using namespace actmem;

namespace {

// "F0 I0 W0 ..." (one chunk) or "F0.0 I1.0 ..." (chunk.micro-batch).
std::string text(const std::vector<SplitOp>& ops, bool chunks) {
  std::string s;
  for (const SplitOp& o : ops) {
    if (!s.empty()) s += ' ';
    s += static_cast<char>(o.kind);
    if (chunks) s += std::to_string(o.chunk) + ".";
    s += std::to_string(o.mb);
  }
  return s;
}

}  // namespace

TEST_CASE("ZB-H1 op order per rank equals PyTorch 2.6 ScheduleInterleavedZeroBubble, p=4 m=8",
          "[schedule][split]") {
  const char* want[] = {"F0 F1 F2 F3 I0 W0 F4 I1 W1 F5 I2 W2 F6 I3 W3 F7 I4 W4 I5 W5 I6 W6 I7 W7",
                        "F0 F1 F2 I0 F3 I1 W0 F4 I2 W1 F5 I3 W2 F6 I4 W3 F7 I5 W4 I6 W5 I7 W6 W7",
                        "F0 F1 I0 F2 I1 F3 I2 W0 F4 I3 W1 F5 I4 W2 F6 I5 W3 F7 I6 W4 I7 W5 W6 W7",
                        "F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 I4 W1 F5 I5 W2 F6 I6 W3 F7 I7 W4 W5 W6 W7"};
  for (std::uint64_t r = 0; r < 4; ++r) CHECK(text(zb_h1_ops(r, 4, 8), false) == want[r]);
}

TEST_CASE("ZB-V op order per rank equals PyTorch 2.6 ScheduleZBVZeroBubble, p=4 m=8",
          "[schedule][split]") {
  const char* want[] = {
      "F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 F1.0 I1.0 W1.0 F1.1 I1.1 W1.1 F1.2 I1.2 W1.2 F1.3 I1.3 "
      "W1.3 F0.7 I0.0 W0.0 F1.4 I1.4 W1.4 I0.1 W0.1 F1.5 I1.5 W1.5 I0.2 W0.2 F1.6 I1.6 W1.6 I0.3 "
      "W0.3 F1.7 I1.7 W1.7 I0.4 W0.4 I0.5 W0.5 I0.6 W0.6 I0.7 W0.7",
      "F0.0 F0.1 F0.2 F0.3 F0.4 F1.0 F0.5 F1.1 I1.0 W1.0 F1.2 I1.1 W1.1 F1.3 I1.2 W1.2 F0.6 I0.0 "
      "W0.0 F1.4 I1.3 W1.3 F0.7 I0.1 W0.1 F1.5 I1.4 W1.4 I0.2 W0.2 F1.6 I1.5 W1.5 I0.3 W0.3 F1.7 "
      "I1.6 W1.6 I0.4 I1.7 I0.5 W0.4 I0.6 W0.5 I0.7 W0.6 W1.7 W0.7",
      "F0.0 F0.1 F0.2 F1.0 F0.3 F1.1 F0.4 F1.2 I1.0 W1.0 F1.3 I1.1 W1.1 F0.5 I0.0 W0.0 F1.4 I1.2 "
      "W1.2 F0.6 I0.1 W0.1 F1.5 I1.3 W1.3 F0.7 I0.2 W0.2 F1.6 I1.4 W1.4 I0.3 W0.3 F1.7 I1.5 W1.5 "
      "I0.4 I1.6 I0.5 I1.7 I0.6 W0.4 I0.7 W0.5 W1.6 W1.7 W0.6 W0.7",
      "F0.0 F1.0 F0.1 F1.1 F0.2 F1.2 F0.3 F1.3 I1.0 W1.0 F0.4 I0.0 W0.0 F1.4 I1.1 W1.1 F0.5 I0.1 "
      "W0.1 F1.5 I1.2 W1.2 F0.6 I0.2 W0.2 F1.6 I1.3 W1.3 F0.7 I0.3 W0.3 F1.7 I1.4 W1.4 I0.4 I1.5 "
      "I0.5 I1.6 I0.6 I1.7 I0.7 W0.4 W1.5 W1.6 W1.7 W0.5 W0.6 W0.7"};
  for (std::uint64_t r = 0; r < 4; ++r) CHECK(text(zb_v_ops(r, 4, 8), true) == want[r]);
}

TEST_CASE("DualPipe and DualPipeV op orders per rank equal deepseek-ai/DualPipe's step(), p=4",
          "[schedule][split]") {
  const char* dual[] = {
      "F0.0 F0.1 F0.2 F1.0 I1.0 W1.0 F1.1 F0.3 B1.1 F1.2 B0.0 B1.2 F1.3 B0.1 B1.3 I0.2 W0.2 I0.3 "
      "W0.3",
      "F0.0 F1.0 F0.1 F1.1 F0.2 B1.0 F1.2 B0.0 F0.3 B1.1 F1.3 B0.1 B1.2 B0.2 I1.3 I0.3 W1.3 W0.3",
      "F1.0 F0.0 F1.1 F0.1 F1.2 B0.0 F0.2 B1.0 F1.3 B0.1 F0.3 B1.1 B0.2 B1.2 I0.3 I1.3 W0.3 W1.3",
      "F1.0 F1.1 F1.2 F0.0 I0.0 W0.0 F0.1 F1.3 B0.1 F0.2 B1.0 B0.2 F0.3 B1.1 B0.3 I1.2 W1.2 I1.3 "
      "W1.3"};
  for (std::uint64_t r = 0; r < 4; ++r) {
    auto ops = dualpipe_ops(r, 4, 8);
    REQUIRE(ops.ok());
    CHECK(text(ops.value(), true) == dual[r]);
  }
  const char* v0 =
      "F0.0 F0.1 F0.2 F0.3 F0.4 F0.5 F0.6 F1.0 I1.0 W1.0 F1.1 I1.1 W1.1 F1.2 I1.2 W1.2 F1.3 F0.7 "
      "B1.3 F1.4 B0.0 F0.8 B1.4 F1.5 B0.1 F0.9 B1.5 F1.6 B0.2 B1.6 F1.7 B0.3 B1.7 F1.8 B0.4 B1.8 "
      "F1.9 B0.5 B1.9 I0.6 W0.6 I0.7 W0.7 I0.8 W0.8 I0.9 W0.9";
  const char* v3 =
      "F0.0 F1.0 F0.1 F1.1 F0.2 F1.2 F0.3 F1.3 F0.4 B1.0 F1.4 B0.0 F0.5 B1.1 F1.5 B0.1 F0.6 B1.2 "
      "F1.6 B0.2 F0.7 B1.3 F1.7 B0.3 F0.8 B1.4 F1.8 B0.4 F0.9 B1.5 F1.9 B0.5 B1.6 B0.6 B1.7 B0.7 "
      "I1.8 I0.8 I1.9 I0.9 W1.8 W0.8 W1.9 W0.9";
  CHECK(text(dualpipev_ops(0, 4, 10).value(), true) == v0);
  CHECK(text(dualpipev_ops(3, 4, 10).value(), true) == v3);
  CHECK_FALSE(dualpipe_ops(0, 3, 12).ok());  // odd pp
  CHECK_FALSE(dualpipe_ops(0, 4, 6).ok());   // fewer than 2 pp micro-batches
  CHECK_FALSE(dualpipev_ops(0, 4, 7).ok());
}

TEST_CASE(
    "Micro-batches each rank holds: ZB-H1 p (1F1B's), ZB-V 2p chunks (1F1B's), DualPipe PP+1, "
    "DualPipeV 2P+1 chunks",
    "[schedule][split]") {
  for (std::uint64_t p : {2, 4, 8})
    for (std::uint64_t m : {2 * p, 3 * p, std::uint64_t{24}}) {
      INFO("p " << p << " m " << m);
      for (std::uint64_t r = 0; r < p; ++r) {
        // ZB-H1: rank r holds p - r micro-batches' whole activations and r more waiting for W.
        CHECK(peak_alive(zb_h1_ops(r, p, m)) == p);
        CHECK(peak_alive(zb_h1_ops(r, p, m), true) == p - r);
        CHECK(peak_alive(zb_v_ops(r, p, m)) == 2 * p);
        if (m % 2 == 0) CHECK(peak_alive(dualpipe_ops(r, p, m).value()) == p + 1);
        CHECK(peak_alive(dualpipev_ops(r, p, m).value()) == 2 * p + 1);
      }
    }
}
