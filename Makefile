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

# Runs every executable file under bench/ (scripts) and every binary with
# "bench" in its name that the build put in $(BUILD_DIR)/bin, in name order.
# Those with "gpu" in their name run only where nvidia-smi lists a GPU.
bench: build
	@found=0; status=0; \
	for b in $$(find bench -type f -perm -u+x 2>/dev/null | sort) \
	         $$(find $(BUILD_DIR)/bin -maxdepth 1 -type f -perm -u+x \
	              -name '*bench*' 2>/dev/null | sort); do \
	  case $$b in /*) ;; *) b=./$$b ;; esac; \
	  case $${b##*/} in *gpu*) nvidia-smi -L >/dev/null 2>&1 \
	    || { echo "==> $$b: skipped (no GPU)"; continue; } ;; esac; \
	  found=1; echo "==> $$b"; "$$b" || { status=1; echo "FAILED: $$b"; }; \
	done; \
	[ $$found = 1 ] || echo "bench: no benchmarks yet (bench/ scripts or $(BUILD_DIR)/bin/*bench*)"; \
	exit $$status

fmt:
	@command -v clang-format >/dev/null || { echo "fmt: clang-format not found (apt-get install clang-format)"; exit 1; }
	@git ls-files -z '*.cc' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs -0 -r clang-format -i

down:
	@scripts/cluster down

clean:
	@rm -rf $(BUILD_DIR)
