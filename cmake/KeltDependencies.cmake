# Locate kelt's third-party libraries and expose them as imported targets:
#   kelt::arrow, kelt::parquet, kelt::arrow_compute, kelt::arrow_s3  (system Arrow via find_package, else the pyarrow wheel)
#   simdjson::simdjson, kelt::rdkafka, kelt::pq (libpq), GTest::gtest_main, benchmark::benchmark,
#   kelt::avro_c (tests, benchmarks and fuzz targets only)
set(KELT_PYTHON "${CMAKE_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
    "Python with pyarrow, used when no system Arrow C++ is installed")

find_package(simdjson CONFIG REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
# kelt_cache_default(OUT ROOT_ENV SUBDIR): where scripts/bootstrap.sh puts a download, as
# scripts/lib/paths.sh says: $ROOT_ENV, else $KELT_CACHE/SUBDIR, else ~/.cache/kelt/SUBDIR.
function(kelt_cache_default out root_env subdir)
  if(DEFINED ENV{${root_env}})
    set(${out} "$ENV{${root_env}}" PARENT_SCOPE)
  elseif(DEFINED ENV{KELT_CACHE})
    set(${out} "$ENV{KELT_CACHE}/${subdir}" PARENT_SCOPE)
  else()
    set(${out} "$ENV{HOME}/.cache/kelt/${subdir}" PARENT_SCOPE)
  endif()
endfunction()
# kelt::rdkafka, the Kafka client. KELT_RDKAFKA chooses where it comes from:
#   vendored (default)  librdkafka 2.11.1, static, built by Confluent, provisioned by
#                       scripts/bootstrap.sh (step "rdkafka") into $KELT_RDKAFKA_ROOT
#   system              a shared librdkafka found by pkg-config (Debian's librdkafka-dev),
#                       at least KELT_RDKAFKA_MIN_VERSION
# The vendored archive carries its own OpenSSL, curl, zstd, lz4 and SASL. So that no copy
# of those can meet another in a process (libpq's and pyarrow's OpenSSL, the librdkafka
# of the confluent-kafka wheel next to kelt in Python), it is prelinked at configure time
# into one relocatable object in which every symbol except rd_kafka_* is local: its TLS
# calls bind to its own OpenSSL whatever the link order, and nothing but rd_kafka_* can be
# exported (libkelt.so's version script and --exclude-libs hide those too).
set(KELT_RDKAFKA "vendored" CACHE STRING "Kafka client: vendored (static 2.11.1) or system")
set_property(CACHE KELT_RDKAFKA PROPERTY STRINGS vendored system)
# The oldest librdkafka kelt runs on: Debian 12's. Below 2.2 the consumer wakes its own
# fetchers (kafka/prefetch.h); group_protocol=consumer needs 2.4 (kelt checks at run time).
set(KELT_RDKAFKA_MIN_VERSION "2.0.2")
if(KELT_RDKAFKA STREQUAL "system")
  pkg_check_modules(RDKAFKA IMPORTED_TARGET rdkafka)
  if(NOT RDKAFKA_FOUND)
    message(FATAL_ERROR "kelt: KELT_RDKAFKA=system, but pkg-config finds no rdkafka "
                        "(apt install librdkafka-dev), or configure with -DKELT_RDKAFKA=vendored")
  endif()
  if(RDKAFKA_VERSION VERSION_LESS KELT_RDKAFKA_MIN_VERSION)
    message(FATAL_ERROR "kelt: the system librdkafka is ${RDKAFKA_VERSION}; kelt needs at "
                        "least ${KELT_RDKAFKA_MIN_VERSION}. Use -DKELT_RDKAFKA=vendored.")
  endif()
  add_library(kelt::rdkafka ALIAS PkgConfig::RDKAFKA)
  message(STATUS "kelt: librdkafka ${RDKAFKA_VERSION} from the system (pkg-config)")
elseif(KELT_RDKAFKA STREQUAL "vendored")
  # The same default as scripts/lib/paths.sh.
  set(_kelt_rdkafka_version_dir "2.11.1")
  if(DEFINED ENV{KELT_RDKAFKA_VERSION})
    set(_kelt_rdkafka_version_dir "$ENV{KELT_RDKAFKA_VERSION}")
  endif()
  kelt_cache_default(_kelt_rdkafka_default KELT_RDKAFKA_ROOT
                     "librdkafka/${_kelt_rdkafka_version_dir}")
  set(KELT_RDKAFKA_ROOT "${_kelt_rdkafka_default}" CACHE PATH
      "librdkafka (include/librdkafka/rdkafka.h, lib/librdkafka.a) from scripts/bootstrap.sh")
  set(_kelt_rdkafka_archive "${KELT_RDKAFKA_ROOT}/lib/librdkafka.a")
  set(_kelt_rdkafka_header "${KELT_RDKAFKA_ROOT}/include/librdkafka/rdkafka.h")
  if(NOT EXISTS "${_kelt_rdkafka_archive}" OR NOT EXISTS "${_kelt_rdkafka_header}")
    message(FATAL_ERROR "kelt: no librdkafka in ${KELT_RDKAFKA_ROOT}; run scripts/bootstrap.sh "
                        "(step rdkafka), or configure with -DKELT_RDKAFKA=system")
  endif()
  file(STRINGS "${_kelt_rdkafka_header}" _kelt_rdkafka_hex
       REGEX "^#define RD_KAFKA_VERSION +0x[0-9a-fA-F]+")
  string(REGEX REPLACE ".*0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F]).*"
         "\\1;\\2;\\3" _kelt_rdkafka_parts "${_kelt_rdkafka_hex}")
  set(_kelt_rdkafka_version "")
  foreach(_part ${_kelt_rdkafka_parts})
    math(EXPR _part "0x${_part}")
    string(APPEND _kelt_rdkafka_version "${_part}.")
  endforeach()
  string(REGEX REPLACE "\\.$" "" _kelt_rdkafka_version "${_kelt_rdkafka_version}")
  if(_kelt_rdkafka_version VERSION_LESS KELT_RDKAFKA_MIN_VERSION)
    message(FATAL_ERROR "kelt: ${KELT_RDKAFKA_ROOT} holds librdkafka ${_kelt_rdkafka_version}; "
                        "kelt needs at least ${KELT_RDKAFKA_MIN_VERSION}")
  endif()
  # The prelink: one object with only rd_kafka_* global, archived for the linker. Done
  # again whenever the archive differs (its hash is kept next to the bundle), and a new
  # archive makes the build directory configure again.
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               "${_kelt_rdkafka_archive}")
  find_program(KELT_LD NAMES ld.bfd ld REQUIRED)
  set(KELT_NM "${CMAKE_NM}")
  set(KELT_OBJCOPY "${CMAKE_OBJCOPY}")
  set(KELT_AR "${CMAKE_AR}")
  set(_kelt_rdkafka_dir "${CMAKE_BINARY_DIR}/rdkafka")
  set(_kelt_rdkafka_bundle "${_kelt_rdkafka_dir}/libkelt_rdkafka.a")
  file(SHA256 "${_kelt_rdkafka_archive}" _kelt_rdkafka_hash)
  set(_kelt_rdkafka_stamp_text "${_kelt_rdkafka_archive} ${_kelt_rdkafka_hash}")
  set(_kelt_rdkafka_stamp_old "")
  if(EXISTS "${_kelt_rdkafka_dir}/bundle.stamp")
    file(READ "${_kelt_rdkafka_dir}/bundle.stamp" _kelt_rdkafka_stamp_old)
  endif()
  if(NOT EXISTS "${_kelt_rdkafka_bundle}" OR
     NOT _kelt_rdkafka_stamp_old STREQUAL _kelt_rdkafka_stamp_text)
    message(STATUS "kelt: prelinking ${_kelt_rdkafka_archive} (only rd_kafka_* stays global)")
    file(MAKE_DIRECTORY "${_kelt_rdkafka_dir}")
    file(REMOVE "${_kelt_rdkafka_dir}/bundle.stamp")
    execute_process(COMMAND "${KELT_NM}" -g --defined-only "${_kelt_rdkafka_archive}"
                    OUTPUT_VARIABLE _kelt_nm ERROR_QUIET RESULT_VARIABLE _rc)
    string(REGEX MATCHALL "[^\n]* [TDBRV] rd_kafka_[A-Za-z0-9_]+" _kelt_api "${_kelt_nm}")
    list(TRANSFORM _kelt_api REPLACE ".* " "")
    list(REMOVE_DUPLICATES _kelt_api)
    list(LENGTH _kelt_api _n)
    if(NOT _rc EQUAL 0 OR _n LESS 500)
      message(FATAL_ERROR "kelt: reading the symbols of ${_kelt_rdkafka_archive} failed")
    endif()
    string(REPLACE ";" "\n" _kelt_keep "${_kelt_api}")
    file(WRITE "${_kelt_rdkafka_dir}/api.txt" "${_kelt_keep}\n")
    list(TRANSFORM _kelt_api PREPEND "-u" OUTPUT_VARIABLE _kelt_undef)
    # -d allocates common symbols (OpenSSL's OPENSSL_ia32cap_P) so they can be made local.
    execute_process(
      COMMAND "${KELT_LD}" -r -d -o "${_kelt_rdkafka_dir}/rdkafka_all.o" ${_kelt_undef}
              "${_kelt_rdkafka_archive}"
      COMMAND_ERROR_IS_FATAL ANY)
    execute_process(
      COMMAND "${KELT_OBJCOPY}" "--keep-global-symbols=${_kelt_rdkafka_dir}/api.txt"
              "${_kelt_rdkafka_dir}/rdkafka_all.o" "${_kelt_rdkafka_dir}/rdkafka.o"
      COMMAND_ERROR_IS_FATAL ANY)
    file(REMOVE "${_kelt_rdkafka_dir}/rdkafka_all.o" "${_kelt_rdkafka_bundle}.tmp")
    execute_process(
      COMMAND "${KELT_AR}" rcs "${_kelt_rdkafka_bundle}.tmp" "${_kelt_rdkafka_dir}/rdkafka.o"
      COMMAND_ERROR_IS_FATAL ANY)
    file(REMOVE "${_kelt_rdkafka_dir}/rdkafka.o")
    file(RENAME "${_kelt_rdkafka_bundle}.tmp" "${_kelt_rdkafka_bundle}")
    file(WRITE "${_kelt_rdkafka_dir}/bundle.stamp" "${_kelt_rdkafka_stamp_text}")
  endif()
  add_library(kelt::rdkafka STATIC IMPORTED GLOBAL)
  set_target_properties(kelt::rdkafka PROPERTIES
    IMPORTED_LOCATION "${_kelt_rdkafka_bundle}"
    INTERFACE_INCLUDE_DIRECTORIES "${KELT_RDKAFKA_ROOT}/include"
    INTERFACE_LINK_LIBRARIES "m;dl;Threads::Threads;rt"
    INTERFACE_LINK_OPTIONS "LINKER:--exclude-libs,libkelt_rdkafka.a")
  message(STATUS "kelt: librdkafka ${_kelt_rdkafka_version} vendored from ${KELT_RDKAFKA_ROOT}")
else()
  message(FATAL_ERROR "kelt: KELT_RDKAFKA must be vendored or system, not '${KELT_RDKAFKA}'")
endif()
pkg_check_modules(PQ REQUIRED IMPORTED_TARGET libpq)
add_library(kelt::pq ALIAS PkgConfig::PQ)
# kelt::avro_c: Apache Avro C (Debian's libavro-dev): the Iceberg module encodes
# manifests with it, and the Avro decoder's tests, fuzz target and benchmark check the
# decoder against it. kelt::sqlite3: the Iceberg SQL catalog's embedded database.
pkg_check_modules(AVRO_C REQUIRED IMPORTED_TARGET avro-c)
add_library(kelt::avro_c ALIAS PkgConfig::AVRO_C)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
add_library(kelt::sqlite3 ALIAS PkgConfig::SQLITE3)

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
kelt_cache_default(_kelt_duckdb_default KELT_DUCKDB_ROOT "duckdb/1.5.6")
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
