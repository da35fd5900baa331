// A TOML 1.0 reader for launch configurations (read/toml.hpp): the grammar of toml.io/en/v1.0.0
// for the values config files hold, every number checked, every refusal naming its line.
#include "read/toml.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <vector>

namespace actmem::detail {

using nlohmann::json;

namespace {

bool bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}
bool digit(char c) {
  return c >= '0' && c <= '9';
}
// TOML bans control characters other than tab in comments and strings.
bool control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t') || u == 0x7F;
}

// The offset of the first byte that does not start or continue a well-formed UTF-8 sequence
// (no overlong forms, surrogates or code points past U+10FFFF), or npos.
std::size_t bad_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF)
      n = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
      n = 2, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
      n = 3, cp = c & 0x07;
    else
      return i;
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += n + 1;
  }
  return std::string::npos;
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& field) : s_(text), field_(field) {}

  Result<json> run() {
    if (s_.size() > kMaxTomlBytes)
      return fail("the text has " + std::to_string(s_.size()) + " bytes; at most " +
                  std::to_string(kMaxTomlBytes));
    // TOML is UTF-8 without a byte-order mark (Python's tomllib, which torchtitan reads with,
    // refuses both).
    if (s_.compare(0, 3, "\xEF\xBB\xBF") == 0)
      return fail("the text starts with a UTF-8 byte-order mark (U+FEFF); save it without one");
    if (const std::size_t at = bad_utf8(s_); at != std::string::npos) {
      line_ = 1 + static_cast<std::size_t>(std::count(s_.begin(), s_.begin() + at, '\n'));
      return fail("the text is not valid UTF-8 (byte " + std::to_string(at) +
                  "); TOML files are UTF-8");
    }
    json root = json::object();
    std::vector<std::string> table;  // the current table's path
    std::set<std::vector<std::string>> headers;
    while (true) {
      skip_ws();
      if (i_ >= s_.size()) break;
      const char c = s_[i_];
      if (c == '#' || c == '\n' || c == '\r') {
        if (auto e = end_of_line()) return *e;
        continue;
      }
      if (c == '[') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '[')
          return fail(
              "an array of tables ([[...]]) is not read here; a launch configuration "
              "has none");
        ++i_;
        skip_ws();
        std::vector<std::string> path;
        if (auto e = key_path(&path)) return *e;
        skip_ws();
        if (i_ >= s_.size() || s_[i_] != ']') return fail("a table header needs its closing ]");
        ++i_;
        if (!headers.insert(path).second) return fail("table [" + joined(path) + "] given twice");
        json* t = &root;
        for (const std::string& k : path) {
          if (t->contains(k) && !(*t)[k].is_object())
            return fail("[" + joined(path) + "]: " + shown(k) + " already holds a value");
          t = &(*t)[k];
          if (t->is_null()) *t = json::object();
        }
        table = path;
        if (auto e = end_of_line()) return *e;
        continue;
      }
      std::vector<std::string> path;
      if (auto e = key_path(&path)) return *e;
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != '=')
        return fail("expected = after the key " + shown(joined(path)));
      ++i_;
      skip_ws();
      json v;
      if (auto e = value(&v, 0)) return *e;
      json* t = &root;
      for (const std::string& k : table) t = &(*t)[k];
      for (std::size_t j = 0; j + 1 < path.size(); ++j) {
        if (t->contains(path[j]) && !(*t)[path[j]].is_object())
          return fail(shown(joined(path)) + ": " + shown(path[j]) + " already holds a value");
        t = &(*t)[path[j]];
        if (t->is_null()) *t = json::object();
      }
      if (t->contains(path.back()))
        return fail("the key " + shown(joined(path)) + " is given twice");
      (*t)[path.back()] = std::move(v);
      if (auto e = end_of_line()) return *e;
    }
    return root;
  }

 private:
  const std::string& s_;
  const std::string& field_;
  std::size_t i_ = 0, line_ = 1, values_ = 0;

  Error fail(const std::string& msg) const {
    return make_error("invalid_value", field_,
                      field_ + ": line " + std::to_string(line_) + ": " + msg);
  }
  static std::string joined(const std::vector<std::string>& p) {
    std::string out;
    for (const std::string& k : p) out += (out.empty() ? "" : ".") + k;
    return out;
  }
  // A key or token for a message: printable ASCII as is, the rest escaped, at most 40 characters.
  static std::string shown(const std::string& t) {
    std::string s = json(t.size() > 40 ? t.substr(0, 37) + "..." : t)
                        .dump(-1, ' ', true, json::error_handler_t::replace);
    return s;
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  // A comment, then the end of the line (or of the text).
  std::optional<Error> end_of_line() {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '#')
      for (; i_ < s_.size() && s_[i_] != '\n' && s_[i_] != '\r'; ++i_)
        if (control(s_[i_])) return fail("a control character in a comment");
    if (i_ >= s_.size()) return std::nullopt;
    if (s_[i_] == '\r') {
      if (i_ + 1 >= s_.size() || s_[i_ + 1] != '\n') return fail("a carriage return alone");
      ++i_;
    }
    if (s_[i_] != '\n') {
      const std::size_t eol = s_.find_first_of("\r\n", i_);
      return fail("expected the end of the line at " +
                  shown(s_.substr(
                      i_, std::min<std::size_t>(eol == std::string::npos ? 20 : eol - i_, 20))));
    }
    ++i_;
    ++line_;
    return std::nullopt;
  }
  // Blank space, newlines and comments inside an array.
  std::optional<Error> skip_array_space() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
      } else if (c == '\n') {
        ++i_;
        ++line_;
      } else if (c == '#') {
        for (; i_ < s_.size() && s_[i_] != '\n'; ++i_)
          if (control(s_[i_]) && s_[i_] != '\r') return fail("a control character in a comment");
      } else {
        break;
      }
    }
    return std::nullopt;
  }

  std::optional<Error> key_path(std::vector<std::string>* path) {
    while (true) {
      std::string k;
      if (i_ < s_.size() && (s_[i_] == '"' || s_[i_] == '\'')) {
        if (auto e = string_value(&k)) return e;
      } else {
        const std::size_t start = i_;
        while (i_ < s_.size() && bare_key_char(s_[i_])) ++i_;
        if (i_ == start)
          return fail(i_ < s_.size() ? "a key cannot start with " + shown(s_.substr(i_, 1))
                                     : "a key is missing");
        k = s_.substr(start, i_ - start);
      }
      path->push_back(k);
      skip_ws();
      if (i_ < s_.size() && s_[i_] == '.') {
        ++i_;
        skip_ws();
        continue;
      }
      return std::nullopt;
    }
  }

  // A basic ("...", with escapes) or literal ('...') string on one line.
  std::optional<Error> string_value(std::string* out) {
    const char q = s_[i_];
    if (s_.compare(i_, 3, std::string(3, q)) == 0)
      return fail("multi-line strings are not read here; write the value on one line");
    ++i_;
    while (true) {
      if (i_ >= s_.size() || s_[i_] == '\n' || s_[i_] == '\r')
        return fail(std::string("a string is not closed (") + q + ")");
      const char c = s_[i_++];
      if (c == q) return std::nullopt;
      if (control(c)) return fail("a control character in a string; write it as an escape");
      if (c != '\\' || q == '\'') {
        *out += c;
        continue;
      }
      if (i_ >= s_.size()) return fail("a string ends in a backslash");
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
          *out += e;
          break;
        case 'b':
          *out += '\b';
          break;
        case 't':
          *out += '\t';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'r':
          *out += '\r';
          break;
        case 'u':
        case 'U': {
          const std::size_t len = e == 'u' ? 4 : 8;
          std::uint32_t cp = 0;
          for (std::size_t j = 0; j < len; ++j, ++i_) {
            if (i_ >= s_.size()) return fail("a \\u escape needs its hex digits");
            const char h = s_[i_];
            const int d = digit(h)                 ? h - '0'
                          : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                          : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                   : -1;
            if (d < 0) return fail("a \\u escape needs hex digits");
            cp = cp * 16 + static_cast<std::uint32_t>(d);
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail("a \\u escape is not a Unicode scalar value");
          // UTF-8.
          if (cp < 0x80) {
            *out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            *out += static_cast<char>(0xC0 | (cp >> 6));
            *out += static_cast<char>(0x80 | (cp & 0x3F));
          } else if (cp < 0x10000) {
            *out += static_cast<char>(0xE0 | (cp >> 12));
            *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            *out += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            *out += static_cast<char>(0xF0 | (cp >> 18));
            *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            *out += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          return fail("the escape \\" + shown(std::string(1, e)) + " is not TOML's");
      }
    }
  }

  std::optional<Error> value(json* out, std::size_t depth) {
    if (++values_ > kMaxTomlValues)
      return fail("more than " + std::to_string(kMaxTomlValues) + " values");
    if (i_ >= s_.size() || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '#')
      return fail("a value is missing");
    const char c = s_[i_];
    if (c == '"' || c == '\'') {
      std::string v;
      if (auto e = string_value(&v)) return e;
      *out = v;
      return std::nullopt;
    }
    if (c == '{') return fail("inline tables ({...}) are not read here; use a [table]");
    if (c == '[') {
      if (depth + 1 > kMaxTomlDepth)
        return fail("arrays nested more than " + std::to_string(kMaxTomlDepth) + " deep");
      ++i_;
      *out = json::array();
      while (true) {
        if (auto e = skip_array_space()) return e;
        if (i_ >= s_.size()) return fail("an array is not closed (])");
        if (s_[i_] == ']') {
          ++i_;
          return std::nullopt;
        }
        json v;
        if (auto e = value(&v, depth + 1)) return e;
        out->push_back(std::move(v));
        if (auto e = skip_array_space()) return e;
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == ']') continue;
        return fail("expected , or ] in an array");
      }
    }
    // A bare token: boolean, integer, float (or a date, refused).
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] != ' ' && s_[i_] != '\t' && s_[i_] != ',' && s_[i_] != ']' &&
           s_[i_] != '#' && s_[i_] != '\n' && s_[i_] != '\r')
      ++i_;
    const std::string t = s_.substr(start, i_ - start);
    if (t == "true" || t == "false") {
      *out = t == "true";
      return std::nullopt;
    }
    if (t == "inf" || t == "+inf" || t == "-inf" || t == "nan" || t == "+nan" || t == "-nan") {
      *out = t[0] == '-' && t[1] == 'i' ? "-inf" : t.back() == 'f' ? "inf" : "nan";
      return std::nullopt;
    }
    return number(t, out);
  }

  // Decimal integers and floats with TOML's underscores (each between two digits).
  std::optional<Error> number(const std::string& t, json* out) {
    const std::string what = "the value " + shown(t) + " is not a TOML boolean, number or string";
    std::size_t j = 0;
    const bool neg = !t.empty() && t[0] == '-';
    if (!t.empty() && (t[0] == '+' || t[0] == '-')) ++j;
    if (t.size() > j + 1 && t[j] == '0' && (t[j + 1] == 'x' || t[j + 1] == 'o' || t[j + 1] == 'b'))
      return fail("the value " + shown(t) + ": only decimal integers are read here");
    // Dates and times (1979-05-27, 07:32:00) start with four digits and a dash, or hold a colon.
    if (t.find(':') != std::string::npos ||
        (t.size() >= 5 && digit(t[0]) && digit(t[1]) && digit(t[2]) && digit(t[3]) && t[4] == '-'))
      return fail("the value " + shown(t) + ": dates and times are not read here");
    std::string plain;  // without underscores
    bool is_float = false;
    // digits ( '_' digits )*
    auto digits = [&](bool* any) {
      *any = false;
      while (j < t.size()) {
        if (digit(t[j])) {
          plain += t[j++];
          *any = true;
        } else if (t[j] == '_' && *any && j + 1 < t.size() && digit(t[j + 1])) {
          ++j;
        } else {
          break;
        }
      }
    };
    if (neg) plain += '-';
    bool any = false;
    const std::size_t int_start = j;
    digits(&any);
    if (!any) return fail(what);
    if (t[int_start] == '0' && j - int_start > 1 && digit(t[int_start + 1]))
      return fail("the value " + shown(t) + ": a leading zero is not allowed");
    if (j < t.size() && t[j] == '.') {
      is_float = true;
      plain += t[j++];
      digits(&any);
      if (!any) return fail(what);
    }
    if (j < t.size() && (t[j] == 'e' || t[j] == 'E')) {
      is_float = true;
      plain += t[j++];
      if (j < t.size() && (t[j] == '+' || t[j] == '-')) plain += t[j++];
      digits(&any);
      if (!any) return fail(what);
    }
    if (j != t.size()) return fail(what);
    if (is_float) {
      errno = 0;
      const double d = std::strtod(plain.c_str(), nullptr);
      if (errno == ERANGE && (d > 1 || d < -1))
        return fail("the value " + shown(t) + " is out of a double's range");
      *out = d;
      return std::nullopt;
    }
    // A 64-bit signed integer, as TOML requires: larger is an error, never a wrap.
    std::uint64_t mag = 0;
    const std::uint64_t limit = neg ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
    for (std::size_t k = neg ? 1 : 0; k < plain.size(); ++k) {
      const std::uint64_t d = static_cast<std::uint64_t>(plain[k] - '0');
      if (mag > (limit - d) / 10)
        return fail("the integer " + shown(t) + " is out of the 64-bit range TOML allows");
      mag = mag * 10 + d;
    }
    if (neg)
      *out = mag == (std::uint64_t{1} << 63) ? std::numeric_limits<std::int64_t>::min()
                                             : -static_cast<std::int64_t>(mag);
    else
      *out = static_cast<std::int64_t>(mag);
    return std::nullopt;
  }
};

}  // namespace

Result<json> parse_toml(const std::string& text, const std::string& field) {
  return Parser(text, field).run();
}

}  // namespace actmem::detail
