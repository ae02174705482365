#!/usr/bin/env bash
# Installs what is needed, builds (release preset) and runs subnetd on the
# embedded simulated fabric with deploy/subnetd.yaml.
# Usage: deploy/run.sh [extra subnetd args, e.g. --once]
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
cmake --preset release
cmake --build --preset release --target subnetd subnetctl
mkdir -p run
exec build/release/bin/subnetd --config deploy/subnetd.yaml "$@"
