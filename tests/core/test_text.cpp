// core/text.hpp: user text in one-line messages, escaped without a JSON library. Source of truth:
// nlohmann::json 3.11's serializer (dump(-1, ' ', true, error_handler_t::replace)), which the
// readers used before the core stopped including it; every answer's error wording depends on it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "actmem/core/text.hpp"

namespace {

std::string nlohmann_quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace

TEST_CASE("quoted_text: named cases written as nlohmann's serializer writes them", "[text]") {
  using actmem::quoted_text;
  CHECK(quoted_text("abc") == "\"abc\"");
  CHECK(quoted_text("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(quoted_text("\b\f\n\r\t\x01\x1f\x7f") == "\"\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\"");
  CHECK(quoted_text("\xc3\xa9") == "\"\\u00e9\"");                 // é
  CHECK(quoted_text("\xf0\x9f\x98\x80") == "\"\\ud83d\\ude00\"");  // U+1F600: a surrogate pair
  CHECK(quoted_text("\xff") == "\"\\ufffd\"");                     // never a first byte
  CHECK(quoted_text("\xe2\x82") == "\"\\ufffd\"");                 // cut short by the end
  CHECK(quoted_text("\xe2\x41") == "\"\\ufffdA\"");  // the breaking byte is read again
  CHECK(quoted_text("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate: ED then A0
  CHECK(quoted_text(std::string("a\0b", 3)) == "\"a\\u0000b\"");
  for (const char* s : {"abc", "\xe2\x41", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe0\x9f\x80"})
    CHECK(quoted_text(s) == nlohmann_quoted(s));
}

TEST_CASE("quoted_text equals nlohmann's dump on 200,000 random byte strings", "[text]") {
  // Bytes drawn to hit every UTF-8 class: ASCII, controls, continuations, each lead byte range.
  std::mt19937 rng(20261203);
  const unsigned char kBytes[] = {0x00, 0x09, 0x1f, 0x22, 0x41, 0x5c, 0x7e, 0x7f, 0x80, 0x8f,
                                  0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1,
                                  0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  std::uniform_int_distribution<std::size_t> len(0, 12), pick(0, sizeof kBytes - 1), any(0, 255),
      coin(0, 3);
  std::size_t mismatches = 0;
  for (int n = 0; n < 200000; ++n) {
    std::string s(len(rng), '\0');
    for (char& c : s) c = static_cast<char>(coin(rng) ? kBytes[pick(rng)] : any(rng));
    if (actmem::quoted_text(s) != nlohmann_quoted(s)) {
      ++mismatches;
      INFO("input bytes: " << nlohmann_quoted(s));
      CHECK(actmem::quoted_text(s) == nlohmann_quoted(s));
      if (mismatches > 5) break;
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("shown_text: short printable text as typed, anything else quoted and cut to 40",
          "[text]") {
  using actmem::shown_text;
  CHECK(shown_text("expandable_segments") == "expandable_segments");
  CHECK(shown_text(std::string(64, 'a')) == std::string(64, 'a'));
  CHECK(shown_text(std::string(65, 'a')) == "\"" + std::string(36, 'a') + "...");
  CHECK(shown_text("a\nb") == "\"a\\nb\"");
  CHECK(shown_text("").empty());
}
