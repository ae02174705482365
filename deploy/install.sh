#!/usr/bin/env bash
# Installs a built subnetd as a systemd service (run as root after building
# with `cmake --preset release && cmake --build --preset release`).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
install -m 0755 "$build/bin/subnetd" /usr/local/bin/subnetd
install -m 0755 "$build/bin/subnetctl" /usr/local/bin/subnetctl
install -D -m 0644 README.md /usr/local/share/doc/subnetd/README.md
install -m 0644 deploy/subnetd.service /etc/systemd/system/subnetd.service
install -m 0644 deploy/subnetd.sysusers /usr/lib/sysusers.d/subnetd.conf
getent group rdma >/dev/null || groupadd --system rdma
systemd-sysusers /usr/lib/sysusers.d/subnetd.conf
install -d -m 0755 /etc/subnetd
[ -f /etc/subnetd/subnetd.yaml ] || install -m 0640 -g subnetd deploy/subnetd-system.yaml /etc/subnetd/subnetd.yaml
systemctl daemon-reload
echo "installed; start with: systemctl enable --now subnetd"
