# Thin wrapper over scripts/ and CMake; see README.md. Works with `make -s`.
#   make deps    install missing Debian packages (scripts/install-deps)
#   make build   configure (once) and build into build/ (Ninja, RelWithDebInfo)
#   make test    deps + build + every test (ctest)
#   make demo    deps + build + a training job on a private local cluster
#   make bench   deps + build + every benchmark in bench/
#   make fuzz    the libFuzzer targets, 60 s each (clang build in $(BUILD_DIR)-fuzz)
#   make fmt     clang-format the tracked C++ files
#   make down    stop the local stack (scripts/cluster down)
#   make clean   delete build/
.PHONY: all deps configure build test demo bench fuzz fmt down clean

BUILD_DIR  ?= build
BUILD_TYPE ?= RelWithDebInfo
CMAKE_ARGS ?=
# Per-test ceiling; tests set their own (smaller) TIMEOUT property.
TEST_TIMEOUT ?= 1200
CTEST_ARGS ?=

export TUPA_BIN_DIR    := $(abspath $(BUILD_DIR))/bin
export TUPA_BUILD_DIR  := $(abspath $(BUILD_DIR))
export TUPA_SOURCE_DIR := $(CURDIR)

all: build

deps:
	@scripts/install-deps

# Configure only once: later builds are incremental (Ninja re-runs CMake
# when a CMakeLists.txt changes). CUDA is decided by CMakeLists.txt.
$(BUILD_DIR)/build.ninja:
	@echo "==> configuring $(BUILD_DIR)/ ($(BUILD_TYPE))"
	@mkdir -p $(BUILD_DIR)
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) >$(BUILD_DIR)/configure.log 2>&1 \
	  || { cat $(BUILD_DIR)/configure.log; rm -f $(BUILD_DIR)/build.ninja; exit 1; }

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	@echo "==> building $(BUILD_DIR)/"
	@cmake --build $(BUILD_DIR)

test: build
	@echo "==> testing"
	@ctest --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error \
	  -j2 --timeout $(TEST_TIMEOUT) $(CTEST_ARGS)

demo: build
	@scripts/demo

fuzz: deps
	@tests/fuzz_smoke.sh --seconds 60 --build-dir $(abspath $(BUILD_DIR))-fuzz

# The benchmarks of BENCHMARKS.md, each printing JSON lines (see
# bench/README.md); the GPU script runs only where nvidia-smi lists a GPU.
bench: build
	@status=0; \
	run() { echo "==> $$*"; "$$@" || { status=1; echo "FAILED: $$*"; }; }; \
	run /usr/bin/python3 bench/trainer_cpu.py; \
	run bench/submit.sh; \
	run $(BUILD_DIR)/bin/tupa-bench-placement; \
	run bench/fleet.sh --reader --workers 1000 --jobs 20000 --runtime-ms 2000-5000 --mix openb; \
	run bench/fleet.sh --reader --workers 1000 --jobs 20000 --runtime-ms 2000-5000 --mix openb --clients 128; \
	run /usr/bin/python3 bench/pg_write_path.py --runs 1; \
	run bench/fleet.sh --reader --restart-check --workers 1000 --jobs 100000 --mix 8 \
	  --runtime-ms 3600000 --submitted-only --hold-s 60 --duration-limit-s 300; \
	run bench/fleet.sh --real-workers 20 --jobs 2000 --runtime-ms 0; \
	if nvidia-smi -L >/dev/null 2>&1; then run bench/gpu_check.sh; \
	else echo "==> bench/gpu_check.sh: skipped (no GPU)"; fi; \
	exit $$status

fmt:
	@command -v clang-format >/dev/null || { echo "fmt: clang-format not found (apt-get install clang-format)"; exit 1; }
	@git ls-files -z '*.cc' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs -0 -r clang-format -i

down:
	@scripts/cluster down

clean:
	@rm -rf $(BUILD_DIR)
