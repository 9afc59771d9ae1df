# Layering check (docs/architecture.md), run by ctest as `atvoss_layering`: every
# #include "<module>/..." in a module's sources must name a module it may depend on.
# Above all, costmodel never sees simulator or backend: a cost model that carries the
# simulator's equations proves nothing about hardware it has not seen.
# Usage: cmake -DROOT=<source dir> -P check_layering.cmake
cmake_minimum_required(VERSION 3.25)
set(allowed_core core)
set(allowed_lowering core lowering)
set(allowed_simulator core lowering simulator)
set(allowed_host core lowering host)
set(allowed_backend core lowering simulator host backend)
set(allowed_costmodel core lowering costmodel)
set(allowed_search core lowering costmodel search)
set(allowed_db core db)
# runtime/ uses db/table (the lookup table; atvoss_table, no SQLite) and host/ (codegen, builder).
set(allowed_runtime core lowering host db runtime)
set(allowed_rpc core lowering backend db rpc)
# frontend/: the model as the user brings it (ONNX import, zoo, precision, device memory, the
# nodes not tuned); it asks the backends only whether a task has a valid schedule.
set(allowed_frontend core lowering backend frontend)
# execution/: the graph run on one device (scheduler, memory plan), from node costs it is given.
set(allowed_execution core lowering frontend execution)
# distributed/: many devices (topology, collectives, parallel plans) over the one-device graph run.
set(allowed_distributed core lowering costmodel search frontend execution distributed)
set(allowed_tuner core lowering backend costmodel search db rpc frontend tuner)
# plan/: what a tuned model runs, decided once (schedules checked, layouts, graph run, memory).
set(allowed_plan core lowering host backend costmodel search db rpc frontend execution tuner plan)
# engine/: runs a model plan's ONNX model on this CPU (the runtime's kernels, plain ops, one arena).
set(allowed_engine core lowering host backend db runtime rpc frontend execution tuner plan engine)
# report/: renders the plan beside the variants that explain it, and the HTML.
set(allowed_report core lowering backend costmodel search db runtime rpc frontend execution distributed tuner plan report)
# python/ (the Python package's bindings) sits on top, like tools/.
set(allowed_python core lowering simulator host backend costmodel search db runtime rpc frontend execution distributed tuner plan engine report python)
set(modules core lowering simulator host backend costmodel search db runtime rpc frontend execution distributed tuner plan engine report python)

set(violations "")
foreach(module IN LISTS modules)
  file(GLOB_RECURSE sources "${ROOT}/${module}/*.cpp" "${ROOT}/${module}/*.hpp" "${ROOT}/${module}/*.h"
       "${ROOT}/${module}/*.cc")
  foreach(src IN LISTS sources)
    file(STRINGS "${src}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([a-z_]+)/.*" "\\1" used "${line}")
      if(NOT used IN_LIST allowed_${module})
        file(RELATIVE_PATH rel "${ROOT}" "${src}")
        list(APPEND violations "${rel}: ${module}/ must not include ${used}/")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "layering violations:\n  ${text}")
endif()
message(STATUS "layering: every include points down the module graph")
