// User text inside a one-line message: a value a person typed, shown as they typed it when it is
// short printable ASCII, and otherwise escaped and shortened so that an error line stays one line
// of plain ASCII (docs/reliability.md). The engine's one definition; the JSON readers use it too.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace actmem {

// Longest text shown as it is (a longer one is quoted and shortened).
constexpr std::size_t kPlainTextMax = 64;

// `text` as a JSON string literal in ASCII: quotes, \" \\ \b \f \n \r \t, \u00XX for other control
// characters, \uXXXX (a surrogate pair above U+FFFF) for every code point from U+007F, and \ufffd
// for each ill-formed UTF-8 sequence (Unicode 15, Table 3-7; a byte that ends a sequence early is
// read again as the start of the next). Byte for byte what nlohmann::json's dump(-1, ' ', true,
// error_handler_t::replace) writes for a string (3.11; tests/core/test_text.cpp compares the two).
std::string quoted_text(std::string_view text);

// `quoted_text` cut to 40 characters ("..." in the last three) when longer.
std::string quoted_short(std::string_view text);

// Printable ASCII up to kPlainTextMax characters as it is, anything else as quoted_short.
std::string shown_text(std::string_view text);

}  // namespace actmem
