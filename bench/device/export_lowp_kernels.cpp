// export_lowp_kernels: writes the int8 and bf16 matmul kernels that bench/device/lowp_check.cpp
// runs on a CPU this machine may lack (AMX): their generated sources and a manifest, for the
// host code generator's view of an AVX-512 CPU with VNNI, BF16 and AMX (48 KiB L1d, 2 MiB L2).
//   check  AMX tile blocks of 1 and 2 tiles each way over ragged shapes, several k blocks,
//          every tile_order, two threads, and a batch_matmul (the exact-arithmetic check)
//   time   per shape (1024^3, the BERT-base GEMMs at M = 128) and dtype, a grid of AMX
//          schedules (tile_k 256, 512, 1024 where the L1d check lets it) and 16 AVX-512
//          dot-product ones, timed on one core
// Every schedule passes the space's check for that CPU. Usage: export_lowp_kernels DIR
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/workload.hpp"
#include "host/codegen.hpp"
#include "host/host_space.hpp"
#include "lowering/knob_names.hpp"

namespace {

using namespace atvoss;

host::MachineInfo amx_cpu() {
  host::MachineInfo m = host::this_machine();
  m.model = "AVX-512 CPU with AMX (exported)";
  m.simd_bytes = 64;
  m.vector_registers = 32;
  m.fma = true;
  m.l1d_bytes = 48 << 10;
  m.l2_bytes = 2 << 20;
  m.l3_bytes = 64 << 20;
  m.simd_flags = {"amx_bf16",    "amx_int8", "amx_tile", "avx2",     "avx512_bf16",
                  "avx512_vnni", "avx512bw", "avx512f",  "avx512vl", "fma"};
  return m;
}

struct Shape {
  std::string name;
  std::int64_t m, n, k;
};

Workload matmul(const Shape& s, const std::string& dtype) {
  return Workload::from_json(Json{{"op", "matmul"}, {"dtype", dtype}, {"dims", {{"M", s.m}, {"N", s.n}, {"K", s.k}}}});
}

struct Exporter {
  explicit Exporter(std::string d) : dir(std::move(d)), manifest(dir + "/manifest.txt") {}
  std::string dir;
  host::MachineInfo cpu = amx_cpu();
  std::ofstream manifest;
  int count = 0;

  // Writes w's kernel for the default schedule with `knobs` set; false if the space refuses it.
  bool add(const std::string& group, const std::string& label, const Workload& w,
           const std::vector<std::pair<std::string_view, std::int64_t>>& knobs) {
    Schedule s = host::default_schedule(w, cpu);
    for (const auto& [k, v] : knobs) s.set(std::string(k), v);
    const Verdict v = host::space_for(w, cpu).check(s);
    if (!v.ok) return false;
    const std::string name = "k" + std::to_string(count++);
    std::ofstream(dir + "/" + name + ".cpp") << host::generate_source(w, s, cpu);
    const std::int64_t batch = w.op() == "batch_matmul" ? w.dim("B") : 1;
    manifest << group << ' ' << name << ' ' << to_string(w.dtype()) << ' ' << batch << ' ' << w.dim("M") << ' '
             << w.dim("N") << ' ' << w.dim("K") << ' ' << label << ' ' << s.to_json().dump() << '\n';
    return true;
  }
};

void export_checks(Exporter& e) {
  const std::vector<Shape> shapes = {{"", 13, 37, 29}, {"", 70, 50, 1200}, {"", 97, 130, 200}, {"", 256, 256, 256}};
  for (const std::string dtype : {"int8", "bfloat16"}) {
    int i = 0;
    for (const Shape& s : shapes) {
      for (const auto& [mr, nr] : std::vector<std::pair<int, int>>{{16, 16}, {32, 16}, {16, 32}, {32, 32}}) {
        const int order = i % 3, threads = 1 + i % 2;
        ++i;
        e.add("check", "amx", matmul(s, dtype),
              {{knobs::amx_tiles, 1},
               {knobs::micro_m, mr},
               {knobs::micro_n, nr},
               {knobs::tile_k, i % 2 ? 64 : 256},
               {knobs::tile_m, 48},
               {knobs::tile_order, order},
               {knobs::threads, threads}});
      }
    }
    // batch_matmul: three batches of a ragged shape, its compensation per batch.
    for (const auto& [mr, order] : std::vector<std::pair<int, int>>{{16, 0}, {32, 2}}) {
      e.add("check", "amx",
            Workload::from_json(
                Json{{"op", "batch_matmul"}, {"dtype", dtype}, {"dims", {{"B", 3}, {"M", 37}, {"N", 45}, {"K", 300}}}}),
            {{knobs::amx_tiles, 1},
             {knobs::micro_m, mr},
             {knobs::micro_n, 32},
             {knobs::tile_k, 128},
             {knobs::tile_order, order},
             {knobs::threads, 2}});
    }
  }
}

void export_timings(Exporter& e) {
  const std::vector<Shape> shapes = {{"1024^3", 1024, 1024, 1024},
                                     {"bert-128x768x768", 128, 768, 768},
                                     {"bert-128x3072x768", 128, 3072, 768},
                                     {"bert-128x768x3072", 128, 768, 3072}};
  for (const Shape& s : shapes) {
    for (const std::string dtype : {"int8", "bfloat16"}) {
      const Workload w = matmul(s, dtype);
      for (std::int64_t tk : {256, 512, 1024})
        for (std::int64_t tm : {96, 192})
          for (std::int64_t tn : {1024, 4096})
            for (std::int64_t order : {0, 1}) {
              e.add("time", s.name + ":amx", w,
                    {{knobs::amx_tiles, 1},
                     {knobs::micro_m, 32},
                     {knobs::micro_n, 32},
                     {knobs::tile_k, tk},
                     {knobs::tile_m, tm},
                     {knobs::tile_n, tn},
                     {knobs::tile_order, order}});
            }
      for (const auto& [mr, nr] : std::vector<std::pair<int, int>>{{4, 32}, {8, 32}, {4, 48}, {6, 32}})
        for (std::int64_t tk : {128, 512})
          for (std::int64_t order : {0, 2}) {
            e.add("time", s.name + ":vnni", w,
                  {{knobs::amx_tiles, 0},
                   {knobs::micro_m, mr},
                   {knobs::micro_n, nr},
                   {knobs::tile_k, tk},
                   {knobs::tile_m, 192},
                   {knobs::tile_n, 1024},
                   {knobs::async_copy_depth, 2},
                   {knobs::tile_order, order}});
          }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: export_lowp_kernels DIR\n");
    return 2;
  }
  try {
    Exporter e(argv[1]);
    if (!e.manifest) {
      std::fprintf(stderr, "export_lowp_kernels: cannot write %s/manifest.txt\n", argv[1]);
      return 1;
    }
    export_checks(e);
    export_timings(e);
    std::printf("%d kernels in %s\n", e.count, argv[1]);
  } catch (const Error& err) {
    std::fprintf(stderr, "export_lowp_kernels: %s\n", err.what());
    return err.is_bad_input() ? 2 : 1;
  }
  return 0;
}
