#!/usr/bin/env bash
# Installs every Debian 12 package subnetd needs to build, run and test.
# Idempotent: packages already present are left alone.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev git
  # libraries
  libboost-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libsqlite3-dev sqlite3 libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev
  libsystemd-dev libibumad-dev libibmad-dev prometheus-cpp-dev
  # tests
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-grpcio python3-protobuf openssl
  python3-prometheus-client
  ibsim-utils libumad2sim0 infiniband-diags ibutils opensm systemd procps
  # the Python client, installed as a user would (clients/python/README.md)
  python3-pip python3-setuptools python3-wheel python3-venv
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
