# Install rules and the Debian packages (CPack, DEB generator); docs/packaging.md.
#
#   kiln         the CLI and kiln-studio, the desktop entry, the icon, MIME types for
#                .kiln plans and .onnx models, man pages kiln(1) and kiln-studio(1),
#                bash completion, the Python module (import kiln) where it is built;
#                in a CUDA build the CUDA backend, whose libraries it loads when present
#   libkiln-dev  the public headers, the CMake package (find_package(Kiln):
#                Kiln::plugin, Kiln::engine, Kiln::cuda), pkg-config files, the
#                engine's static libraries
#
# `make package` (or `cpack` in the build folder) writes them to BUILD/packages.
# Included from the top-level CMakeLists.txt after every target is defined.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_PACKAGE_OUT ${CMAKE_BINARY_DIR}/packaging)

# --- kiln: the programs and their desktop integration --------------------------------
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT kiln)
if(TARGET kiln-studio)
  install(TARGETS kiln-studio RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT kiln)
  install(FILES packaging/deb/kiln-studio.desktop
          DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT kiln)
  install(FILES resources/icons/kiln.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps COMPONENT kiln)
  install(FILES packaging/deb/kiln.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages COMPONENT kiln)
endif()
install(FILES README.md docs/packaging.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/kiln
        COMPONENT kiln)

# The Python API (python/, docs/python.md), where it is built: the package kiln, its
# __init__.py and the extension _kiln.cpython-*.so, in Debian's folder for modules of
# every python3 (a module with an ABI tag is found only by the Python it was built for).
if(TARGET kiln_python)
  set(kiln_python_dir lib/python3/dist-packages/kiln)
  install(TARGETS kiln_python LIBRARY DESTINATION ${kiln_python_dir} COMPONENT kiln)
  install(FILES python/kiln/__init__.py DESTINATION ${kiln_python_dir} COMPONENT kiln)
  # The wheel's (pyproject.toml, component "python"): the extension in the wheel's
  # package folder, beside the __init__.py that scikit-build-core takes from python/kiln.
  install(TARGETS kiln_python LIBRARY DESTINATION kiln COMPONENT python)
endif()

# kiln(1) and the bash completion are written from the built CLI's --help
# (packaging/man/kiln_help_docs.py), so they follow the commands; kiln-studio(1) is
# written by hand (the install test checks it against kiln-studio --help).
find_package(Python3 COMPONENTS Interpreter)
find_program(KILN_GZIP gzip)
if(Python3_Interpreter_FOUND AND KILN_GZIP)
  set(kiln_help_script ${PROJECT_SOURCE_DIR}/packaging/man/kiln_help_docs.py)
  set(kiln_completion_template ${PROJECT_SOURCE_DIR}/packaging/completion/kiln.bash.in)
  add_custom_command(
    OUTPUT ${KILN_PACKAGE_OUT}/kiln.1 ${KILN_PACKAGE_OUT}/kiln.1.gz
           ${KILN_PACKAGE_OUT}/kiln-studio.1.gz ${KILN_PACKAGE_OUT}/completion/kiln
    COMMAND ${CMAKE_COMMAND} -E make_directory ${KILN_PACKAGE_OUT}/completion
    COMMAND ${Python3_EXECUTABLE} ${kiln_help_script} $<TARGET_FILE:kiln>
            --version ${PROJECT_VERSION} --man ${KILN_PACKAGE_OUT}/kiln.1
            --completion-template ${kiln_completion_template}
            --completion ${KILN_PACKAGE_OUT}/completion/kiln
    COMMAND ${KILN_GZIP} -9nf -k ${KILN_PACKAGE_OUT}/kiln.1
    COMMAND ${CMAKE_COMMAND} -E copy ${PROJECT_SOURCE_DIR}/packaging/man/kiln-studio.1
            ${KILN_PACKAGE_OUT}/kiln-studio.1
    COMMAND ${KILN_GZIP} -9nf ${KILN_PACKAGE_OUT}/kiln-studio.1
    DEPENDS kiln ${kiln_help_script} ${kiln_completion_template}
            ${PROJECT_SOURCE_DIR}/packaging/man/kiln-studio.1
    COMMENT "kiln: man pages and bash completion from kiln --help"
    VERBATIM)
  add_custom_target(kiln_help_docs ALL
    DEPENDS ${KILN_PACKAGE_OUT}/kiln.1.gz ${KILN_PACKAGE_OUT}/completion/kiln)
  install(FILES ${KILN_PACKAGE_OUT}/kiln.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
          COMPONENT kiln)
  if(TARGET kiln-studio)
    install(FILES ${KILN_PACKAGE_OUT}/kiln-studio.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
            COMPONENT kiln)
  endif()
  install(FILES ${KILN_PACKAGE_OUT}/completion/kiln
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT kiln)
else()
  message(STATUS "kiln: no python3 or gzip -- the packages have no man pages or completion")
endif()

# --- libkiln-dev: headers, CMake package, pkg-config --------------------------------
set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
install(DIRECTORY engine/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

install(TARGETS kiln_plugin_api EXPORT KilnPluginTargets COMPONENT dev)
install(EXPORT KilnPluginTargets NAMESPACE Kiln:: DESTINATION ${KILN_CMAKE_DIR} COMPONENT dev)

set_target_properties(kiln_engine PROPERTIES EXPORT_NAME engine)
install(TARGETS kiln_engine EXPORT KilnEngineTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(EXPORT KilnEngineTargets NAMESPACE Kiln:: DESTINATION ${KILN_CMAKE_DIR} COMPONENT dev)
# kiln_cuda's imported target is written by KilnConfig.cmake (its CUDA libraries are
# found on the using machine).
install(TARGETS kiln_cuda ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)

configure_package_config_file(cmake/KilnConfig.cmake.in ${KILN_PACKAGE_OUT}/KilnConfig.cmake
  INSTALL_DESTINATION ${KILN_CMAKE_DIR})
write_basic_package_version_file(${KILN_PACKAGE_OUT}/KilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)  # 0.x: a minor release may change the API
install(FILES ${KILN_PACKAGE_OUT}/KilnConfig.cmake ${KILN_PACKAGE_OUT}/KilnConfigVersion.cmake
        DESTINATION ${KILN_CMAKE_DIR} COMPONENT dev)

# pkg-config: kiln-plugin (headers) and kiln (the engine, static). Relocatable: the
# prefix is found from the .pc file's own folder.
file(RELATIVE_PATH KILN_PC_UP /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" KILN_PC_UP "${KILN_PC_UP}")
set(KILN_PC_BLAS_LIBS "")
foreach(lib IN LISTS BLAS_LIBRARIES)
  get_filename_component(name ${lib} NAME_WE)
  string(REGEX REPLACE "^lib" "-l" name ${name})
  list(APPEND KILN_PC_BLAS_LIBS ${name})
endforeach()
list(JOIN KILN_PC_BLAS_LIBS " " KILN_PC_BLAS_LIBS)
configure_file(packaging/deb/kiln-plugin.pc.in ${KILN_PACKAGE_OUT}/kiln-plugin.pc @ONLY)
configure_file(packaging/deb/kiln.pc.in ${KILN_PACKAGE_OUT}/kiln.pc @ONLY)
install(FILES ${KILN_PACKAGE_OUT}/kiln-plugin.pc ${KILN_PACKAGE_OUT}/kiln.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# --- CPack: one .deb per component ---------------------------------------------------
set(KILN_PACKAGE_CONTACT "Kiln maintainers <maintainers@users.noreply.a-seed-be4a1ca3.example>"
    CACHE STRING "Maintainer field of the Debian packages")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VENDOR "Kiln")
set(CPACK_PACKAGE_CONTACT "${KILN_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL kiln dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_KILN_PACKAGE_NAME kiln)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libkiln-dev)
set(CPACK_DEBIAN_KILN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_KILN_DESCRIPTION
  "Inference-engine builder for ONNX models, with a desktop studio
 Kiln turns an ONNX model into an optimized inference engine for an NVIDIA GPU
 (or its CPU reference backend) and shows every decision it made: fusions,
 per-layer precisions and why, timed tactics, time and memory per layer.
 This package holds the command line (kiln), the Qt desktop application
 (kiln-studio), their man pages, bash completion, a desktop entry and MIME types
 for .kiln plans and .onnx models.")
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "Kiln inference-engine builder: headers, CMake package and pkg-config
 Headers of Kiln's public API, the plugin ABI (kiln/plugin.h) for custom
 layers, and the engine as static libraries. find_package(Kiln) gives
 Kiln::plugin, Kiln::engine and Kiln::cuda; pkg-config gives kiln-plugin
 and kiln.")

# Dependencies come from the binaries (dpkg-shlibdeps), plus what they load at run
# time without linking it (the Qt platform plugins). A CUDA build links no CUDA library
# but cudart (static): cuBLASLt, cuDNN and NVRTC are loaded with dlopen when present
# (docs/packaging.md, "CUDA at run time"), so the package installs and runs on the CPU
# without them. They are recommended by name, as NVIDIA's CUDA repository calls its
# packages (KILN_DEB_CUDA_RECOMMENDS; empty: none).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(kiln_depends "")
if(TARGET kiln-studio)
  list(APPEND kiln_depends qt6-qpa-plugins)
endif()
if(KILN_HAVE_CUDA_TOOLKIT)
  set(kiln_cuda_suffix ${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR})
  set(KILN_DEB_CUDA_RECOMMENDS
    "libcublas-${kiln_cuda_suffix}, cuda-nvrtc-${kiln_cuda_suffix}, libcudnn9-cuda-${CUDAToolkit_VERSION_MAJOR}"
    CACHE STRING "Debian packages of the CUDA libraries kiln loads when present (cuBLASLt, NVRTC, cuDNN)")
  set(CPACK_DEBIAN_KILN_PACKAGE_RECOMMENDS "${KILN_DEB_CUDA_RECOMMENDS}")
endif()
list(JOIN kiln_depends ", " CPACK_DEBIAN_KILN_PACKAGE_DEPENDS)
set(CPACK_DEBIAN_KILN_PACKAGE_SUGGESTS "bash-completion")
# Kiln::plugin needs nothing; Kiln::engine needs these (KilnConfig.cmake says so when
# one is missing), Kiln::cuda also the CUDA toolkit (its static cudart).
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS
  "libprotobuf-dev, libonnx-dev, nlohmann-json3-dev, libssl-dev, libopenblas-dev, cmake, pkg-config")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "kiln")
include(CPack)
