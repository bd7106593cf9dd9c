# The two commands a newcomer needs (see README.md):
#   make demo   install what is missing, build, run the demo job
#   make test   install what is missing, build, run every test
# PRESET picks the CMake preset (cpu, cuda, debug, asan, tsan); JOBS the build parallelism; WERROR=ON
# makes warnings in our code errors (CI sets it; it applies when a build folder is first configured).
PRESET ?= cpu
WERROR ?= OFF
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD_DIR := build/$(PRESET)
DPTRAIN := $(BUILD_DIR)/app/dptrain

.PHONY: all deps configure build demo test test-asan test-tsan build-cuda format format-check tidy clean

all: build

deps:
	@bash scripts/install-deps.sh

# Configure once; later builds are incremental (CMake re-runs itself when CMakeLists change).
$(BUILD_DIR)/CMakeCache.txt:
	cmake --preset $(PRESET) -DDPTRAIN_WERROR=$(WERROR)

configure: deps $(BUILD_DIR)/CMakeCache.txt

build: configure
	cmake --build --preset $(PRESET) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(DPTRAIN)

test: build
	@bash scripts/install-deps.sh --test
	ctest --preset $(PRESET) -j $(JOBS)

# The sanitizer build and its unit tests (part of CI): only the unit-test targets are built, which
# saves most of the (slow) instrumented build.
test-asan:
	@$(MAKE) --no-print-directory configure PRESET=asan
	cmake --build --preset asan -j $(JOBS) --target unit_tests
	ctest --preset asan -j $(JOBS)

# ThreadSanitizer over the threaded code (part of CI): the gradient reducer's communication thread
# with ranks as threads, the loader's workers, the crash reporter; only those unit tests are built.
test-tsan:
	@$(MAKE) --no-print-directory configure PRESET=tsan
	cmake --build --preset tsan -j $(JOBS) --target unit_distributed unit_data_loading unit_core
	ctest --preset tsan -j $(JOBS)

# Compile the CUDA backend (no GPU needed to compile; the GPU tests skip themselves without one).
build-cuda:
	@$(MAKE) --no-print-directory build PRESET=cuda

# Sources in the repository's style (.clang-format); the test style_format runs the check.
format:
	@bash scripts/format.sh

format-check:
	@bash scripts/format.sh --check

tidy: configure
	@bash scripts/tidy.sh $(BUILD_DIR)

clean:
	rm -rf build
