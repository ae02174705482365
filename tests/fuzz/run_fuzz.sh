#!/usr/bin/env bash
# Builds the SMP decoder fuzzer with clang (libFuzzer + ASan + UBSan) and runs
# it for N seconds (default 60).
#
#   tests/fuzz/run_fuzz.sh [seconds] [extra libFuzzer flags...]
#
# Seeds come from tests/fuzz/corpus/ (committed, read-only here); inputs that
# grow coverage go to $FUZZ_OUT/corpus (default build/fuzz/corpus), crash
# artifacts to $FUZZ_OUT/. A crash input copied into tests/fuzz/corpus/ under a
# name saying what it broke (crash-* is git-ignored) becomes a regression test
# (mad_fuzz_regression_test).
set -euo pipefail

seconds="${1:-60}"
shift || true
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${FUZZ_OUT:-$root/build/fuzz}"
cxx="${CXX_FUZZ:-clang++}"
mkdir -p "$out/corpus"

"$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Wall -Wextra -Werror \
  -I"$root" \
  "$root/tests/fuzz/smp_decode_fuzz.cpp" "$root/routing/result.cpp" "$root/discovery/mad/smp.cpp" \
  -lfmt -o "$out/smp_decode_fuzz"

# One job on purpose: the build machine is shared.
exec "$out/smp_decode_fuzz" -max_total_time="$seconds" -max_len=512 -print_final_stats=1 \
  -artifact_prefix="$out/" "$@" "$out/corpus" "$root/tests/fuzz/corpus"
