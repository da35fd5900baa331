// The pickle reader (pickle.hpp): a stack machine over the opcodes CPython's pickle module writes
// for plain containers (Lib/pickletools.py documents each), values kept in one arena and referred
// to by index, so shared (memoized) objects are never copied and nothing is freed recursively.
#include "actmem/compare/pickle.hpp"

#include <cstring>

namespace actmem {

namespace {

constexpr const char* kField = "snapshot";

struct Reader {
  std::string_view b;
  std::size_t pos = 0;
  bool has(std::size_t n) const { return b.size() - pos >= n; }
  std::uint64_t le(std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < n; ++k)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[pos + k])) << (8 * k);
    pos += n;
    return v;
  }
};

}  // namespace

Result<Pickle> Pickle::parse(std::string_view bytes) {
  if (bytes.size() > kMaxSnapshotBytes)
    return make_error("too_large", kField,
                      "snapshot: " + std::to_string(bytes.size()) + " bytes; at most " +
                          std::to_string(kMaxSnapshotBytes) + " (1 GiB) are read");
  Pickle p;
  p.values_.emplace_back();  // index 0: None
  Reader r{bytes};
  std::vector<Id> stack;
  std::vector<std::size_t> marks;
  std::vector<Id> memo;
  auto fail = [&](const std::string& what) {
    return make_error(
        "invalid_value", kField,
        "snapshot: not a memory snapshot pickle at byte " + std::to_string(r.pos) + ": " + what);
  };
  auto add = [&](Value v) -> Id {
    p.values_.push_back(std::move(v));
    return static_cast<Id>(p.values_.size() - 1);
  };
  auto push = [&](Id id) { stack.push_back(id); };
  // Pops everything above the last mark.
  auto pop_mark = [&](std::vector<Id>* out) -> bool {
    if (marks.empty() || marks.back() > stack.size()) return false;
    out->assign(stack.begin() + static_cast<std::ptrdiff_t>(marks.back()), stack.end());
    stack.resize(marks.back());
    marks.pop_back();
    return true;
  };
  std::vector<Id> popped;
  while (true) {
    if (p.values_.size() > kMaxPickleValues)
      return fail("more than " + std::to_string(kMaxPickleValues) + " values");
    if (stack.size() > kMaxPickleStack || marks.size() > kMaxPickleStack)
      return fail("deeper than " + std::to_string(kMaxPickleStack) + " stack entries");
    if (!r.has(1)) return fail("it ends before its STOP opcode");
    const unsigned char op = static_cast<unsigned char>(r.b[r.pos++]);
    auto need = [&](std::size_t n) { return r.has(n); };
    switch (op) {
      case 0x80:  // PROTO
        if (!need(1)) return fail("truncated PROTO");
        if (r.le(1) > 5) return fail("pickle protocol above 5");
        break;
      case 0x95:  // FRAME: a length hint only
        if (!need(8)) return fail("truncated FRAME");
        r.le(8);
        break;
      case '.':  // STOP
        if (stack.size() != 1) return fail("STOP with " + std::to_string(stack.size()) + " values");
        p.root_ = stack.back();
        return p;
      case '(':  // MARK
        marks.push_back(stack.size());
        break;
      case '}': {  // EMPTY_DICT
        Value v;
        v.kind = Kind::kDict;
        push(add(std::move(v)));
        break;
      }
      case ']': {  // EMPTY_LIST
        Value v;
        v.kind = Kind::kList;
        push(add(std::move(v)));
        break;
      }
      case ')': {  // EMPTY_TUPLE
        Value v;
        v.kind = Kind::kTuple;
        push(add(std::move(v)));
        break;
      }
      case 0x8f: {  // EMPTY_SET: kept as a list
        Value v;
        v.kind = Kind::kList;
        push(add(std::move(v)));
        break;
      }
      case 't': {  // TUPLE
        if (!pop_mark(&popped)) return fail("TUPLE without a mark");
        Value v;
        v.kind = Kind::kTuple;
        v.items = popped;
        push(add(std::move(v)));
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const std::size_t n = op - 0x84u;
        if (stack.size() < n) return fail("TUPLE" + std::to_string(n) + " on a short stack");
        Value v;
        v.kind = Kind::kTuple;
        v.items.assign(stack.end() - static_cast<std::ptrdiff_t>(n), stack.end());
        stack.resize(stack.size() - n);
        push(add(std::move(v)));
        break;
      }
      case 'a':  // APPEND
        if (stack.size() < 2 || !p.is(stack[stack.size() - 2], Kind::kList))
          return fail("APPEND without a list");
        p.values_[stack[stack.size() - 2]].items.push_back(stack.back());
        stack.pop_back();
        break;
      case 'e':     // APPENDS
      case 0x90: {  // ADDITEMS (to a set, kept as a list)
        if (!pop_mark(&popped) || stack.empty() || !p.is(stack.back(), Kind::kList))
          return fail("APPENDS without a list");
        auto& items = p.values_[stack.back()].items;
        items.insert(items.end(), popped.begin(), popped.end());
        break;
      }
      case 's':  // SETITEM
        if (stack.size() < 3 || !p.is(stack[stack.size() - 3], Kind::kDict))
          return fail("SETITEM without a dict");
        {
          auto& items = p.values_[stack[stack.size() - 3]].items;
          items.push_back(stack[stack.size() - 2]);
          items.push_back(stack.back());
        }
        stack.resize(stack.size() - 2);
        break;
      case 'u': {  // SETITEMS
        if (!pop_mark(&popped) || popped.size() % 2 != 0 || stack.empty() ||
            !p.is(stack.back(), Kind::kDict))
          return fail("SETITEMS without a dict or with an odd count");
        auto& items = p.values_[stack.back()].items;
        items.insert(items.end(), popped.begin(), popped.end());
        break;
      }
      case 0x94:  // MEMOIZE
        if (stack.empty()) return fail("MEMOIZE on an empty stack");
        memo.push_back(stack.back());
        break;
      case 'q':
      case 'r': {  // BINPUT, LONG_BINPUT
        const std::size_t n = op == 'q' ? 1 : 4;
        if (!need(n) || stack.empty()) return fail("truncated PUT");
        const std::uint64_t k = r.le(n);
        if (k > kMaxPickleValues) return fail("memo index too large");
        if (memo.size() <= k) memo.resize(static_cast<std::size_t>(k) + 1, kNone);
        memo[static_cast<std::size_t>(k)] = stack.back();
        break;
      }
      case 'h':
      case 'j': {  // BINGET, LONG_BINGET
        const std::size_t n = op == 'h' ? 1 : 4;
        if (!need(n)) return fail("truncated GET");
        const std::uint64_t k = r.le(n);
        if (k >= memo.size()) return fail("memo index " + std::to_string(k) + " not set");
        push(memo[static_cast<std::size_t>(k)]);
        break;
      }
      case 'N':  // NONE
        push(kNone);
        break;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Value v;
        v.kind = Kind::kBool;
        v.flag = op == 0x88;
        push(add(std::move(v)));
        break;
      }
      case 'J':
      case 'K':
      case 'M': {  // BININT (signed 4), BININT1, BININT2 (unsigned)
        const std::size_t n = op == 'J' ? 4 : op == 'K' ? 1 : 2;
        if (!need(n)) return fail("truncated integer");
        std::uint64_t u = r.le(n);
        Value v;
        v.kind = Kind::kInt;
        v.i = op == 'J' ? static_cast<std::int64_t>(static_cast<std::int32_t>(u))
                        : static_cast<std::int64_t>(u);
        push(add(std::move(v)));
        break;
      }
      case 0x8a:
      case 0x8b: {  // LONG1, LONG4: little-endian two's complement of n bytes
        const std::size_t w = op == 0x8a ? 1 : 4;
        if (!need(w)) return fail("truncated long");
        const std::uint64_t n = r.le(w);
        if (n > 8) return fail("an integer wider than 64 bits");
        if (!need(static_cast<std::size_t>(n))) return fail("truncated long");
        std::uint64_t u = r.le(static_cast<std::size_t>(n));
        if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~std::uint64_t{0} << (8 * n);  // sign
        Value v;
        v.kind = Kind::kInt;
        v.i = static_cast<std::int64_t>(u);
        push(add(std::move(v)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        if (!need(8)) return fail("truncated float");
        std::uint64_t u = 0;
        for (int k = 0; k < 8; ++k)
          u = (u << 8) | static_cast<unsigned char>(r.b[r.pos + static_cast<std::size_t>(k)]);
        r.pos += 8;
        Value v;
        v.kind = Kind::kFloat;
        std::memcpy(&v.f, &u, sizeof v.f);
        push(add(std::move(v)));
        break;
      }
      case 0x8c:
      case 'X':
      case 0x8d:
      case 'C':
      case 'B':
      case 0x8e: {  // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8, SHORT_BINBYTES, BINBYTES,
                    // BINBYTES8
        const std::size_t w = op == 0x8c || op == 'C' ? 1 : op == 0x8d || op == 0x8e ? 8 : 4;
        if (!need(w)) return fail("truncated string length");
        const std::uint64_t n = r.le(w);
        if (n > r.b.size() - r.pos) return fail("a string runs past the end of the file");
        Value v;
        v.kind = op == 'C' || op == 'B' || op == 0x8e ? Kind::kBytes : Kind::kStr;
        v.s.assign(r.b.data() + r.pos, static_cast<std::size_t>(n));
        r.pos += static_cast<std::size_t>(n);
        push(add(std::move(v)));
        break;
      }
      default: {
        // GLOBAL, REDUCE, BUILD, NEWOBJ, PERSID and the text protocol: objects, not data.
        static const char* const hex = "0123456789abcdef";
        std::string code = "0x";
        code += hex[op >> 4];
        code += hex[op & 15];
        --r.pos;
        return fail("opcode " + code +
                    " is not one a memory snapshot uses (objects and globals are refused)");
      }
    }
  }
}

Pickle::Id Pickle::get(Id dict, std::string_view key) const {
  const Value& d = values_[dict];
  if (d.kind != Kind::kDict) return kNone;
  for (std::size_t k = 0; k + 1 < d.items.size(); k += 2) {
    const Value& kv = values_[d.items[k]];
    if (kv.kind == Kind::kStr && kv.s == key) return d.items[k + 1];
  }
  return kNone;
}

std::int64_t Pickle::int_or(Id id, std::int64_t fallback) const {
  const Value& v = values_[id];
  if (v.kind == Kind::kInt) return v.i;
  if (v.kind == Kind::kBool) return v.flag ? 1 : 0;
  return fallback;
}

const std::string& Pickle::str(Id id) const {
  static const std::string empty;
  return values_[id].kind == Kind::kStr ? values_[id].s : empty;
}

}  // namespace actmem
