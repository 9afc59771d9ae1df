#include "db/internal/compact_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>

namespace atvoss::db {
namespace {

// A key may be copied verbatim between quotes: printable ASCII without '"' or '\'.
bool plain_key(std::string_view k) {
  for (const char ch : k) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

bool append_double(std::string& out, double v) {
  if (!std::isfinite(v)) return false;  // nlohmann writes null: leave that to it
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  if (r.ec != std::errc{}) return false;
  out.append(buf, r.ptr);
  return true;
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Walks a flat object {"key":token,...} with plain keys; token is the raw number text.
// Returns false on any other shape.
template <class Fn>
bool for_each_member(std::string_view t, Fn&& fn) {
  if (t.size() < 2 || t.front() != '{' || t.back() != '}') return false;
  std::size_t i = 1;
  if (t.size() == 2) return true;
  while (true) {
    if (i >= t.size() || t[i] != '"') return false;
    const std::size_t close = t.find('"', i + 1);
    if (close == std::string_view::npos) return false;
    const std::string_view key = t.substr(i + 1, close - i - 1);
    if (!plain_key(key)) return false;
    i = close + 1;
    if (i >= t.size() || t[i] != ':') return false;
    ++i;
    const std::size_t end = t.find_first_of(",}", i);
    if (end == std::string_view::npos || end == i) return false;
    if (!fn(key, t.substr(i, end - i))) return false;
    i = end + 1;
    if (t[end] == '}') return i == t.size();
  }
}

bool is_json_number(std::string_view tok) {
  // JSON numbers only: from_chars would also take "inf", "nan", hex-free but leading '+'.
  if (tok.empty()) return false;
  const char c = tok.front();
  if (!(c == '-' || (c >= '0' && c <= '9'))) return false;
  for (const char ch : tok) {
    if (!((ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E')) return false;
  }
  return true;
}

bool is_integer_token(std::string_view tok) {
  return is_json_number(tok) && tok.find_first_of(".eE") == std::string_view::npos;
}

bool parse_double(std::string_view tok, double& out) {
  if (!is_json_number(tok)) return false;
  const auto r = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  return r.ec == std::errc{} && r.ptr == tok.data() + tok.size();
}

bool parse_int(std::string_view tok, std::int64_t& out) {
  if (!is_integer_token(tok)) return false;
  const auto r = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  return r.ec == std::errc{} && r.ptr == tok.data() + tok.size();
}

}  // namespace

std::optional<std::string> write_schedule(const Schedule& s) {
  std::string out = "{";
  for (const auto& [k, v] : s.values()) {
    if (!plain_key(k)) return std::nullopt;
    if (out.size() > 1) out += ',';
    out += '"';
    out += k;
    out += "\":";
    append_int(out, v);
  }
  out += '}';
  return out;
}

std::optional<std::string> write_repeats(const std::vector<double>& repeats) {
  std::string out = "[";
  for (const double v : repeats) {
    if (out.size() > 1) out += ',';
    if (!append_double(out, v)) return std::nullopt;
  }
  out += ']';
  return out;
}

std::optional<std::string> write_profile(const Profile& p) {
  std::string out;
  out.reserve(256);
  bool ok = true;
  const auto num = [&](const char* name, double v) {
    out += out.empty() ? "{\"" : ",\"";
    out += name;
    out += "\":";
    ok = append_double(out, v) && ok;
  };
  // Same members and (sorted) order as Profile::to_json().dump().
  num("compile_us", p.compile_us);
  num("compute_us", p.compute_us);
  num("cube_utilisation", p.cube_utilisation);
  num("dma_us", p.dma_us);
  num("dma_utilisation", p.dma_utilisation);
  num("gm_bytes", p.gm_bytes);
  out += ",\"kernels\":";
  append_int(out, p.kernels);
  num("l1_hit_rate", p.l1_hit_rate);
  num("launch_us", p.launch_us);
  num("peak_workspace_bytes", p.peak_workspace_bytes);
  num("sync_wait_us", p.sync_wait_us);
  num("time_cv", p.time_cv);
  out += '}';
  if (!ok) return std::nullopt;
  return out;
}

std::optional<Schedule> read_schedule(std::string_view text) {
  std::map<std::string, std::int64_t> values;
  const bool ok = for_each_member(text, [&](std::string_view key, std::string_view tok) {
    std::int64_t v = 0;
    // A duplicate key or a non-integer goes to the full parser (its rules, its message).
    return parse_int(tok, v) && values.emplace(std::string(key), v).second;
  });
  if (!ok) return std::nullopt;
  return Schedule(std::move(values));
}

std::optional<std::vector<double>> read_repeats(std::string_view t) {
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') return std::nullopt;
  std::vector<double> out;
  if (t.size() == 2) return out;
  std::size_t i = 1;
  while (true) {
    const std::size_t end = t.find_first_of(",]", i);
    double v = 0;
    if (end == std::string_view::npos || !parse_double(t.substr(i, end - i), v)) return std::nullopt;
    out.push_back(v);
    i = end + 1;
    if (t[end] == ']') return i == t.size() ? std::optional(std::move(out)) : std::nullopt;
  }
}

std::optional<Profile> read_profile(std::string_view text) {
  Profile p;
  static constexpr std::pair<std::string_view, double Profile::*> kFields[] = {
      {"compute_us", &Profile::compute_us},
      {"dma_us", &Profile::dma_us},
      {"sync_wait_us", &Profile::sync_wait_us},
      {"launch_us", &Profile::launch_us},
      {"l1_hit_rate", &Profile::l1_hit_rate},
      {"dma_utilisation", &Profile::dma_utilisation},
      {"cube_utilisation", &Profile::cube_utilisation},
      {"gm_bytes", &Profile::gm_bytes},
      {"peak_workspace_bytes", &Profile::peak_workspace_bytes},
      {"compile_us", &Profile::compile_us},
      {"time_cv", &Profile::time_cv}};
  int seen = 0;
  const bool ok = for_each_member(text, [&](std::string_view key, std::string_view tok) {
    ++seen;
    if (key == "kernels") {
      std::int64_t k = 0;
      if (!parse_int(tok, k) || k < INT32_MIN || k > INT32_MAX) return false;
      p.kernels = static_cast<int>(k);
      return true;
    }
    for (const auto& [name, member] : kFields) {
      if (name == key) return parse_double(tok, p.*member);
    }
    return false;  // unknown member: let the full parser judge
  });
  // Duplicate members (more than the twelve known) go to the full parser too.
  if (!ok || seen > 12) return std::nullopt;
  return p;
}

}  // namespace atvoss::db
