# The two commands of the README: `make run` and `make test`. Both install what is
# missing (system packages, the Python test tooling in .venv), then build.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
VENV := .venv
NODE_TESTS_NEW := $(BUILD_DIR)/onnx-node-tests
EXAMPLE_MODEL := resources/models/silero_vad/model.onnx

.PHONY: all deps venv configure build run test package clean

all: build

deps:
	@bash packaging/install-deps.sh

$(VENV)/bin/python:
	python3 -m venv $(VENV)

# scikit-build-core (the wheel test, tests/python/wheel_test.sh) apart: where PyPI cannot
# be reached, the rest still installs and that test says it skipped.
venv: $(VENV)/bin/python
	@$(VENV)/bin/python -c "import onnx, numpy, pytest, onnxruntime" 2>/dev/null || \
	  $(VENV)/bin/pip install --quiet --disable-pip-version-check -r packaging/requirements-test.txt
	@$(VENV)/bin/python -c "import scikit_build_core" 2>/dev/null || \
	  $(VENV)/bin/pip install --quiet --disable-pip-version-check -r packaging/requirements-wheel.txt || \
	  echo "warning: scikit-build-core could not be installed into $(VENV): the wheel test (python_wheel) will skip"

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	@bash packaging/run-example.sh $(BUILD_DIR)

test: build venv
	@$(VENV)/bin/python tests/conformance/generate_node_tests.py $(NODE_TESTS_NEW)
	@# The tests' temporary files go to one folder, removed after the run (nothing left in /tmp).
	@tmp=$$(mktemp -d /tmp/kiln-test.XXXXXX) && cd $(BUILD_DIR) && \
	  TMPDIR=$$tmp ctest --output-on-failure -j 2; rc=$$?; rm -rf $$tmp; exit $$rc

# The Debian packages kiln and libkiln-dev (docs/packaging.md), into $(BUILD_DIR)/packages.
package: build
	@cd $(BUILD_DIR) && cpack --config CPackConfig.cmake
	@ls -l $(BUILD_DIR)/packages/*.deb

clean:
	rm -rf $(BUILD_DIR)
