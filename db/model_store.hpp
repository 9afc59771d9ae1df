// ModelStore: the trained cost models of a tuning database (blobs opaque to it), by
// target and kind. A TuningDatabase owns one and hands it out as models(); it shares the
// database's connection.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/record.hpp"

namespace atvoss::db {

class Connection;  // db/internal/sql.hpp

class ModelStore {
 public:
  explicit ModelStore(Connection& conn) : conn_(conn) {}
  ModelStore(const ModelStore&) = delete;
  ModelStore& operator=(const ModelStore&) = delete;

  // Stores a model for target (the target row is created if absent); returns its id.
  std::int64_t save(const TargetInfo& target, const ModelRecord& model);
  // Latest model of (target, kind), optionally of one feature version.
  std::optional<ModelRecord> latest(const std::string& target_key, const std::string& kind,
                                    std::optional<int> feature_version = std::nullopt) const;
  // Every model of a target, newest first, without blobs (blob left empty).
  std::vector<ModelRecord> list(const std::string& target_key) const;

 private:
  Connection& conn_;
};

}  // namespace atvoss::db
