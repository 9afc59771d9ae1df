// A registry of named entries that code outside the library adds at run time: the
// extension points for strategies (search/), fusion rules (lowering/) and cost models
// (costmodel/) each keep one, so that "register by name, look up by name, list" has one
// implementation. Built-in entries are fixed when the registry is made and can be neither
// replaced nor removed; added entries live under a mutex, so every member may be called
// from any thread. Entry needs a std::string `name`.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace atvoss {

template <class Entry>
class NamedRegistry {
 public:
  explicit NamedRegistry(std::vector<Entry> built_in = {})
      : built_in_(std::move(built_in)), all_(std::make_shared<const std::vector<Entry>>(built_in_)) {}

  bool is_built_in(const std::string& name) const { return built_in_entry(name) != nullptr; }

  // Adds entry, replacing an added one of the same name. The caller refuses built-in
  // names first (with its own message), since only it knows what it calls its entries.
  void add(Entry entry) {
    std::lock_guard lock(mutex_);
    added_[entry.name] = std::move(entry);
    refresh_all();
  }

  // False if no added entry had that name (built-ins are never removed).
  bool remove(const std::string& name) {
    std::lock_guard lock(mutex_);
    if (added_.erase(name) == 0) return false;
    refresh_all();
    return true;
  }

  std::optional<Entry> find(const std::string& name) const {
    if (const Entry* e = built_in_entry(name)) return *e;
    std::lock_guard lock(mutex_);
    const auto it = added_.find(name);
    if (it == added_.end()) return std::nullopt;
    return it->second;
  }

  // The built-ins in their fixed order, then the added entries by name. A shared
  // snapshot, so a hot path (every kernel plan asks for the fusion rules) copies no entry.
  std::shared_ptr<const std::vector<Entry>> all() const {
    std::lock_guard lock(mutex_);
    return all_;
  }

 private:
  const Entry* built_in_entry(const std::string& name) const {
    const auto it = std::find_if(built_in_.begin(), built_in_.end(), [&](const Entry& e) { return e.name == name; });
    return it == built_in_.end() ? nullptr : &*it;
  }

  void refresh_all() {
    auto all = std::make_shared<std::vector<Entry>>(built_in_);
    for (const auto& [name, e] : added_) all->push_back(e);
    all_ = std::move(all);
  }

  const std::vector<Entry> built_in_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> added_;
  std::shared_ptr<const std::vector<Entry>> all_;
};

}  // namespace atvoss
