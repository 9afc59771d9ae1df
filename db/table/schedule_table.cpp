#include "db/table/schedule_table.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/result_check.hpp"
#include "core/user_paths.hpp"

namespace atvoss::table {

// Entries of one (op, dtype, epilogue) class, with their log-dims laid out flat (member i
// owns coords[i * dims .. (i + 1) * dims)), sorted by the first log-dim (then workload key)
// so that the nearest search can start at the query's first coordinate and stop in each
// direction once that coordinate alone is farther than the best match found.
struct ScheduleTable::Group {
  std::size_t dims = 0;
  std::vector<std::size_t> entry_index;
  std::vector<double> coords;
  std::vector<double> first;  // coords[i * dims], for the binary search

  void sort_by_first_dim(const std::vector<TableEntry>& entries) {
    const std::size_t n = entry_index.size();
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (coords[a * dims] != coords[b * dims]) return coords[a * dims] < coords[b * dims];
      return entries[entry_index[a]].workload.key() < entries[entry_index[b]].workload.key();
    });
    std::vector<std::size_t> index;
    std::vector<double> flat;
    for (std::size_t i : order) {
      index.push_back(entry_index[i]);
      flat.insert(flat.end(), coords.begin() + static_cast<std::ptrdiff_t>(i * dims),
                  coords.begin() + static_cast<std::ptrdiff_t>((i + 1) * dims));
      first.push_back(coords[i * dims]);
    }
    entry_index = std::move(index);
    coords = std::move(flat);
  }
};

namespace {

std::string class_name(const Workload& w) {
  std::string name = w.op() + "|" + std::string(to_string(w.dtype()));
  for (const auto& e : w.epilogue()) name += "|" + e;
  return name;
}

double log_dim(std::int64_t d) { return std::log2(static_cast<double>(d) + 1.0); }

std::string hex(const unsigned char* bytes, unsigned int n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

TableHeader parse_header(const Json& h, const std::string& what) {
  require_object(h, what + ": field 'header'");
  const std::string format = require_string(h, "format", what + ": header");
  if (format != kTableFormat) {
    throw_bad_input(what + ": header field 'format' must be '" + std::string(kTableFormat) + "', got '" + format + "'");
  }
  TableHeader out;
  out.format_version = static_cast<int>(require_int(h, "format_version", what + ": header"));
  if (out.format_version < 1 || out.format_version > kTableFormatVersion) {
    throw_bad_input(what + ": table format_version " + std::to_string(out.format_version) +
                    " is not supported by this build (reads 1.." + std::to_string(kTableFormatVersion) +
                    "); upgrade atvoss");
  }
  const Json& t = require_field(h, "target", what + ": header");
  require_object(t, what + ": header field 'target'");
  out.target_key = require_string(t, "key", what + ": header.target");
  out.target_name = require_string(t, "name", what + ": header.target");
  if (t.contains("description")) out.target_description = t["description"];
  out.created_at = require_string(h, "created_at", what + ": header");
  out.tool_version = require_string(h, "tool_version", what + ": header");
  out.record_count = require_int(h, "record_count", what + ": header");
  out.checksum = require_string(h, "checksum", what + ": header");
  return out;
}

}  // namespace

Json TableEntry::to_json() const {
  Json j{{"workload", workload.to_json()},
         {"workload_key", workload.key()},
         {"schedule", schedule.to_json()},
         {"time_us", time_us}};
  if (provenance != "measured") j["provenance"] = provenance;
  return j;
}

TableEntry TableEntry::from_json(const Json& j) {
  require_object(j, "table entry");
  TableEntry e;
  e.workload = Workload::from_json(require_field(j, "workload", "table entry"));
  e.schedule = Schedule::from_json(require_field(j, "schedule", "table entry"));
  e.time_us = require_number(j, "time_us", "table entry");
  if (!plausible_time_us(e.time_us)) {
    throw_bad_input("table entry: field 'time_us' must be a time from 0.001 to 1e12 microseconds, got " +
                    j["time_us"].dump());
  }
  if (j.contains("workload_key") && j["workload_key"] != e.workload.key()) {
    throw_bad_input("table entry: 'workload_key' does not match its workload");
  }
  if (j.contains("provenance")) {
    const Json& p = j["provenance"];
    if (!p.is_string() || (p != "measured" && p != "zero-shot" && p != "default")) {
      throw_bad_input("table entry: field 'provenance' must be \"measured\", \"zero-shot\" or \"default\"");
    }
    e.provenance = p.get<std::string>();
  }
  return e;
}

Json LookupResult::to_json(const std::string& target_name) const {
  Json j{{"match", kind == MatchKind::exact     ? "exact"
                   : kind == MatchKind::nearest ? "nearest"
                                                : "none"},
         {"distance", distance},
         {"target", target_name}};
  if (entry != nullptr) {
    j["workload"] = entry->workload.to_json();
    j["schedule"] = entry->schedule.to_json();
    j["time_us"] = entry->time_us;
    j["provenance"] = entry->provenance;
  }
  return j;
}

std::string body_checksum(const Json& entries) {
  const std::string text = canonical_dump(entries);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &n, EVP_sha256(), nullptr) != 1) {
    throw Error(ErrorKind::internal, "table: SHA-256 failed (OpenSSL EVP_Digest)");
  }
  return "sha256:" + hex(digest, n);
}

Json make_table_json(const TableHeader& fields, const std::vector<TableEntry>& entries) {
  Json body = Json::array();
  for (const auto& e : entries) body.push_back(e.to_json());
  Json header{{"format", kTableFormat},
              {"format_version", kTableFormatVersion},
              {"target",
               {{"key", fields.target_key}, {"name", fields.target_name}, {"description", fields.target_description}}},
              {"created_at", fields.created_at},
              {"tool_version", fields.tool_version},
              {"record_count", static_cast<std::int64_t>(entries.size())},
              {"checksum", body_checksum(body)}};
  return Json{{"header", std::move(header)}, {"entries", std::move(body)}};
}

std::shared_ptr<const ScheduleTable> ScheduleTable::load(const std::string& path) {
  return from_json(parse_json(read_input_file(path, "table"), "table " + path), "table " + path);
}

std::shared_ptr<const ScheduleTable> ScheduleTable::from_json(const Json& doc, const std::string& what) {
  require_object(doc, what);
  TableHeader header = parse_header(require_field(doc, "header", what), what);
  const Json& body = require_field(doc, "entries", what);
  if (!body.is_array()) throw_bad_input(what + ": field 'entries' must be an array");
  if (static_cast<std::int64_t>(body.size()) != header.record_count) {
    throw Error(ErrorKind::corrupt, what + ": header says " + std::to_string(header.record_count) +
                                        " entries but the file has " + std::to_string(body.size()) +
                                        " (truncated or edited)");
  }
  const std::string actual = body_checksum(body);
  if (actual != header.checksum) {
    throw Error(ErrorKind::corrupt, what + ": checksum mismatch (header " + header.checksum + ", body " + actual +
                                        "); the file is damaged or was edited");
  }
  std::vector<TableEntry> entries;
  entries.reserve(body.size());
  for (std::size_t i = 0; i < body.size(); ++i) {
    try {
      entries.push_back(TableEntry::from_json(body[i]));
    } catch (const Error& e) {
      throw_bad_input(what + ": entry " + std::to_string(i) + ": " + e.what());
    }
  }
  return std::make_shared<const ScheduleTable>(std::move(header), std::move(entries));
}

ScheduleTable::ScheduleTable(TableHeader header, std::vector<TableEntry> entries)
    : header_(std::move(header)), entries_(std::move(entries)) {
  std::vector<std::pair<std::string, std::shared_ptr<Group>>> groups;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Workload& w = entries_[i].workload;
    by_key_.emplace_back(w.key(), i);
    if (w.is_table()) continue;  // exact only
    const std::string name = class_name(w);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == name; });
    if (it == groups.end()) {
      auto g = std::make_shared<Group>();
      g->dims = w.dims().size();
      groups.emplace_back(name, g);
      it = groups.end() - 1;
    }
    it->second->entry_index.push_back(i);
    for (const auto& [dim, v] : w.dims()) it->second->coords.push_back(log_dim(v));
  }
  std::sort(by_key_.begin(), by_key_.end());
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, g] : groups) {
    g->sort_by_first_dim(entries_);
    group_names_.push_back(name);
    groups_.push_back(std::move(g));
  }
}

LookupResult ScheduleTable::lookup(const Workload& workload) const {
  const std::string& key = workload.key();
  auto it = std::lower_bound(by_key_.begin(), by_key_.end(), key,
                             [](const auto& p, const std::string& k) { return p.first < k; });
  if (it != by_key_.end() && it->first == key) return {MatchKind::exact, &entries_[it->second], 0.0};
  if (workload.is_table()) return {};
  const std::string name = class_name(workload);
  auto g = std::lower_bound(group_names_.begin(), group_names_.end(), name);
  if (g == group_names_.end() || *g != name) return {};
  const Group& group = *groups_[static_cast<std::size_t>(g - group_names_.begin())];
  // Same op means the same dim names in the same (sorted) order.
  std::vector<double> q;
  for (const auto& [dim, v] : workload.dims()) q.push_back(log_dim(v));
  if (q.size() != group.dims || group.entry_index.empty()) return {};
  double best = std::numeric_limits<double>::infinity();
  std::size_t best_i = 0;
  const auto consider = [&](std::size_t i) {
    const double* c = &group.coords[i * group.dims];
    double sum = 0;
    for (std::size_t k = 0; k < group.dims; ++k) sum += (c[k] - q[k]) * (c[k] - q[k]);
    // Equal distances go to the lower workload key, so the answer never depends on file order.
    if (sum < best || (sum == best && entries_[group.entry_index[i]].workload.key() <
                                          entries_[group.entry_index[best_i]].workload.key())) {
      best = sum;
      best_i = i;
    }
  };
  const auto square = [](double x) { return x * x; };
  const std::size_t start =
      static_cast<std::size_t>(std::lower_bound(group.first.begin(), group.first.end(), q[0]) - group.first.begin());
  // Strictly greater: a member exactly as far as the best is still compared, for the tie rule.
  for (std::size_t i = start; i < group.first.size() && square(group.first[i] - q[0]) <= best; ++i) consider(i);
  for (std::size_t i = start; i-- > 0 && square(q[0] - group.first[i]) <= best;) consider(i);
  return {MatchKind::nearest, &entries_[group.entry_index[best_i]], std::sqrt(best)};
}

}  // namespace atvoss::table
