// The pickle reader (pickle.hpp): a stack machine over the opcodes CPython's pickle module writes
// for plain containers (Lib/pickletools.py documents each), values kept in one arena and referred
// to by index, so shared (memoized) objects are never copied and nothing is freed recursively.
#include "actmem/compare/pickle.hpp"

#include <cstring>
#include <optional>

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

using Id = Pickle::Id;
using Kind = Pickle::Kind;
using Value = Pickle::Value;

// The stack machine's state: the value arena (the Pickle's own), the reader, the stack, the open
// marks and the memo. Each group of opcodes returns what was wrong, or nothing.
struct Machine {
  std::vector<Value>& values;
  Reader r;
  std::vector<Id> stack;
  std::vector<std::size_t> marks;
  std::vector<Id> memo;
  std::vector<Id> popped;

  bool need(std::size_t n) const { return r.has(n); }
  bool is(Id id, Kind k) const { return values[id].kind == k; }
  Id add(Value v) {
    values.push_back(std::move(v));
    return static_cast<Id>(values.size() - 1);
  }
  void push(Id id) { stack.push_back(id); }
  // Pops everything above the last mark.
  bool pop_mark(std::vector<Id>* out) {
    if (marks.empty() || marks.back() > stack.size()) return false;
    out->assign(stack.begin() + static_cast<std::ptrdiff_t>(marks.back()), stack.end());
    stack.resize(marks.back());
    marks.pop_back();
    return true;
  }
  void push_empty(Kind k) {
    Value v;
    v.kind = k;
    push(add(std::move(v)));
  }

  // MARK, the empty containers and the tuples.
  std::optional<std::string> build(unsigned char op) {
    switch (op) {
      case '(':  // MARK
        marks.push_back(stack.size());
        break;
      case '}':  // EMPTY_DICT
        push_empty(Kind::kDict);
        break;
      case ']':  // EMPTY_LIST
        push_empty(Kind::kList);
        break;
      case ')':  // EMPTY_TUPLE
        push_empty(Kind::kTuple);
        break;
      case 0x8f:  // EMPTY_SET: kept as a list
        push_empty(Kind::kList);
        break;
      case 't': {  // TUPLE
        if (!pop_mark(&popped)) return "TUPLE without a mark";
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
        if (stack.size() < n) return "TUPLE" + std::to_string(n) + " on a short stack";
        Value v;
        v.kind = Kind::kTuple;
        v.items.assign(stack.end() - static_cast<std::ptrdiff_t>(n), stack.end());
        stack.resize(stack.size() - n);
        push(add(std::move(v)));
        break;
      }
    }
    return std::nullopt;
  }

  // APPEND(S), ADDITEMS, SETITEM(S): filling the list or dict under the top of the stack.
  std::optional<std::string> fill(unsigned char op) {
    switch (op) {
      case 'a':  // APPEND
        if (stack.size() < 2 || !is(stack[stack.size() - 2], Kind::kList))
          return "APPEND without a list";
        values[stack[stack.size() - 2]].items.push_back(stack.back());
        stack.pop_back();
        break;
      case 'e':     // APPENDS
      case 0x90: {  // ADDITEMS (to a set, kept as a list)
        if (!pop_mark(&popped) || stack.empty() || !is(stack.back(), Kind::kList))
          return "APPENDS without a list";
        auto& items = values[stack.back()].items;
        items.insert(items.end(), popped.begin(), popped.end());
        break;
      }
      case 's':  // SETITEM
        if (stack.size() < 3 || !is(stack[stack.size() - 3], Kind::kDict))
          return "SETITEM without a dict";
        {
          auto& items = values[stack[stack.size() - 3]].items;
          items.push_back(stack[stack.size() - 2]);
          items.push_back(stack.back());
        }
        stack.resize(stack.size() - 2);
        break;
      case 'u': {  // SETITEMS
        if (!pop_mark(&popped) || popped.size() % 2 != 0 || stack.empty() ||
            !is(stack.back(), Kind::kDict))
          return "SETITEMS without a dict or with an odd count";
        auto& items = values[stack.back()].items;
        items.insert(items.end(), popped.begin(), popped.end());
        break;
      }
    }
    return std::nullopt;
  }

  // MEMOIZE, the PUTs and the GETs.
  std::optional<std::string> memo_op(unsigned char op) {
    switch (op) {
      case 0x94:  // MEMOIZE
        if (stack.empty()) return "MEMOIZE on an empty stack";
        memo.push_back(stack.back());
        break;
      case 'q':
      case 'r': {  // BINPUT, LONG_BINPUT
        const std::size_t n = op == 'q' ? 1 : 4;
        if (!need(n) || stack.empty()) return "truncated PUT";
        const std::uint64_t k = r.le(n);
        if (k > kMaxPickleValues) return "memo index too large";
        if (memo.size() <= k) memo.resize(static_cast<std::size_t>(k) + 1, Pickle::kNone);
        memo[static_cast<std::size_t>(k)] = stack.back();
        break;
      }
      case 'h':
      case 'j': {  // BINGET, LONG_BINGET
        const std::size_t n = op == 'h' ? 1 : 4;
        if (!need(n)) return "truncated GET";
        const std::uint64_t k = r.le(n);
        if (k >= memo.size()) return "memo index " + std::to_string(k) + " not set";
        push(memo[static_cast<std::size_t>(k)]);
        break;
      }
    }
    return std::nullopt;
  }

  // None, booleans, integers and floats.
  std::optional<std::string> number(unsigned char op) {
    switch (op) {
      case 'N':  // NONE
        push(Pickle::kNone);
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
        if (!need(n)) return "truncated integer";
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
        if (!need(w)) return "truncated long";
        const std::uint64_t n = r.le(w);
        if (!need(static_cast<std::size_t>(n))) return "truncated long";
        if (n > 8) {
          r.pos += static_cast<std::size_t>(n);
          Value v;
          v.kind = Kind::kBigInt;
          push(add(std::move(v)));
          break;
        }
        std::uint64_t u = r.le(static_cast<std::size_t>(n));
        if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~std::uint64_t{0} << (8 * n);  // sign
        Value v;
        v.kind = Kind::kInt;
        v.i = static_cast<std::int64_t>(u);
        push(add(std::move(v)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        if (!need(8)) return "truncated float";
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
    }
    return std::nullopt;
  }

  // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8, SHORT_BINBYTES, BINBYTES, BINBYTES8.
  std::optional<std::string> text(unsigned char op) {
    const std::size_t w = op == 0x8c || op == 'C' ? 1 : op == 0x8d || op == 0x8e ? 8 : 4;
    if (!need(w)) return "truncated string length";
    const std::uint64_t n = r.le(w);
    if (n > r.b.size() - r.pos) return "a string runs past the end of the file";
    Value v;
    v.kind = op == 'C' || op == 'B' || op == 0x8e ? Kind::kBytes : Kind::kStr;
    v.s.assign(r.b.data() + r.pos, static_cast<std::size_t>(n));
    r.pos += static_cast<std::size_t>(n);
    push(add(std::move(v)));
    return std::nullopt;
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
  Machine mc{p.values_, Reader{bytes}, {}, {}, {}, {}};
  Reader& r = mc.r;
  auto fail = [&](const std::string& what) {
    return make_error(
        "invalid_value", kField,
        "snapshot: not a memory snapshot pickle at byte " + std::to_string(r.pos) + ": " + what);
  };
  while (true) {
    if (p.values_.size() > kMaxPickleValues)
      return fail("more than " + std::to_string(kMaxPickleValues) + " values");
    if (mc.stack.size() > kMaxPickleStack || mc.marks.size() > kMaxPickleStack)
      return fail("deeper than " + std::to_string(kMaxPickleStack) + " stack entries");
    if (!r.has(1)) return fail("it ends before its STOP opcode");
    const unsigned char op = static_cast<unsigned char>(r.b[r.pos++]);
    std::optional<std::string> what;
    // The stream's own opcodes here; the others to their group, named as pickletools.py does.
    switch (op) {
      case 0x80:  // PROTO
        if (!r.has(1)) return fail("truncated PROTO");
        if (r.le(1) > 5) return fail("pickle protocol above 5");
        break;
      case 0x95:  // FRAME: a length hint only
        if (!r.has(8)) return fail("truncated FRAME");
        r.le(8);
        break;
      case '.':  // STOP
        if (mc.stack.size() != 1)
          return fail("STOP with " + std::to_string(mc.stack.size()) + " values");
        p.root_ = mc.stack.back();
        return p;
      case '(':   // MARK
      case '}':   // EMPTY_DICT
      case ']':   // EMPTY_LIST
      case ')':   // EMPTY_TUPLE
      case 0x8f:  // EMPTY_SET
      case 't':   // TUPLE
      case 0x85:  // TUPLE1
      case 0x86:  // TUPLE2
      case 0x87:  // TUPLE3
        what = mc.build(op);
        break;
      case 'a':   // APPEND
      case 'e':   // APPENDS
      case 0x90:  // ADDITEMS
      case 's':   // SETITEM
      case 'u':   // SETITEMS
        what = mc.fill(op);
        break;
      case 0x94:  // MEMOIZE
      case 'q':   // BINPUT
      case 'r':   // LONG_BINPUT
      case 'h':   // BINGET
      case 'j':   // LONG_BINGET
        what = mc.memo_op(op);
        break;
      case 'N':   // NONE
      case 0x88:  // NEWTRUE
      case 0x89:  // NEWFALSE
      case 'J':   // BININT
      case 'K':   // BININT1
      case 'M':   // BININT2
      case 0x8a:  // LONG1
      case 0x8b:  // LONG4
      case 'G':   // BINFLOAT
        what = mc.number(op);
        break;
      case 0x8c:  // SHORT_BINUNICODE
      case 'X':   // BINUNICODE
      case 0x8d:  // BINUNICODE8
      case 'C':   // SHORT_BINBYTES
      case 'B':   // BINBYTES
      case 0x8e:  // BINBYTES8
        what = mc.text(op);
        break;
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
    if (what) return fail(*what);
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
