#include "db/model_store.hpp"

#include "core/error.hpp"
#include "db/internal/rows.hpp"
#include "db/internal/sql.hpp"

namespace atvoss::db {

using rows::decode_model;
using rows::kModelSelect;
using rows::Writer;

std::int64_t ModelStore::save(const TargetInfo& target, const ModelRecord& model) {
  if (model.kind.empty()) throw_bad_input("save model: field 'kind' must not be empty");
  return conn_.write([&] {
    Writer w(conn_);
    auto s = conn_.prepare(
        "INSERT INTO models(target_id, kind, feature_version, blob, n_records, "
        "metrics, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id");
    s->bind(1, w.target_id(target)).bind(2, model.kind).bind(3, model.feature_version);
    s->bind_blob(4, model.blob).bind(5, model.n_records).bind(6, model.metrics.dump());
    s->bind(7, model.created_at_ms != 0 ? model.created_at_ms : now_ms());
    s->step();
    return s->column_int64(0);
  });
}

std::optional<ModelRecord> ModelStore::latest(const std::string& target_key, const std::string& kind,
                                              std::optional<int> feature_version) const {
  return conn_.read([&]() -> std::optional<ModelRecord> {
    auto s =
        conn_.prepare(std::string(kModelSelect) +
                      "WHERE t.key = ?1 AND m.kind = ?2 AND (CAST(?3 AS BIGINT) IS NULL OR m.feature_version = ?3) "
                      "ORDER BY m.created_at DESC, m.id DESC LIMIT 1");
    s->bind(1, target_key).bind(2, kind);
    if (feature_version) s->bind(3, *feature_version);
    if (!s->step()) return std::nullopt;
    return decode_model(*s, true);
  });
}

std::vector<ModelRecord> ModelStore::list(const std::string& target_key) const {
  return conn_.read([&] {
    auto s = conn_.prepare(std::string(kModelSelect) + "WHERE t.key = ?1 ORDER BY m.created_at DESC, m.id DESC");
    s->bind(1, target_key);
    std::vector<ModelRecord> out;
    while (s->step()) out.push_back(decode_model(*s, false));
    return out;
  });
}

}  // namespace atvoss::db
