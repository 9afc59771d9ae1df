// LinearModel: ridge regression on standardised features — the baseline that shows
// what the trees add. Solves (Z'WZ + lambda*sum(W)*I) b = Z'W(y - mean y) by Cholesky,
// W holding each row's group weight (all 1: plain ridge), where
// Z holds the features centred and scaled to unit variance (constant features get
// scale 1 and so stay 0 and weight 0). No XGBoost anywhere.
#include <cmath>

#include "core/error.hpp"
#include "costmodel/internal/model_envelope.hpp"
#include "costmodel/internal/model_kinds.hpp"
#include "costmodel/internal/training_set.hpp"

namespace atvoss::costmodel {
namespace {

struct LinearFit {
  std::vector<double> mean, scale, weight;
  double bias = 0;
};

void standardise(const FeatureMatrix& x, LinearFit& fit) {
  const std::size_t d = x.cols;
  fit.mean.assign(d, 0.0);
  fit.scale.assign(d, 0.0);
  for (std::size_t i = 0; i < x.rows; ++i) {
    for (std::size_t j = 0; j < d; ++j) fit.mean[j] += x.row(i)[j];
  }
  for (double& m : fit.mean) m /= double(x.rows);
  for (std::size_t i = 0; i < x.rows; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      const double c = x.row(i)[j] - fit.mean[j];
      fit.scale[j] += c * c;
    }
  }
  for (double& s : fit.scale) {
    s = std::sqrt(s / double(x.rows));
    if (s < 1e-9) s = 1.0;
  }
}

// In-place Cholesky solve of the symmetric positive definite system a x = b.
std::vector<double> cholesky_solve(std::vector<double> a, std::vector<double> b, std::size_t d) {
  for (std::size_t j = 0; j < d; ++j) {
    double diag = a[j * d + j];
    for (std::size_t k = 0; k < j; ++k) diag -= a[j * d + k] * a[j * d + k];
    if (diag <= 0) throw Error(ErrorKind::internal, "ridge: matrix not positive definite");
    a[j * d + j] = std::sqrt(diag);
    for (std::size_t i = j + 1; i < d; ++i) {
      double v = a[i * d + j];
      for (std::size_t k = 0; k < j; ++k) v -= a[i * d + k] * a[j * d + k];
      a[i * d + j] = v / a[j * d + j];
    }
  }
  for (std::size_t i = 0; i < d; ++i) {  // L y = b
    for (std::size_t k = 0; k < i; ++k) b[i] -= a[i * d + k] * b[k];
    b[i] /= a[i * d + i];
  }
  for (std::size_t i = d; i-- > 0;) {  // L' x = y
    for (std::size_t k = i + 1; k < d; ++k) b[i] -= a[k * d + i] * b[k];
    b[i] /= a[i * d + i];
  }
  return b;
}

// Weighted least squares: each row's terms scaled by its group's weight.
LinearFit fit_ridge(const TrainingSet& set, double lambda) {
  LinearFit fit;
  const std::size_t d = set.x.cols, n = set.x.rows;
  standardise(set.x, fit);
  const std::vector<float> w = row_weights(set);
  double y_mean = 0, w_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    y_mean += w[i] * set.labels[i];
    w_sum += w[i];
  }
  y_mean /= w_sum;
  std::vector<double> gram(d * d, 0.0), rhs(d, 0.0), z(d);
  for (std::size_t i = 0; i < n; ++i) {
    const auto row = set.x.row(i);
    for (std::size_t j = 0; j < d; ++j) z[j] = (row[j] - fit.mean[j]) / fit.scale[j];
    const double y = set.labels[i] - y_mean;
    for (std::size_t j = 0; j < d; ++j) {
      if (z[j] == 0.0) continue;
      rhs[j] += w[i] * z[j] * y;
      for (std::size_t k = 0; k <= j; ++k) gram[j * d + k] += w[i] * z[j] * z[k];
    }
  }
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t k = 0; k < j; ++k) gram[k * d + j] = gram[j * d + k];
    gram[j * d + j] += lambda * w_sum + 1e-9;
  }
  fit.weight = cholesky_solve(std::move(gram), std::move(rhs), d);
  fit.bias = y_mean;
  return fit;
}

std::vector<double> json_doubles(const Json& h, const char* name, std::size_t n) {
  const Json& a = h.value(name, Json());
  if (!a.is_array() || a.size() != n) {
    throw Error(ErrorKind::corrupt,
                std::string("linear model: field '") + name + "' is not an array of " + std::to_string(n) + " numbers");
  }
  std::vector<double> out;
  for (const Json& v : a) {
    if (!v.is_number()) throw Error(ErrorKind::corrupt, std::string("linear model: ") + name);
    out.push_back(v.get<double>());
  }
  return out;
}

class LinearModel final : public CostModel {
 public:
  explicit LinearModel(const ModelOptions& options) : lambda_(options.ridge_lambda) {}

  std::string kind() const override { return "linear"; }
  bool trained() const override { return !fit_.weight.empty(); }

  void train(std::span<const WorkloadGroup> groups) override { fit_ = fit_ridge(build_training_set(groups), lambda_); }

  std::vector<double> predict_features(const FeatureMatrix& rows) const override {
    if (!trained()) throw Error(ErrorKind::internal, "linear model used before train() or load()");
    if (rows.cols != feature_count()) throw_bad_input("linear predict: wrong feature count");
    std::vector<double> out(rows.rows, fit_.bias);
    for (std::size_t i = 0; i < rows.rows; ++i) {
      const auto row = rows.row(i);
      for (std::size_t j = 0; j < rows.cols; ++j) {
        out[i] += fit_.weight[j] * ((row[j] - fit_.mean[j]) / fit_.scale[j]);
      }
    }
    return out;
  }

  std::vector<std::uint8_t> save() const override {
    if (!trained()) throw Error(ErrorKind::internal, "linear model saved before train() or load()");
    const Json header{{"mean", fit_.mean},
                      {"scale", fit_.scale},
                      {"weight", fit_.weight},
                      {"bias", fit_.bias},
                      {"ridge_lambda", lambda_}};
    return wrap_model(kind(), header, {});
  }

  void load(std::span<const std::uint8_t> bytes) override {
    const ModelEnvelope env = unwrap_model(bytes, kind());
    const std::size_t d = feature_count();
    LinearFit fit;
    fit.mean = json_doubles(env.header, "mean", d);
    fit.scale = json_doubles(env.header, "scale", d);
    fit.weight = json_doubles(env.header, "weight", d);
    const Json& bias = env.header.value("bias", Json());
    if (!bias.is_number()) throw Error(ErrorKind::corrupt, "linear model: field 'bias' missing");
    fit.bias = bias.get<double>();
    for (double s : fit.scale) {
      if (!(s > 0)) throw Error(ErrorKind::corrupt, "linear model: non-positive scale");
    }
    fit_ = std::move(fit);
  }

  std::vector<FeatureScore> feature_importance() const override {
    std::vector<FeatureScore> out;
    for (std::size_t j = 0; j < fit_.weight.size(); ++j) {
      if (fit_.weight[j] != 0) out.push_back({feature_infos()[j].name, std::abs(fit_.weight[j])});
    }
    std::sort(out.begin(), out.end(), [](const FeatureScore& a, const FeatureScore& b) { return a.score > b.score; });
    return out;
  }

 private:
  double lambda_;
  LinearFit fit_;
};

}  // namespace

std::unique_ptr<CostModel> make_linear_model(const ModelOptions& options) {
  return std::make_unique<LinearModel>(options);
}

}  // namespace atvoss::costmodel
