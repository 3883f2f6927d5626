# What `cmake --install <build> --prefix P` puts under P, and the CPack packages made of it
# (docs/USER_GUIDE.md, "Installing kelt"):
#
#   bin/kelt                          the command
#   lib/libkelt.so                    the C ABI (include/kelt.h): libkelt.so.<version>,
#                                     soname libkelt.so.<major> (CMakeLists.txt)
#   lib/libkelt_cxx.so                the C++ API (include/kelt/*.h), when KELT_BUILD_SDK:
#                                     soname libkelt_cxx.so.<major>.<minor> while 0.x
#   lib/kelt/                         the Arrow/Parquet libraries of the pyarrow wheel kelt
#                                     was built with (absent when Arrow is a system install),
#                                     and their headers in lib/kelt/include/ for C++ callers
#   include/kelt.h, include/kelt/     the C header; the public C++ headers and kelt/version.h
#   lib/cmake/kelt/                   kelt-config.cmake, kelt-config-version.cmake
#   lib/pkgconfig/                    kelt.pc (C ABI), kelt-cxx.pc (C++ API)
#   share/kelt/                       the demo's CSV sample and the example configs
#
# Paths are fixed (lib, not lib/<multiarch>) so the RPATHs below hold in every prefix;
# each binary finds its libraries relative to itself ($ORIGIN), never in the build tree.
set(KELT_INSTALL_BINDIR bin)
set(KELT_INSTALL_LIBDIR lib)
set(KELT_INSTALL_PRIVATE_LIBDIR lib/kelt)
set(KELT_INSTALL_INCLUDEDIR include)
set(KELT_INSTALL_CMAKEDIR lib/cmake/kelt)
set(KELT_INSTALL_DATADIR share/kelt)

set_target_properties(kelt_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../lib/kelt")
install(TARGETS kelt_cli RUNTIME DESTINATION ${KELT_INSTALL_BINDIR} COMPONENT runtime)
if(TARGET kelt_c)
  set_target_properties(kelt_c PROPERTIES INSTALL_RPATH "$ORIGIN/kelt")
  install(TARGETS kelt_c LIBRARY DESTINATION ${KELT_INSTALL_LIBDIR} COMPONENT runtime)
  install(FILES ${PROJECT_SOURCE_DIR}/capi/include/kelt.h
          DESTINATION ${KELT_INSTALL_INCLUDEDIR} COMPONENT sdk)
endif()
if(TARGET kelt_cxx)
  set_target_properties(kelt_cxx PROPERTIES INSTALL_RPATH "$ORIGIN/kelt")
  install(TARGETS kelt_cxx LIBRARY DESTINATION ${KELT_INSTALL_LIBDIR} COMPONENT runtime)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kelt ${KELT_GENERATED_INCLUDE_DIR}/kelt
        DESTINATION ${KELT_INSTALL_INCLUDEDIR} COMPONENT sdk FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/tests/fixtures/uber/uber_apr14_sample.csv
              ${PROJECT_SOURCE_DIR}/examples/config/uber.yaml
              ${PROJECT_SOURCE_DIR}/examples/config/uber_schema.json
              ${PROJECT_SOURCE_DIR}/examples/c/load_records.c
              ${PROJECT_SOURCE_DIR}/examples/cpp/byo_load.cc
        DESTINATION ${KELT_INSTALL_DATADIR} COMPONENT runtime)

# Arrow from the pyarrow wheel is not on a plain system: the libraries kelt's binaries
# need (by soname) go to lib/kelt/, and the headers the C++ API includes (arrow/,
# parquet/) to lib/kelt/include/. A system Arrow (find_package) is a dependency instead.
set(KELT_BUNDLED_ARROW OFF)
set(KELT_BUNDLED_ARROW_LIBS "")
if(DEFINED KELT_ARROW_LIB_DIR)
  set(KELT_BUNDLED_ARROW ON)
  foreach(_lib arrow parquet arrow_s3)
    file(REAL_PATH "${KELT_ARROW_LIB_DIR}/lib${_lib}.so" _real)
    # The soname, e.g. libarrow.so.2600: what the binaries' DT_NEEDED name.
    file(GLOB _soname RELATIVE "${KELT_ARROW_LIB_DIR}" "${KELT_ARROW_LIB_DIR}/lib${_lib}.so.*")
    list(FILTER _soname INCLUDE REGEX "^lib${_lib}\\.so\\.[0-9]+$")
    if(NOT _soname)
      message(FATAL_ERROR "kelt: no lib${_lib}.so.<N> in ${KELT_ARROW_LIB_DIR}")
    endif()
    install(FILES "${_real}" DESTINATION ${KELT_INSTALL_PRIVATE_LIBDIR}
            RENAME "${_soname}" COMPONENT runtime)
    list(APPEND KELT_BUNDLED_ARROW_LIBS "${_soname}")
  endforeach()
  install(DIRECTORY "${KELT_ARROW_INCLUDE_DIR}/arrow" "${KELT_ARROW_INCLUDE_DIR}/parquet"
          DESTINATION ${KELT_INSTALL_PRIVATE_LIBDIR}/include COMPONENT sdk)
endif()

# The CMake package (kelt::kelt_c, kelt::kelt) and the pkg-config files.
include(CMakePackageConfigHelpers)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kelt-config.cmake.in
  ${CMAKE_BINARY_DIR}/install/kelt-config.cmake
  INSTALL_DESTINATION ${KELT_INSTALL_CMAKEDIR})
# 0.x releases are compatible within a minor version; from 1.0 within a major one.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_kelt_compat SameMinorVersion)
else()
  set(_kelt_compat SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_BINARY_DIR}/install/kelt-config-version.cmake
  COMPATIBILITY ${_kelt_compat})
install(FILES ${CMAKE_BINARY_DIR}/install/kelt-config.cmake
              ${CMAKE_BINARY_DIR}/install/kelt-config-version.cmake
        DESTINATION ${KELT_INSTALL_CMAKEDIR} COMPONENT sdk)

list(TRANSFORM KELT_BUNDLED_ARROW_LIBS PREPEND "-l:" OUTPUT_VARIABLE _kelt_pc_arrow)
list(JOIN _kelt_pc_arrow " " KELT_PC_ARROW_LIBS)
if(NOT KELT_BUNDLED_ARROW)
  set(KELT_PC_REQUIRES "Requires: arrow parquet")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/kelt.pc.in
               ${CMAKE_BINARY_DIR}/install/kelt.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/kelt-cxx.pc.in
               ${CMAKE_BINARY_DIR}/install/kelt-cxx.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/install/kelt.pc
        DESTINATION ${KELT_INSTALL_LIBDIR}/pkgconfig COMPONENT sdk)
if(TARGET kelt_cxx)
  install(FILES ${CMAKE_BINARY_DIR}/install/kelt-cxx.pc
          DESTINATION ${KELT_INSTALL_LIBDIR}/pkgconfig COMPONENT sdk)
endif()

# CPack: kelt-<version>-Linux-<arch>.tar.gz and kelt_<version>_<arch>.deb, one package
# holding every component. The .deb installs under /usr; its Depends come from
# dpkg-shlibdeps over the packaged binaries (the bundled Arrow in lib/kelt/ is ours).
set(CPACK_PACKAGE_NAME kelt)
set(CPACK_PACKAGE_VENDOR "kelt authors")
set(CPACK_PACKAGE_CONTACT "kelt authors <kelt@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Kafka streaming ELT: the kelt command and the C/C++ SDK (libkelt)")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_README ${PROJECT_SOURCE_DIR}/README.md)
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(KELT_BUNDLED_ARROW)
  # dpkg-shlibdeps -l: libraries found here are the package's own, not a dependency.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${KELT_ARROW_LIB_DIR}")
endif()
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
include(CPack)
