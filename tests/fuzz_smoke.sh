#!/usr/bin/env bash
# Builds the libFuzzer targets in a separate clang build and runs each for
# a while on its corpus (fuzz/corpus/<target>/, seeds plus every input that
# once crashed: regressions). New inputs go to a scratch directory, not the
# corpus; a crash leaves its input in <fuzz build>/artifacts/ and fails.
#
#   tests/fuzz_smoke.sh [--seconds N] [--build-dir DIR]
#
# Default: 10 s per target (make test); make fuzz runs 60 s. The build dir
# defaults to $TUPA_BUILD_DIR-fuzz (or build-fuzz). Exits 77 (skipped) when
# clang++ cannot link -fsanitize=fuzzer.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=10
build=${TUPA_BUILD_DIR:-$ROOT/build}-fuzz
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "fuzz_smoke: unknown argument $1" >&2; exit 2 ;;
  esac
done
TARGETS=(fuzz_job_spec fuzz_requests)

cxx=${TUPA_FUZZ_CXX:-clang++}
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cc"
if ! "$cxx" -fsanitize=fuzzer,address "$probe/p.cc" -o "$probe/p" 2>"$probe/err"; then
  echo "fuzz_smoke: SKIPPED: $cxx cannot link -fsanitize=fuzzer ($(head -n1 "$probe/err"))" >&2
  exit 77
fi

if [[ ! -f $build/build.ninja ]]; then
  echo "==> configuring $build (clang, libFuzzer + ASan/UBSan)"
  cmake -S "$ROOT" -B "$build" -G Ninja -DTUPA_FUZZ=ON -DTUPA_WITH_CUDA=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER="$cxx" >"$probe/configure.log" 2>&1 \
    || { cat "$probe/configure.log" >&2; rm -f "$build/build.ninja"; exit 1; }
fi
cmake --build "$build" --target "${TARGETS[@]}"

mkdir -p "$build/artifacts"
status=0
for t in "${TARGETS[@]}"; do
  scratch=$(mktemp -d "$probe/$t.XXXX")
  echo "==> $t: ${seconds}s on fuzz/corpus/$t"
  if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$build/bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
      "$scratch" "$ROOT/fuzz/corpus/$t" >"$build/$t.log" 2>&1; then
    tail -n 60 "$build/$t.log" >&2
    echo "FAILED: $t (input in $build/artifacts/; add it to fuzz/corpus/$t/)" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$build/$t.log" | tail -n 2
  fi
done
exit $status
