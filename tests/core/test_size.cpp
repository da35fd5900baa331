// Byte sizes parsed exactly (size.hpp): the one parser behind --gpu-memory and config.gpu_memory.
#include "actmem/core/size.hpp"
#include "helpers.hpp"

using namespace actmem::test;

TEST_CASE("parse_size: exact integer arithmetic, units, the fraction of a byte dropped once",
          "[size]") {
  const std::pair<const char*, std::uint64_t> good[] = {
      {"80GiB", 85899345920ull},
      {"80 GiB", 85899345920ull},
      {"79.6GiB", 85469849190ull},                // 85469849190.4 rounded down
      {"9007199254740993", 9007199254740993ull},  // 2^53 + 1: a double would give ...992
      {"1.5KiB", 1536},
      {"141GB", 141000000000ull},
      {"1B", 1},
      {"9223372036854775807", 9223372036854775807ull},
  };
  for (const auto& [text, bytes] : good) {
    actmem::Bytes b = 0;
    INFO(text);
    REQUIRE(actmem::parse_size(text, &b));
    CHECK(b == bytes);
  }
  for (const char* bad : {"", "GiB", "1..5GiB", "-5GiB", "0", "0.5B", "80 gib", "80GiBx", "1e9",
                          "9223372036854775808", "8589934592GiB", ".", "0x10"}) {
    actmem::Bytes b = 0;
    INFO(bad);
    CHECK_FALSE(actmem::parse_size(bad, &b));
  }
}

TEST_CASE("config.gpu_memory: a size as text, refused by name when it is not one", "[size]") {
  const json r = run_preset("gpt2", {{"gpu_memory", "24GiB"}});
  CHECK(u(r["gpu"]["memory_bytes"]) == 24 * kGiB);
  const json bad =
      actmem::evaluate_json({{"preset", "gpt2"}, {"config", {{"gpu_memory", "-5GiB"}}}});
  CHECK(bad["error"]["field"] == "config.gpu_memory");
  CHECK(bad["error"]["message"] ==
        "config.gpu_memory: '-5GiB' is not a size; allowed: a positive number of bytes, or a "
        "number with B, KiB, MiB, GiB, TiB, KB, MB, GB or TB (e.g. 80GiB, 79.6GiB)");
  const json both = actmem::evaluate_json(
      {{"preset", "gpt2"}, {"config", {{"gpu_memory", "1GiB"}, {"gpu_memory_bytes", 5}}}});
  CHECK(both["error"]["field"] == "config.gpu_memory");
}
