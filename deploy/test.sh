#!/usr/bin/env bash
# Installs what is needed, builds (release preset) and runs every test.
# Usage: deploy/test.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
cmake --preset release
cmake --build --preset release
ctest --preset release "$@"
