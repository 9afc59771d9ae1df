// Host spaces: the matmul-family workloads whose host-backend landscapes are recorded on a
// real CPU (bench/record_host_spaces.cpp writes them; bench_host_quality tunes on them) and
// the file each recording lives in. Small shapes so that one compile + timed run is quick;
// the choice and the sampling are documented in docs/host-backend.md ("Tuning quality on
// real noise"). Header-only: bench programs are single files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace atvoss::bench {

// (name, workload JSON), in a fixed order; names are stable file names.
inline const std::vector<std::pair<std::string, std::string>>& host_workloads() {
  static const std::vector<std::pair<std::string, std::string>> w = {
      {"bert_attn_out_128",
       R"({"op":"matmul","dtype":"float32","dims":{"M":128,"N":768,"K":768},"epilogue":["bias"]})"},
      {"bert_ffn1_gelu_128",
       R"({"op":"matmul","dtype":"float32","dims":{"M":128,"N":3072,"K":768},"epilogue":["bias","gelu"]})"},
      {"bert_ffn2_add_128",
       R"({"op":"matmul","dtype":"float32","dims":{"M":128,"N":768,"K":3072},"epilogue":["bias","add"]})"},
      {"matmul_256", R"({"op":"matmul","dtype":"float32","dims":{"M":256,"N":256,"K":256}})"},
      {"matmul_512", R"({"op":"matmul","dtype":"float32","dims":{"M":512,"N":512,"K":512}})"},
      {"bert_attn_scores_12x128", R"({"op":"batch_matmul","dtype":"float32","dims":{"B":12,"M":128,"N":128,"K":64}})"},
  };
  return w;
}

// Workloads recorded only after the register block's issue model (features v6) was chosen
// on the six above, to check it on shapes it was not looked at on (docs/host-backend.md).
inline const std::vector<std::pair<std::string, std::string>>& heldout_host_workloads() {
  static const std::vector<std::pair<std::string, std::string>> w = {
      {"gpt2_qkv_64", R"({"op":"matmul","dtype":"float32","dims":{"M":64,"N":2304,"K":768},"epilogue":["bias"]})"},
      {"mlp_relu_384",
       R"({"op":"matmul","dtype":"float32","dims":{"M":384,"N":1024,"K":1024},"epilogue":["bias","relu"]})"},
      {"bert_attn_context_12x128", R"({"op":"batch_matmul","dtype":"float32","dims":{"B":12,"M":128,"N":64,"K":128}})"},
  };
  return w;
}

// The workloads of a set: "dev" (host_workloads) or "heldout"; bad_input otherwise.
inline const std::vector<std::pair<std::string, std::string>>& host_workload_set(const std::string& set) {
  if (set == "dev") return host_workloads();
  if (set == "heldout") return heldout_host_workloads();
  throw Error(ErrorKind::bad_input, "--set must be dev or heldout, got '" + set + "'");
}

// The recording of workload `name` under dir (a recorded-space CSV, core/recorded_space.hpp).
inline std::string host_space_path(const std::string& dir, const std::string& name) {
  return dir + "/" + name + ".csv";
}

}  // namespace atvoss::bench
