// shared_forwards (schedule.hpp): how far a step of n micro-batches runs as the step of m does,
// counted by hand from the op orders for_each_op follows (1F1B: Narayanan et al. 2021, Sec. 2.2;
// interleaved: Megatron-LM schedules.py forward_backward_pipelining_with_interleaving; GPipe:
// Huang et al. 2019). The device replay stops a shortened run's verdict at a failed request
// before that many forwards (device/replay.cpp; tests/device/test_device_verdict.cpp checks the
// verdicts against the whole step's).
#include <catch2/catch.hpp>

#include "actmem/schedules/schedule.hpp"

using namespace actmem;

TEST_CASE("shared_forwards: the forwards a shorter step runs exactly as the longer one does",
          "[schedule]") {
  // 1F1B, p 4, rank 0: 3 warm-up forwards, then pairs. n = 8 runs its 8 forwards as m = 16 does
  // and parts after the backward that follows the 8th (n: a cool-down backward, m: a forward).
  CHECK(shared_forwards(Schedule::k1F1B, 0, 4, 1, 8, 16) == 8);
  // n = 2 has a warm-up of 2 (at most n), then backwards: m's third forward is where they part.
  CHECK(shared_forwards(Schedule::k1F1B, 0, 4, 1, 2, 16) == 2);
  CHECK(shared_forwards(Schedule::k1F1B, 3, 4, 1, 5, 9) == 5);  // the last rank: no warm-up
  // Interleaved, p 4, v 2, rank 0: a warm-up of (4 - 1)·2 + 4 = 10 virtual micro-batches for
  // n = 8 and m = 16 alike, so all 16 of n's forwards are m's.
  CHECK(shared_forwards(Schedule::kInterleaved, 0, 4, 2, 8, 16) == 16);
  CHECK(shared_forwards(Schedule::kInterleaved, 3, 4, 2, 8, 16) == 16);  // warm-up 4
  // n = p runs every forward first (8), m = 8 warms up with 10: they part after 8.
  CHECK(shared_forwards(Schedule::kInterleaved, 0, 4, 2, 4, 8) == 8);
  // GPipe: chunk 0's n forwards, then n goes on to chunk 1 (or backwards) where m does not.
  CHECK(shared_forwards(Schedule::kGpipe, 0, 4, 1, 8, 16) == 8);
  CHECK(shared_forwards(Schedule::kGpipe, 0, 4, 2, 8, 16) == 8);
  // Not a shorter step, or a split-backward schedule (its ops: split_schedule.hpp): none.
  CHECK(shared_forwards(Schedule::k1F1B, 0, 4, 1, 16, 16) == 0);
  CHECK(shared_forwards(Schedule::kZbH1, 0, 4, 1, 8, 16) == 0);
}
