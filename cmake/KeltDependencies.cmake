# Locate kelt's third-party libraries and expose them as imported targets:
#   kelt::arrow, kelt::parquet, kelt::arrow_compute, kelt::arrow_s3  (system Arrow via find_package, else the pyarrow wheel)
#   simdjson::simdjson, kelt::rdkafka, kelt::pq (libpq), GTest::gtest_main, benchmark::benchmark
set(KELT_PYTHON "${CMAKE_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
    "Python with pyarrow, used when no system Arrow C++ is installed")

find_package(simdjson CONFIG REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
add_library(kelt::rdkafka ALIAS PkgConfig::RDKAFKA)
pkg_check_modules(PQ REQUIRED IMPORTED_TARGET libpq)
add_library(kelt::pq ALIAS PkgConfig::PQ)

find_package(Arrow CONFIG QUIET)
find_package(Parquet CONFIG QUIET)
if(Arrow_FOUND AND Parquet_FOUND)
  message(STATUS "kelt: Arrow ${Arrow_VERSION} from a system install")
  add_library(kelt::arrow ALIAS Arrow::arrow_shared)
  add_library(kelt::parquet ALIAS Parquet::parquet_shared)
  # Arrow >= 21 ships compute kernels and S3 as separate libraries.
  find_package(ArrowCompute CONFIG QUIET)
  if(TARGET ArrowCompute::arrow_compute_shared)
    add_library(kelt::arrow_compute ALIAS ArrowCompute::arrow_compute_shared)
  else()
    add_library(kelt::arrow_compute ALIAS Arrow::arrow_shared)
  endif()
  find_package(ArrowS3 CONFIG QUIET)
  if(TARGET ArrowS3::arrow_s3_shared)
    add_library(kelt::arrow_s3 ALIAS ArrowS3::arrow_s3_shared)
  else()
    add_library(kelt::arrow_s3 ALIAS Arrow::arrow_shared)
  endif()
else()
  if(NOT EXISTS "${KELT_PYTHON}")
    message(FATAL_ERROR "kelt: no system Arrow C++ and no Python at ${KELT_PYTHON}; "
                        "run scripts/bootstrap.sh first")
  endif()
  execute_process(
    COMMAND "${KELT_PYTHON}" -c
      "import pyarrow as pa; pa.create_library_symlinks(); print(pa.get_include()); print(pa.get_library_dirs()[0]); print(pa.__version__)"
    OUTPUT_VARIABLE _kelt_pa OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _kelt_pa_rc)
  if(NOT _kelt_pa_rc EQUAL 0)
    message(FATAL_ERROR "kelt: pyarrow not importable with ${KELT_PYTHON}")
  endif()
  string(REPLACE "\n" ";" _kelt_pa "${_kelt_pa}")
  list(GET _kelt_pa 0 KELT_ARROW_INCLUDE_DIR)
  list(GET _kelt_pa 1 KELT_ARROW_LIB_DIR)
  list(GET _kelt_pa 2 KELT_ARROW_VERSION)
  message(STATUS "kelt: Arrow ${KELT_ARROW_VERSION} from the pyarrow wheel (${KELT_ARROW_LIB_DIR})")
  foreach(_lib arrow parquet arrow_compute arrow_s3)
    add_library(kelt::${_lib} SHARED IMPORTED GLOBAL)
    set_target_properties(kelt::${_lib} PROPERTIES
      IMPORTED_LOCATION "${KELT_ARROW_LIB_DIR}/lib${_lib}.so"
      INTERFACE_INCLUDE_DIRECTORIES "${KELT_ARROW_INCLUDE_DIR}")
  endforeach()
  set_property(TARGET kelt::parquet PROPERTY INTERFACE_LINK_LIBRARIES kelt::arrow)
  set_property(TARGET kelt::arrow_compute PROPERTY INTERFACE_LINK_LIBRARIES kelt::arrow)
  set_property(TARGET kelt::arrow_s3 PROPERTY INTERFACE_LINK_LIBRARIES kelt::arrow)
  # Binaries find the wheel's libraries without LD_LIBRARY_PATH.
  set(CMAKE_BUILD_RPATH "${KELT_ARROW_LIB_DIR}" CACHE INTERNAL "")
  set(CMAKE_INSTALL_RPATH "${KELT_ARROW_LIB_DIR}" CACHE INTERNAL "")
endif()

if(KELT_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(KELT_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# kelt::duckdb: DuckDB's C API as static archives, provisioned by scripts/bootstrap.sh
# (step "duckdb") into $KELT_DUCKDB_ROOT (scripts/lib/paths.sh). The archives refer to
# each other in both directions, so they link as one --start-group/--end-group.
if(DEFINED ENV{KELT_DUCKDB_ROOT})
  set(_kelt_duckdb_default "$ENV{KELT_DUCKDB_ROOT}")
elseif(DEFINED ENV{KELT_CACHE})
  set(_kelt_duckdb_default "$ENV{KELT_CACHE}/duckdb/1.5.6")
else()
  set(_kelt_duckdb_default "$ENV{HOME}/.cache/kelt/duckdb/1.5.6")
endif()
set(KELT_DUCKDB_ROOT "${_kelt_duckdb_default}" CACHE PATH
    "DuckDB C API (include/duckdb.h, lib/*.a) from scripts/bootstrap.sh")
# Link order of the Go module's prebuilt.go (the same list as scripts/bootstrap.sh).
set(_kelt_duckdb_libs
  duckdb_static duckdb_generated_extension_loader autocomplete_extension
  core_functions_extension icu_extension json_extension parquet_extension tpcds_extension
  tpch_extension duckdb_fastpforlib duckdb_fmt duckdb_fsst duckdb_hyperloglog
  duckdb_mbedtls duckdb_miniz duckdb_pg_query duckdb_re2 duckdb_skiplistlib
  duckdb_utf8proc duckdb_yyjson duckdb_zstd)
set(_kelt_duckdb_archives)
foreach(_lib ${_kelt_duckdb_libs})
  set(_archive "${KELT_DUCKDB_ROOT}/lib/lib${_lib}.a")
  if(NOT EXISTS "${_archive}")
    message(FATAL_ERROR "kelt: no ${_archive}; run scripts/bootstrap.sh (step duckdb)")
  endif()
  list(APPEND _kelt_duckdb_archives "${_archive}")
endforeach()
find_package(Threads REQUIRED)
add_library(kelt::duckdb INTERFACE IMPORTED GLOBAL)
set_target_properties(kelt::duckdb PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${KELT_DUCKDB_ROOT}/include"
  INTERFACE_COMPILE_DEFINITIONS DUCKDB_STATIC_BUILD
  INTERFACE_LINK_LIBRARIES
    "-Wl,--start-group;${_kelt_duckdb_archives};-Wl,--end-group;Threads::Threads;${CMAKE_DL_LIBS};m")
message(STATUS "kelt: DuckDB C API from ${KELT_DUCKDB_ROOT}")

# Link `target` so that simdjson and OpenSSL come before Arrow/Parquet in its DT_NEEDED
# list: pyarrow's libparquet exports simdjson symbols of another version and ~1,100
# OpenSSL symbols, and the first library in load order that defines a symbol wins, so
# otherwise librdkafka's and libpq's TLS (and kelt's JSON) would bind to those copies.
# (--no-as-needed: the target may call neither directly, yet they must come first.)
find_package(OpenSSL REQUIRED)
function(kelt_link_first_party_symbols target)
  target_link_libraries(${target} PRIVATE -Wl,--no-as-needed simdjson::simdjson
                        OpenSSL::SSL OpenSSL::Crypto -Wl,--as-needed)
endfunction()
