// Constructors of the built-in backends, for the registry in backend.cpp.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace atvoss::backend {

std::shared_ptr<const Backend> make_npu_sim_backend();
std::shared_ptr<const Backend> make_recorded_backend();
std::shared_ptr<const Backend> make_host_backend();

}  // namespace atvoss::backend
