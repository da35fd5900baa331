// Explanations: every total written out with its numbers substituted, built from the same records.
#include "report/explain.hpp"

#include <map>

namespace actmem::detail {

Explanation explain_records(const std::string& id, const std::string& title,
                            const std::vector<const TensorRecord*>& recs) {
  // Merge records with identical shape symbol and width so "2·b·s·h" appearing five times reads
  // as "10·b·s·h", the way Korthikanti et al. write 34sbh.
  struct Term {
    std::uint64_t coef = 0;
    std::string sym, vals;
    Bytes bytes = 0;
  };
  std::vector<Term> terms;
  std::map<std::string, std::size_t> index;
  Explanation e;
  e.id = id;
  e.title = title;
  for (const TensorRecord* r : recs) {
    const std::string sym = shape_symbol(r->shape);
    auto it = index.find(sym);
    if (it == index.end()) {
      index[sym] = terms.size();
      terms.push_back(Term{0, sym, shape_values(r->shape), 0});
      it = index.find(sym);
    }
    Term& t = terms[it->second];
    t.coef += dtype_bytes(r->dtype);
    t.bytes += r->bytes;
    e.bytes += r->bytes;
  }
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const std::string sep = i ? " + " : "";
    e.formula += sep + std::to_string(terms[i].coef) + "·" + terms[i].sym;
    e.substituted += sep + std::to_string(terms[i].coef) + "·" + terms[i].vals;
  }
  if (terms.empty()) e.formula = e.substituted = "0";
  e.substituted += " = " + std::to_string(e.bytes);
  e.source = "sum of the named tensor records (per_layer.tensors)";
  return e;
}

Explanation explain_product(const std::string& id, const std::string& title,
                            const std::vector<std::pair<std::string, std::uint64_t>>& factors,
                            Bytes value, const std::string& source) {
  Explanation e;
  e.id = id;
  e.title = title;
  for (std::size_t i = 0; i < factors.size(); ++i) {
    e.formula += (i ? " × " : "") + factors[i].first;
    e.substituted += (i ? " × " : "") + std::to_string(factors[i].second);
  }
  e.substituted += " = " + std::to_string(value);
  e.bytes = value;
  e.source = source;
  return e;
}

Explanation explain_sum(const std::string& id, const std::string& title,
                        const std::vector<std::pair<std::string, Bytes>>& parts, Bytes value,
                        const std::string& source) {
  Explanation e;
  e.id = id;
  e.title = title;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    e.formula += (i ? " + " : "") + parts[i].first;
    e.substituted += (i ? " + " : "") + std::to_string(parts[i].second);
  }
  e.substituted += " = " + std::to_string(value);
  e.bytes = value;
  e.source = source;
  return e;
}

}  // namespace actmem::detail
