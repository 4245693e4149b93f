# Helpers shared by every component's CMakeLists.txt.

# huygens_test(NAME SOURCES... [LIBS libs...] [LABELS labels...])
# One GoogleTest executable; each TEST becomes a CTest test. HUYGENS_FIXTURES is defined to the
# shared fixtures folder.
function(huygens_test name)
  if(NOT HUYGENS_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  # A test of label `cluster` needs the real testbed cluster: only with HUYGENS_CLUSTER_TESTS,
  # after the fixture brought it up, one at a time, with HUYGENS_TESTBED_DIR naming it.
  if("cluster" IN_LIST T_LABELS AND NOT HUYGENS_CLUSTER_TESTS)
    return()
  endif()
  add_executable(${name} ${T_SOURCES} ${T_UNPARSED_ARGUMENTS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main
    huygens_warnings)
  target_compile_definitions(${name} PRIVATE
    HUYGENS_FIXTURES="${HUYGENS_FIXTURES_DIR}"
    HUYGENS_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  set(labels unit)
  if(T_LABELS)
    set(labels ${T_LABELS})
  endif()
  if("cluster" IN_LIST labels)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${labels}" TIMEOUT 600
      ENVIRONMENT "HUYGENS_TESTBED_DIR=${HUYGENS_TESTBED_DIR}"
      FIXTURES_REQUIRED testbed RESOURCE_LOCK testbed)
    return()
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${labels}")
  # API tests run a second time against the real kube-apiserver of the testbed (label
  # `cluster`): FakeApiServer forwards to it (kube/testing/upstream.h). One at a time, since
  # each empties the cluster first. Which test programs do so is HUYGENS_CLUSTER_CONFORMANCE
  # (top-level CMakeLists.txt; docs/testbed.md says why the others do not yet).
  if("apiserver" IN_LIST labels AND HUYGENS_CLUSTER_TESTS AND name IN_LIST HUYGENS_CLUSTER_CONFORMANCE)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_PREFIX "cluster:"
      PROPERTIES LABELS cluster
        ENVIRONMENT "HUYGENS_TEST_UPSTREAM_KUBECONFIG=${HUYGENS_TESTBED_DIR}/admin.kubeconfig"
        FIXTURES_REQUIRED testbed RESOURCE_LOCK testbed)
  endif()
endfunction()

# huygens_benchmark(NAME SOURCES... LIBS libs...)
function(huygens_benchmark name)
  if(NOT HUYGENS_BUILD_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(B "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${B_SOURCES} ${B_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${B_LIBS} benchmark::benchmark benchmark::benchmark_main
    huygens_warnings)
  target_compile_definitions(${name} PRIVATE HUYGENS_FIXTURES="${HUYGENS_FIXTURES_DIR}")
endfunction()

# huygens_fuzzer(NAME SOURCE LIBS libs... [SEEDS dir] [SECONDS n] [RSS_MB n])
# A libFuzzer target (clang only). CTest runs each fuzzer for a bounded time (label `fuzz`,
# SECONDS, default 20) under an RSS limit (RSS_MB, default 2048: an input that takes more is a
# finding).
function(huygens_fuzzer name)
  if(NOT HUYGENS_BUILD_FUZZERS)
    return()
  endif()
  cmake_parse_arguments(F "" "SEEDS;SECONDS;RSS_MB" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${F_SOURCES} ${F_UNPARSED_ARGUMENTS})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${F_LIBS})
  add_dependencies(fuzzers ${name})
  if(NOT F_SECONDS)
    set(F_SECONDS 20)
  endif()
  if(NOT F_RSS_MB)
    set(F_RSS_MB 2048)
  endif()
  set(corpus "${CMAKE_CURRENT_BINARY_DIR}/${name}_corpus")
  set(seed_args "")
  if(F_SEEDS)
    # git keeps no empty folders: a seed folder must hold at least one file.
    file(GLOB seed_files "${F_SEEDS}/*")
    if(NOT seed_files)
      message(FATAL_ERROR "fuzzer ${name}: seed folder ${F_SEEDS} is missing or empty")
    endif()
    set(seed_args "${F_SEEDS}")
  endif()
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
      sh -c "mkdir -p '${corpus}' && exec \"$0\" -max_total_time=${F_SECONDS} -rss_limit_mb=${F_RSS_MB} -print_final_stats=1 '${corpus}' ${seed_args}"
      $<TARGET_FILE:${name}>)
  set_tests_properties(${name} PROPERTIES LABELS fuzz TIMEOUT 300)
endfunction()

# huygens_library(NAME [PUBLIC libs...] [PRIVATE libs...])
# A component's library: every .cc of the current folder except tests (*_test.cc), benchmarks
# (*_bench.cc) and fuzzers (*_fuzz.cc). Includes are rooted at the repository.
function(huygens_library name)
  cmake_parse_arguments(L "" "" "PUBLIC;PRIVATE" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER sources EXCLUDE REGEX "_(test|bench|fuzz)\\.cc$")
  add_library(${name} ${sources})
  target_include_directories(${name} PUBLIC ${CMAKE_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE} huygens_warnings)
endfunction()

# huygens_folder_executables(PREFIX LIBS libs... [FUZZ_LIBS libs...] [LABELS labels...]
#                            [TEST_LABELS test=label...] [SEED_ROOT dir] [FUZZ_RSS_MB fuzz=mb...])
# One executable per <x>_test.cc, <x>_bench.cc and <x>_fuzz.cc of the current folder, named
# PREFIX_<x>_test and so on, linked with LIBS; fuzzers link FUZZ_LIBS instead when given (so the
# instrumented clang build compiles only what the parsers need, not the test environments). Tests get LABELS (default `unit`), or the label
# given for them in TEST_LABELS (`trace_run_test=trace`). A fuzzer's seeds are SEED_ROOT/<x>_fuzz;
# its RSS limit the one given in FUZZ_RSS_MB (`nrt_fuzz=512`), else huygens_fuzzer's default.
function(huygens_folder_executables prefix)
  cmake_parse_arguments(E "" "SEED_ROOT" "LIBS;FUZZ_LIBS;LABELS;TEST_LABELS;FUZZ_RSS_MB" ${ARGN})
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  foreach(src ${tests})
    get_filename_component(name ${src} NAME_WE)
    set(labels ${E_LABELS})
    foreach(pair ${E_TEST_LABELS})
      if(pair MATCHES "^${name}=(.+)$")
        set(labels ${CMAKE_MATCH_1})
      endif()
    endforeach()
    huygens_test(${prefix}_${name} SOURCES ${src} LIBS ${E_LIBS} LABELS ${labels})
  endforeach()
  file(GLOB benches CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_bench.cc)
  foreach(src ${benches})
    get_filename_component(name ${src} NAME_WE)
    huygens_benchmark(${prefix}_${name} SOURCES ${src} LIBS ${E_LIBS})
  endforeach()
  set(fuzz_libs ${E_LIBS})
  if(E_FUZZ_LIBS)
    set(fuzz_libs ${E_FUZZ_LIBS})
  endif()
  file(GLOB fuzzers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_fuzz.cc)
  foreach(src ${fuzzers})
    get_filename_component(name ${src} NAME_WE)
    set(options "")
    if(E_SEED_ROOT)
      list(APPEND options SEEDS ${E_SEED_ROOT}/${name})
    endif()
    foreach(pair ${E_FUZZ_RSS_MB})
      if(pair MATCHES "^${name}=([0-9]+)$")
        list(APPEND options RSS_MB ${CMAKE_MATCH_1})
      endif()
    endforeach()
    huygens_fuzzer(${prefix}_${name} SOURCES ${src} LIBS ${fuzz_libs} ${options})
  endforeach()
endfunction()

# huygens_grpc_library(NAME PROTO file.proto)
# C++ messages and gRPC stubs generated at build time by protoc and grpc_cpp_plugin from PROTO
# (in the current folder). Includes are rooted at the build tree: a proto in <repo>/x/api is
# included as "x/api/<stem>.grpc.pb.h". Generated code is compiled without our warning flags (it
# is not ours to fix).
function(huygens_grpc_library name)
  cmake_parse_arguments(G "" "PROTO" "" ${ARGN})
  find_package(Protobuf REQUIRED)
  pkg_check_modules(GRPCPP REQUIRED IMPORTED_TARGET grpc++)
  find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
  get_filename_component(stem ${G_PROTO} NAME_WE)
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set(out ${CMAKE_BINARY_DIR}/grpc/${rel})
  set(generated ${out}/${stem}.pb.cc ${out}/${stem}.pb.h ${out}/${stem}.grpc.pb.cc
    ${out}/${stem}.grpc.pb.h)
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out}
    COMMAND protobuf::protoc
      --proto_path=${CMAKE_CURRENT_SOURCE_DIR}
      --cpp_out=${out}
      --grpc_out=${out}
      --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN}
      ${CMAKE_CURRENT_SOURCE_DIR}/${G_PROTO}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${G_PROTO} protobuf::protoc
    COMMENT "protoc: ${rel}/${G_PROTO}"
    VERBATIM)
  add_library(${name} ${generated})
  target_include_directories(${name} PUBLIC ${CMAKE_BINARY_DIR}/grpc)
  target_link_libraries(${name} PUBLIC protobuf::libprotobuf PkgConfig::GRPCPP)
endfunction()
