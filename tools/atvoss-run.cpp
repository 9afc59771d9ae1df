// atvoss-run: runs a whole ONNX model on this CPU (engine/model.hpp), with the schedules of a
// model plan tuned for it on this machine, or the default schedules.
//   atvoss-run MODEL.onnx [--plan PLAN.json] [--batch N] [--dim NAME=N ...] [--threads N]
//              [--input NAME=FILE.npy ...] [--seed N] [--out DIR] [--repeat N] [--json]
// Inputs not given are filled from --seed (uniform in [-1, 1); integer inputs with zeros). The
// symbolic dims of the inputs given take their sizes (as ONNX Runtime binds them), unless --dim
// names them otherwise (bad input); the rest take --batch.
// Outputs go to DIR/<name>.npy, the name made a safe file name (engine::npy_file_names: "/logits"
// is written as "_logits.npy"); --json lists each output's file.
// --repeat N times N runs after one warm-up and prints their median and minimum.
// Exit codes: 0 ok, 2 bad input (flags, model, plan, inputs), 1 any other failure.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include "core/workload.hpp"
#include "engine/model.hpp"
#include "engine/npy.hpp"
#include "tools/cli_common.hpp"

namespace {

using namespace atvoss;

std::map<std::string, std::string> input_files(const std::vector<std::string>& args) {
  std::map<std::string, std::string> files;
  for (const auto& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw_bad_input("--input: expected NAME=FILE.npy, got '" + a + "'");
    files[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return files;
}

std::map<std::string, std::int64_t> named_dims(const std::vector<std::string>& args) {
  std::map<std::string, std::int64_t> dims;
  for (const auto& a : args) {
    const auto eq = a.find('=');
    std::int64_t v = 0;
    std::size_t used = 0;
    try {
      if (eq != std::string::npos) v = std::stoll(a.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || used != a.size() - eq - 1 || v < 1) {
      throw_bad_input("--dim: expected NAME=N with N >= 1, got '" + a + "'");
    }
    dims[a.substr(0, eq)] = v;
  }
  return dims;
}

// The arrays of --input, by input name.
std::map<std::string, engine::NpyArray> read_inputs(const std::vector<std::string>& args) {
  std::map<std::string, engine::NpyArray> arrays;
  for (const auto& [name, file] : input_files(args)) arrays[name] = engine::read_npy(file);
  return arrays;
}

std::vector<std::vector<float>> model_inputs(const engine::Model& m, std::map<std::string, engine::NpyArray> files,
                                             std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::vector<float>> data;
  for (const auto& in : m.inputs()) {
    const auto it = files.find(in.name);
    if (it == files.end()) {  // an integer input (ids, a mask) gets zeros, a valid id of any table
      auto& d = data.emplace_back(std::size_t(engine::elements(in.shape)));
      for (auto& v : d) v = in.dtype == "float" ? uniform(rng) : 0.0f;
      continue;
    }
    engine::NpyArray& a = it->second;
    if (in.dtype == "float" && a.dtype != "float32") {
      throw_bad_input("--input " + in.name + ": the file holds " + a.dtype + " where the model takes float32");
    }
    if (a.shape != in.shape) {
      std::string want, got;
      for (auto d : in.shape) want += std::to_string(d) + " ";
      for (auto d : a.shape) got += std::to_string(d) + " ";
      throw_bad_input("--input " + in.name + ": shape [" + got + "] where the model takes [" + want + "]");
    }
    data.push_back(std::move(a.data));
    files.erase(it);
  }
  if (!files.empty()) throw_bad_input("--input: the model has no input '" + files.begin()->first + "'");
  return data;
}

// The slowest steps first, with their share of the profiled total.
void print_profile(const Json& p) {
  std::vector<Json> steps(p["steps"].begin(), p["steps"].end());
  std::stable_sort(steps.begin(), steps.end(), [](const Json& a, const Json& b) { return a["us"] > b["us"]; });
  const double total = p["total_us"].get<double>();
  std::printf("profile: %.1f us over %zu steps; the slowest:\n", total, steps.size());
  for (std::size_t i = 0; i < steps.size() && i < 15; ++i) {
    const Json& s = steps[i];
    const std::string what = s.contains("workload") ? Workload::from_json(s["workload"]).label()
                             : s.contains("op")     ? s["op"].get<std::string>()
                                                    : "layout to " + s["to"].get<std::string>();
    std::printf("  %9.1f us %5.1f %%  %-7s %-32s %s\n", s["us"].get<double>(), 100 * s["us"].get<double>() / total,
                s["kind"].get<std::string>().c_str(), s["node"].get<std::string>().c_str(), what.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"atvoss-run: run a whole ONNX model on this CPU with a model plan's schedules"};
  std::string model, plan, out;
  std::vector<std::string> inputs, dims;
  int batch = 1, threads = 0, repeat = 0;
  std::uint64_t seed = 0;
  bool json = false;
  int profile = 0;
  app.add_option("model", model, "the ONNX file")->required();
  app.add_option("--plan", plan, "a model plan tuned for this model on this CPU (atvoss-tune's model_plan)");
  app.add_option("--batch", batch, "bound to the inputs' symbolic dims not named by --dim")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--dim", dims, "NAME=N: a named symbolic dim's value (sequence_length=128)");
  app.add_option("--threads", threads, "cores the kernels run on (0: every physical core)")->check(CLI::Range(0, 1024));
  app.add_option("--input", inputs,
                 "NAME=FILE.npy (fp32; int64, int32 or bool for integer inputs); inputs not given are random");
  app.add_option("--seed", seed, "seed of the random inputs")->check(tools::non_negative(seed));
  app.add_option("--out", out, "folder for the outputs (<name>.npy)");
  app.add_option("--repeat", repeat, "time this many runs after one warm-up")->check(CLI::Range(0, 100000));
  app.add_option("--profile", profile, "time each step over this many runs; print the slowest")
      ->check(CLI::Range(0, 100000));
  app.add_flag("--json", json, "print JSON");
  return tools::run_cli(app, argc, argv, [&] {
    engine::ModelOptions o;
    o.batch = batch;
    o.dims = named_dims(dims);
    o.threads = threads;
    o.plan = plan;
    auto arrays = read_inputs(inputs);
    for (const auto& [name, a] : arrays) o.input_shapes[name] = a.shape;
    engine::Model m(model, o);
    const auto data = model_inputs(m, std::move(arrays), seed);
    std::vector<const float*> in;
    for (const auto& d : data) in.push_back(d.data());
    auto outputs = m.run(in);
    std::vector<double> times;
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      m.run(in);
      times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    std::vector<std::string> names;
    for (const auto& o : m.outputs()) names.push_back(o.name);
    const std::vector<std::string> files = engine::npy_file_names(names);
    if (!out.empty()) {
      std::filesystem::create_directories(out);
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        const engine::TensorInfo& o = m.outputs()[i];
        engine::write_npy((std::filesystem::path(out) / (files[i] + ".npy")).string(), o.shape, outputs[i].data(),
                          o.dtype);
      }
    }
    Json summary = m.describe();
    if (profile > 0) summary["profile"] = m.profile(in, profile);
    summary["outputs"] = Json::array();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const engine::TensorInfo& o = m.outputs()[i];
      summary["outputs"].push_back({{"name", o.name}, {"shape", o.shape}, {"file", files[i] + ".npy"}});
    }
    if (!times.empty()) {
      summary["median_us"] = times[times.size() / 2];
      summary["min_us"] = times.front();
    }
    if (json) {
      std::cout << summary.dump(2) << "\n";
      return 0;
    }
    std::cout << "model " << model << ": " << summary["steps"].size() << " steps, " << summary["kernels"]
              << " tuned-kernel steps (" << summary["kernels_from_plan"] << " with the plan's schedule), arena "
              << m.arena_bytes() / 1e6 << " MB\n";
    if (profile > 0) print_profile(summary["profile"]);
    if (!times.empty()) {
      std::cout << "run: median " << times[times.size() / 2] << " us, min " << times.front() << " us over " << repeat
                << " runs\n";
    }
    return 0;
  });
}
