#!/bin/sh
# Bring-up "before" issue 13: builds the blocking SM core of commit 6cb5d95
# (BringUp::run over SmpPipeline) in a temporary git worktree, with
# bringup_before_bench.cpp from this directory, and runs it with the
# arguments given, for comparison with `sm_core_bench parts=bringup`.
#
#   tests/bench/before/run.sh [SPEC] [lid_bits=24] [window=64] [threads=2] [repeat=1]
#
# Needs only this clone (its history) and the packages deploy/setup.sh
# installs. The worktree and its build stay in build/before-6cb5d95 (delete
# it with `git worktree remove --force build/before-6cb5d95`); a second run
# reuses them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
commit=6cb5d95
wt="$root/build/before-$commit"
if [ ! -d "$wt" ]; then
  git -C "$root" worktree add --detach "$wt" "$commit" >&2
fi
cp "$here/bringup_before_bench.cpp" "$wt/tests/bench/bringup_before_bench.cpp"
if [ ! -f "$wt/build/CMakeCache.txt" ]; then
  launcher=""
  command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  cmake -S "$wt" -B "$wt/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSUBNETD_BUILD_BENCH=ON $launcher >&2
fi
cmake --build "$wt/build" -j2 --target bringup_before_bench >&2
exec "$wt/build/bin/bringup_before_bench" "$@"
