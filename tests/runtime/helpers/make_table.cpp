// Writes the runtime tests' host table (runtime_test_util.hpp) for this machine to argv[1],
// and one for another CPU to argv[2]: the fixture of the C API test (atvoss_runtime_c_test.c).
#include <cstdio>
#include <exception>

#include "../runtime_test_util.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s this-cpu-table.json other-cpu-table.json\n", argv[0]);
    return 2;
  }
  try {
    atvoss::runtime::testing::write_table(argv[1], atvoss::host::this_machine().target_name());
    atvoss::runtime::testing::write_table(argv[2], "host-000000000000");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
