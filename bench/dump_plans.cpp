// dump_plans: prints, for 300 seeded random schedules of each of nine workloads on ascend910,
// ascend310 and this machine's host target (the host's own space, for the ops it serves), the
// kernel plan's verdict, cores, footprint and register block and the whole feature row. Two
// builds that should plan alike print the same bytes: the check that a refactor of lowering,
// the compute units or the features moves no figure (docs/decisions/compute-unit.md).
//   build/bin/dump_plans > new.txt; <other build>/bin/dump_plans > old.txt; cmp old.txt new.txt
#include <cstdio>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "costmodel/features.hpp"
#include "host/host_space.hpp"
#include "host/machine.hpp"
#include "lowering/compute_unit.hpp"
#include "lowering/lowering.hpp"
#include "simulator/presets.hpp"

namespace {

using namespace atvoss;

const char* const kWorkloads[] = {
    R"({"op":"matmul","dims":{"M":1000,"N":768,"K":3072},"dtype":"float32","epilogue":["bias","gelu"]})",
    R"({"op":"matmul","dims":{"M":128,"N":768,"K":768},"dtype":"float16","epilogue":["bias","add","layernorm"]})",
    R"({"op":"batch_matmul","dims":{"B":12,"M":128,"N":128,"K":64},"dtype":"float32"})",
    R"({"op":"conv2d","dims":{"N":1,"C":64,"H":56,"W":56,"K":64,"R":3,"S":3,"pad":1},"dtype":"float32",)"
    R"("epilogue":["bias","relu"]})",
    R"({"op":"conv2d","dims":{"N":2,"C":256,"H":14,"W":14,"K":512,"R":1,"S":1,"stride":2},"dtype":"float16"})",
    R"({"op":"depthwise_conv2d","dims":{"N":1,"C":96,"H":28,"W":28,"R":3,"S":3,"pad":1},"dtype":"float32"})",
    R"({"op":"softmax","dims":{"M":4096,"N":1000},"dtype":"float32"})",
    R"({"op":"layernorm","dims":{"M":512,"N":768},"dtype":"float16"})",
    R"({"op":"attention","dims":{"B":8,"S":512,"L":512,"D":64},"dtype":"float16"})",
};

void print_plan(const Target& t, const Workload& w, const Schedule& s, const costmodel::Featurizer& f) {
  const lowering::KernelPlan p = lowering::plan_kernel(w, t, s);
  const auto& r = p.registers;
  std::string held;
  const lowering::MemoryLevels levels = lowering::compute_unit(t).levels(t);
  for (int i = 0; i < levels.count; ++i) {
    char one[64];
    std::snprintf(one, sizeof one, "%s%s:%.9g", i ? "," : "", levels.at[std::size_t(i)].name,
                  p.footprint.bytes[std::size_t(i)]);
    held += one;
  }
  std::printf("%s %s %s ok=%d %s cores=%d fp=%s reg=%g,%g,%g,%g\n", t.name.c_str(), w.label().c_str(),
              s.to_json().dump().c_str(), int(p.verdict.ok), p.verdict.reason.c_str(), p.cores, held.c_str(), r.rows,
              r.cols, r.accumulators, r.loads);
  std::vector<float> row(costmodel::feature_count());
  f.write(s, row);
  for (float v : row) std::printf("%.9g ", v);
  std::printf("\n");
}

}  // namespace

int main() {
  const Target targets[] = {simulator::preset("ascend910"), simulator::preset("ascend310"), host::describe_machine()};
  for (const Target& t : targets) {
    for (const char* text : kWorkloads) {
      const Workload w = Workload::from_json(Json::parse(text));
      ScheduleSpace space = lowering::space_for(w, t);
      if (t.organisation == "cpu") {
        try {
          space = host::space_for(w, host::this_machine());
        } catch (const Error&) {
          continue;  // an op or dtype the host backend does not generate
        }
      }
      std::mt19937_64 rng(7);
      const costmodel::Featurizer f(w, t);
      for (int i = 0; i < 300; ++i) print_plan(t, w, space.schedule_at(space.random_point(rng)), f);
    }
  }
}
