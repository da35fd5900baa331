// User text inside one-line messages (text.hpp): escaping and shortening without a JSON library.
#include "actmem/core/text.hpp"

#include <algorithm>
#include <cstdint>

namespace actmem {

namespace {

// Where the next well-formed UTF-8 sequence at s[i] ends and its code point (Unicode 15, Table
// 3-7: the second byte's range depends on the first). Returns the bytes read: the whole sequence,
// or, when it is ill-formed, 1 for a bad first byte and the number of good bytes before the one
// that broke it otherwise (that byte then starts the next sequence); *ok says which.
std::size_t next_code_point(std::string_view s, std::size_t i, std::uint32_t* cp, bool* ok) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  *ok = false;
  if (b0 < 0x80) {
    *cp = b0;
    *ok = true;
    return 1;
  }
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 1;  // a continuation byte, C0, C1 or F5..FF where a sequence must start
  }
  std::uint32_t c = b0 & (0x7Fu >> n);
  for (std::size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return k;  // cut short by the end of the text
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return k;
    c = (c << 6) | (b & 0x3Fu);
  }
  *cp = c;
  *ok = true;
  return n;
}

// "\\u" and four lower-case hex digits of a UTF-16 unit.
void append_u(std::string* out, std::uint32_t unit) {
  static const char kHex[] = "0123456789abcdef";
  *out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) *out += kHex[(unit >> shift) & 0xFu];
}

void append_code_point(std::string* out, std::uint32_t cp) {
  switch (cp) {
    case '\b':
      *out += "\\b";
      return;
    case '\t':
      *out += "\\t";
      return;
    case '\n':
      *out += "\\n";
      return;
    case '\f':
      *out += "\\f";
      return;
    case '\r':
      *out += "\\r";
      return;
    case '"':
      *out += "\\\"";
      return;
    case '\\':
      *out += "\\\\";
      return;
    default:
      break;
  }
  if (cp >= 0x20 && cp < 0x7F) {
    *out += static_cast<char>(cp);
  } else if (cp <= 0xFFFF) {
    append_u(out, cp);
  } else {  // UTF-16 surrogate pair
    append_u(out, 0xD7C0u + (cp >> 10));
    append_u(out, 0xDC00u + (cp & 0x3FFu));
  }
}

}  // namespace

std::string quoted_text(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = 0;
    bool ok = false;
    i += next_code_point(text, i, &cp, &ok);
    if (ok)
      append_code_point(&out, cp);
    else
      out += "\\ufffd";
  }
  return out + "\"";
}

std::string quoted_short(std::string_view text) {
  std::string s = quoted_text(text);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string shown_text(std::string_view text) {
  const bool plain =
      text.size() <= kPlainTextMax && std::all_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u >= 0x20 && u < 0x7f;
      });
  return plain ? std::string(text) : quoted_short(text);
}

}  // namespace actmem
