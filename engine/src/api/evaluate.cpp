// The single request -> response entry point shared by the CLI, the page (through Embind) and the
// fuzzer: a request is read once (request.cpp) and answered by its command (commands.cpp).
#include <cstring>
#include <optional>

#include "actmem/api/api.hpp"
#include "actmem/core/text.hpp"
#include "actmem/json_io.hpp"
#include "api/request.hpp"

namespace actmem {

using nlohmann::json;

namespace {

json answer(const json& req, std::string* text, const std::string_view* snapshot = nullptr) {
  std::string name;
  auto command = api::read_command(req, snapshot != nullptr, &name);
  if (!command.ok()) return error_to_json(command.error());
  const api::CommandSpec& spec = *command.value();
  if (spec.id == api::Command::kPresets) {
    for (const auto& item : req.items())
      if (item.key() != "command")
        return error_to_json(
            make_error("invalid_value", shown_text(item.key()),
                       shown_text(item.key()) + ": the presets command reads no other key"));
    return api::presets_listing();
  }
  auto r = api::read_request(req, spec.id, name);
  if (!r.ok()) return error_to_json(r.error());
  auto out = spec.answer(r.value(), req, text, snapshot);
  if (!out.ok()) return error_to_json(out.error());
  return std::move(out.value());
}

}  // namespace

json evaluate_json(const json& req) {
  return answer(req, nullptr);
}

json compare_json(const json& req, std::string_view snapshot) {
  if (req.is_object() && req.value("command", std::string()) != "compare")
    return error_to_json(make_error("invalid_value", "command",
                                    "command: a snapshot is read by the compare command only"));
  return answer(req, nullptr, &snapshot);
}

std::string terminal_safe_json(std::string text) {
  auto needs = [](unsigned char c, unsigned char next) {
    return c == 0x7F || (c == 0xC2 && next >= 0x80 && next <= 0x9F);
  };
  // The usual case has neither byte: two memchr scans (vectorized) and no copy.
  bool any = std::memchr(text.data(), 0x7F, text.size()) != nullptr;
  for (const char *p = text.data(), *end = text.data() + text.size(); !any && p < end;) {
    p = static_cast<const char*>(std::memchr(p, 0xC2, static_cast<std::size_t>(end - p)));
    if (!p) break;
    any = p + 1 < end && needs(0xC2, static_cast<unsigned char>(p[1]));
    ++p;
  }
  if (!any) return text;
  std::string out;
  out.reserve(text.size() + 16);
  static const char* const kHex = "0123456789abcdef";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const unsigned char next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (!needs(c, next)) {
      out += text[i];
      continue;
    }
    const unsigned cp = c == 0x7F ? 0x7F : next;  // C2 xx encodes U+00xx
    out += "\\u00";
    out += kHex[cp >> 4];
    out += kHex[cp & 15];
    if (c == 0xC2) ++i;
  }
  return out;
}

std::string evaluate(const std::string& request_text) {
  auto j = parse_json_text(request_text, "request");
  if (!j.ok()) return terminal_safe_json(error_to_json(j.error()).dump());
  std::string text;
  json out = answer(j.value(), &text);
  if (!text.empty()) return terminal_safe_json(std::move(text));
  return terminal_safe_json(out.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace actmem
