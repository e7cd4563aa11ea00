# A wheel of the Python module an existing, built Kiln build folder holds
# (pyproject.toml with -Ccmake.define.KILN_WHEEL_FROM_BUILD=DIR): nothing is compiled;
# DIR/python/kiln/_kiln<SOABI>.so is installed (CMake component "python") where the
# wheel's package kiln is, and scikit-build-core adds python/kiln/__init__.py beside it.
# For the wheel test (tests/python/wheel_test.sh), where compiling the engine a second
# time would cost CI ten minutes; the module is the same target a build from source
# makes (python/CMakeLists.txt). Included by CMakeLists.txt, which then returns.
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
get_filename_component(kiln_wheel_build "${KILN_WHEEL_FROM_BUILD}" ABSOLUTE
                       BASE_DIR "${CMAKE_SOURCE_DIR}")
set(kiln_wheel_module "${kiln_wheel_build}/python/kiln/_kiln.${Python3_SOABI}.so")
if(NOT EXISTS "${kiln_wheel_module}")
  file(GLOB kiln_wheel_found "${kiln_wheel_build}/python/kiln/_kiln*.so")
  message(FATAL_ERROR "KILN_WHEEL_FROM_BUILD: no ${kiln_wheel_module} for Python "
                      "${Python3_VERSION} (${Python3_EXECUTABLE}); that folder has: "
                      "'${kiln_wheel_found}'. Build the target kiln_python there with this "
                      "Python, or build the wheel from source (without KILN_WHEEL_FROM_BUILD).")
endif()
message(STATUS "kiln: the wheel takes ${kiln_wheel_module}")
add_custom_target(kiln_python)  # pyproject.toml's build target: nothing left to build
install(FILES "${kiln_wheel_module}" DESTINATION kiln COMPONENT python
        PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                    WORLD_READ WORLD_EXECUTE)
# The build tree's RUNPATH (a CUDA build's library folders) is not the installed
# module's, as for the packages (docs/packaging.md).
install(CODE "file(RPATH_REMOVE FILE \"\${CMAKE_INSTALL_PREFIX}/kiln/_kiln.${Python3_SOABI}.so\")"
        COMPONENT python)
