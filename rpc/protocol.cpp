#include "rpc/protocol.hpp"

#include <vector>

namespace atvoss::rpc {

std::string item_identity(const Json& target_key, const Json& workload, const Json& schedule,
                          const Json& repeat, const Json& seed) {
  // The exact bytes, not a hash: two different requests must never share an answer.
  const Json identity{{"t", target_key}, {"w", workload}, {"s", schedule}, {"r", repeat}, {"n", seed}};
  std::string bytes;
  Json::to_msgpack(identity, nlohmann::detail::output_adapter<char>(bytes));
  return bytes;
}

}  // namespace atvoss::rpc
