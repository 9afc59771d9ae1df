// Workloads shared by the simulator tests: one or more of every op, with and
// without epilogues, sized like ResNet-50 and BERT layers.
#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/workload.hpp"

namespace atvoss::simulator::testing {

inline Workload workload(const std::string& json) { return Workload::from_json(parse_json(json, "test workload")); }

inline std::vector<Workload> every_op() {
  return {
      workload(R"({"op":"matmul","dims":{"M":1024,"N":1024,"K":1024}})"),
      workload(R"({"op":"matmul","dims":{"M":128,"N":3072,"K":768},"epilogue":["bias","gelu"]})"),
      workload(R"({"op":"matmul","dims":{"M":100,"N":77,"K":300},"dtype":"int8"})"),
      workload(R"({"op":"batch_matmul","dims":{"B":12,"M":128,"N":128,"K":64}})"),
      workload(R"({"op":"conv2d","dims":{"N":1,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"pad":1},
                   "epilogue":["batchnorm","relu"]})"),
      workload(R"({"op":"conv2d","dims":{"N":1,"C":3,"H":224,"W":224,"K":64,"R":7,"S":7,"stride":2,"pad":3}})"),
      workload(R"({"op":"conv2d","dims":{"N":2,"C":256,"H":14,"W":14,"K":256,"R":3,"S":3,"pad":1},
                   "epilogue":["bias","add","relu"],"dtype":"float32"})"),
      workload(R"({"op":"depthwise_conv2d","dims":{"N":1,"C":144,"H":56,"W":56,"R":3,"S":3,"pad":1},
                   "epilogue":["relu"]})"),
      workload(R"({"op":"elementwise","dims":{"M":4096,"N":4096}})"),
      workload(R"({"op":"layernorm","dims":{"M":512,"N":768}})"),
      workload(R"({"op":"softmax","dims":{"M":1536,"N":512}})"),
      workload(R"({"op":"matmul","dims":{"M":512,"N":768,"K":768},"epilogue":["bias","add","layernorm"]})"),
      // Pooling, reductions, data movement and fused maps (ResNet-50, YOLO, ESRGAN).
      workload(R"({"op":"max_pool2d","dims":{"N":1,"C":64,"H":112,"W":112,"R":3,"S":3,"stride":2,"pad":1}})"),
      workload(R"({"op":"avg_pool2d","dims":{"N":1,"C":256,"H":28,"W":28,"R":2,"S":2,"stride":2}})"),
      workload(R"({"op":"global_avg_pool","dims":{"M":2048,"N":49}})"),
      workload(R"({"op":"reduce","dims":{"M":1024,"N":4096}})"),
      workload(R"({"op":"transpose","dims":{"M":768,"N":3136,"inner":1}})"),
      workload(R"({"op":"concat","dims":{"M":128,"N":6400}})"),
      workload(R"({"op":"upsample","dims":{"M":2560,"N":20,"scale":2}})"),
      workload(R"({"op":"map","dims":{"M":1024,"N":4096},"epilogue":["silu"]})"),
      workload(R"({"op":"elementwise","dims":{"M":256,"N":3136},"epilogue":["relu"]})"),
  };
}

}  // namespace atvoss::simulator::testing
