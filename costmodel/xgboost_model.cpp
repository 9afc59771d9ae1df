// XGBoostModel: gradient-boosted trees through the XGBoost 1.7 C API.
// Handles are owned by unique_ptr with the matching Free (DMatrix, Booster); each C call
// goes through check(), which turns -1 into an atvoss::Error carrying XGBGetLastError().
// Output buffers (predictions, saved model, feature scores) belong to XGBoost and are
// copied before the next call.
// The booster sees only the feature columns that vary over its training rows: a column
// constant there can never be split on, so the trees are the same as on every column (ties
// between splits go by column order, which the kept columns keep), while the histogram
// building, split search and prediction skip it. Most of the layout is constant for a search
// on one workload (a measured table fills 12 of 142 columns): a round that refits at 10^6
// points took 39 ms on every column, 25 ms on the kept ones (bench_search BM_TableBatch16).
#include <xgboost/c_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "costmodel/internal/model_envelope.hpp"
#include "costmodel/internal/model_kinds.hpp"
#include "costmodel/internal/training_set.hpp"

namespace atvoss::costmodel {
namespace {

struct DMatrixFree {
  void operator()(void* h) const noexcept { XGDMatrixFree(h); }
};
struct BoosterFree {
  void operator()(void* h) const noexcept { XGBoosterFree(h); }
};
using DMatrix = std::unique_ptr<void, DMatrixFree>;
using Booster = std::unique_ptr<void, BoosterFree>;

void check(int rc, const char* call, ErrorKind kind = ErrorKind::internal) {
  if (rc != 0) throw Error(kind, std::string("xgboost ") + call + ": " + XGBGetLastError());
}

DMatrix make_dmatrix(const FeatureMatrix& x) {
  DMatrixHandle raw = nullptr;
  const int rc = XGDMatrixCreateFromMat(x.data.data(), x.rows, x.cols, std::numeric_limits<float>::quiet_NaN(), &raw);
  DMatrix m(raw);  // own it before checking: a failed create may still return a handle
  check(rc, "XGDMatrixCreateFromMat");
  return m;
}

// The columns of x whose values are not all the same (at least one, so a booster has a feature).
std::vector<std::uint32_t> varying_columns(const FeatureMatrix& x) {
  std::vector<std::uint32_t> kept;
  for (std::size_t c = 0; c < x.cols; ++c) {
    for (std::size_t r = 1; r < x.rows; ++r) {
      if (x.data[r * x.cols + c] != x.data[c]) {
        kept.push_back(std::uint32_t(c));
        break;
      }
    }
  }
  if (kept.empty()) kept.push_back(0);
  return kept;
}

// x with only the given columns, in their order.
FeatureMatrix project(const FeatureMatrix& x, const std::vector<std::uint32_t>& columns) {
  FeatureMatrix out;
  out.rows = x.rows;
  out.cols = columns.size();
  out.data.resize(out.rows * out.cols);
  for (std::size_t r = 0; r < x.rows; ++r) {
    const float* in = x.data.data() + r * x.cols;
    float* o = out.data.data() + r * out.cols;
    for (std::size_t k = 0; k < columns.size(); ++k) o[k] = in[columns[k]];
  }
  return out;
}

// The saved model's kept columns: strictly increasing feature indices, or all of them when
// the header has none (a model saved before columns were kept).
std::vector<std::uint32_t> columns_of(const Json& header) {
  std::vector<std::uint32_t> columns;
  const Json& j = header.value("columns", Json::array());
  if (!j.is_array()) throw Error(ErrorKind::corrupt, "xgboost model: field 'columns' must be an array");
  for (const Json& c : j) {
    if (!c.is_number_unsigned() || c.get<std::uint64_t>() >= feature_count() ||
        (!columns.empty() && c.get<std::uint64_t>() <= columns.back())) {
      throw Error(ErrorKind::corrupt, "xgboost model: field 'columns' must list increasing feature indices below " +
                                          std::to_string(feature_count()));
    }
    columns.push_back(c.get<std::uint32_t>());
  }
  return columns;
}

Booster make_booster(DMatrixHandle train) {
  BoosterHandle raw = nullptr;
  DMatrixHandle dmats[1] = {train};
  const int rc = XGBoosterCreate(train ? dmats : nullptr, train ? 1 : 0, &raw);
  Booster b(raw);
  check(rc, "XGBoosterCreate");
  return b;
}

class XGBoostModel final : public CostModel {
 public:
  explicit XGBoostModel(const ModelOptions& options) : options_(options) {}

  std::string kind() const override { return "xgboost"; }
  bool trained() const override { return booster_ != nullptr; }

  void train(std::span<const WorkloadGroup> groups) override {
    const TrainingSet set = build_training_set(groups);
    std::vector<std::uint32_t> columns = varying_columns(set.x);
    DMatrix dtrain = make_dmatrix(project(set.x, columns));
    check(XGDMatrixSetFloatInfo(dtrain.get(), "label", set.labels.data(), set.labels.size()),
          "XGDMatrixSetFloatInfo(label)");
    set_groups_and_weights(dtrain.get(), set);
    Booster booster = make_booster(dtrain.get());
    set_params(booster.get());
    for (int i = 0; i < options_.rounds; ++i) {
      check(XGBoosterUpdateOneIter(booster.get(), i, dtrain.get()), "XGBoosterUpdateOneIter");
    }
    booster_ = std::move(booster);  // only now: a failed fit leaves the previous one
    columns_ = std::move(columns);
  }

  std::vector<double> predict_features(const FeatureMatrix& rows) const override {
    require_trained();
    if (rows.cols != feature_count()) throw_bad_input("xgboost predict: wrong feature count");
    if (rows.rows == 0) return {};
    const FeatureMatrix kept = columns_.empty() ? FeatureMatrix{} : project(rows, columns_);
    const FeatureMatrix& x = columns_.empty() ? rows : kept;
    // In-place prediction reads the rows where they are (numpy's array interface), so no
    // DMatrix copy is built per batch: the scoring budget is 20 ms per 10k candidates.
    const std::string values = R"({"data":[)" + std::to_string(reinterpret_cast<std::uintptr_t>(x.data.data())) +
                               R"(,true],"shape":[)" + std::to_string(x.rows) + "," + std::to_string(x.cols) +
                               R"(],"typestr":"<f4","version":3})";
    const char* config =
        R"({"type":0,"training":false,"iteration_begin":0,"iteration_end":0,"strict_shape":false,"missing":NaN,"cache_id":0})";
    const bst_ulong* shape = nullptr;
    bst_ulong dim = 0;
    const float* result = nullptr;
    check(XGBoosterPredictFromDense(booster_.get(), values.c_str(), config, nullptr, &shape, &dim, &result),
          "XGBoosterPredictFromDense");
    return std::vector<double>(result, result + x.rows);  // copy: XGBoost owns result
  }

  std::vector<std::uint8_t> save() const override {
    require_trained();
    bst_ulong len = 0;
    const char* raw = nullptr;
    check(XGBoosterSaveModelToBuffer(booster_.get(), R"({"format":"ubj"})", &len, &raw), "XGBoosterSaveModelToBuffer");
    const std::vector<std::uint8_t> payload(raw, raw + len);
    return wrap_model(kind(), Json{{"objective", options_.objective}, {"columns", columns_}}, payload);
  }

  void load(std::span<const std::uint8_t> bytes) override {
    const ModelEnvelope env = unwrap_model(bytes, kind());
    if (env.payload.empty()) throw Error(ErrorKind::corrupt, "xgboost model: empty payload");
    std::vector<std::uint32_t> columns = columns_of(env.header);
    Booster booster = make_booster(nullptr);
    check(XGBoosterLoadModelFromBuffer(booster.get(), env.payload.data(), env.payload.size()),
          "XGBoosterLoadModelFromBuffer", ErrorKind::corrupt);
    check(XGBoosterSetParam(booster.get(), "nthread", std::to_string(options_.nthread).c_str()),
          "XGBoosterSetParam(nthread)");
    options_.objective = env.header.value("objective", options_.objective);
    booster_ = std::move(booster);
    columns_ = std::move(columns);
  }

  std::vector<FeatureScore> feature_importance() const override {
    if (!trained()) return {};
    bst_ulong n_features = 0, dim = 0;
    const char** names = nullptr;
    const bst_ulong* shape = nullptr;
    const float* scores = nullptr;
    check(XGBoosterFeatureScore(booster_.get(), R"({"importance_type":"total_gain"})", &n_features, &names, &dim,
                                &shape, &scores),
          "XGBoosterFeatureScore");
    // Without feature names XGBoost reports "f<index>" for each feature used in a split.
    std::vector<FeatureScore> out;
    const auto& infos = feature_infos();
    for (bst_ulong i = 0; i < n_features; ++i) {
      const std::string name = names[i];
      std::string feature = name;
      if (name.size() > 1 && name[0] == 'f') {
        std::size_t index = std::stoul(name.substr(1));
        if (!columns_.empty()) index = index < columns_.size() ? columns_[index] : infos.size();
        if (index < infos.size()) feature = infos[index].name;
      }
      out.push_back({feature, double(scores[i])});
    }
    std::sort(out.begin(), out.end(), [](const FeatureScore& a, const FeatureScore& b) { return a.score > b.score; });
    return out;
  }

 private:
  void require_trained() const {
    if (!trained()) throw Error(ErrorKind::internal, "xgboost model used before train() or load()");
  }

  // A ranking objective ranks within groups and takes one weight per group; a regression
  // has no groups, and one weight per row.
  void set_groups_and_weights(DMatrixHandle d, const TrainingSet& set) const {
    if (options_.objective.rfind("rank:", 0) == 0) {
      check(XGDMatrixSetUIntInfo(d, "group", set.group_sizes.data(), set.group_sizes.size()),
            "XGDMatrixSetUIntInfo(group)");
      check(XGDMatrixSetFloatInfo(d, "weight", set.group_weights.data(), set.group_weights.size()),
            "XGDMatrixSetFloatInfo(weight)");
      return;
    }
    const std::vector<float> w = row_weights(set);
    check(XGDMatrixSetFloatInfo(d, "weight", w.data(), w.size()), "XGDMatrixSetFloatInfo(weight)");
  }

  void set_param(BoosterHandle b, const char* name, const std::string& value) const {
    check(XGBoosterSetParam(b, name, value.c_str()), name);
  }

  void set_params(BoosterHandle b) const {
    set_param(b, "objective", options_.objective);
    set_param(b, "booster", "gbtree");
    set_param(b, "tree_method", "hist");
    set_param(b, "max_depth", std::to_string(options_.max_depth));
    set_param(b, "eta", std::to_string(options_.eta));
    set_param(b, "min_child_weight", "1");
    set_param(b, "gamma", "0.0001");
    set_param(b, "nthread", std::to_string(options_.nthread));
    set_param(b, "seed", std::to_string(options_.seed % 2147483647));
    set_param(b, "verbosity", "0");
  }

  ModelOptions options_;
  Booster booster_;
  std::vector<std::uint32_t> columns_;  // the feature columns the booster reads (empty: all)
};

}  // namespace

std::unique_ptr<CostModel> make_xgboost_model(const ModelOptions& options) {
  return std::make_unique<XGBoostModel>(options);
}

}  // namespace atvoss::costmodel
