// Constructors of the concrete cost models, for make_cost_model() and for code inside
// costmodel/ only; everyone else goes through the CostModel interface.
#pragma once

#include <memory>

#include "costmodel/cost_model.hpp"

namespace atvoss::costmodel {

std::unique_ptr<CostModel> make_xgboost_model(const ModelOptions& options);
std::unique_ptr<CostModel> make_linear_model(const ModelOptions& options);
std::unique_ptr<CostModel> make_heuristic_model();

}  // namespace atvoss::costmodel
