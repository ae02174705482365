#!/usr/bin/python3
"""subnetd's counter sweeps on an ibsim fabric, for the figure next to
OpenSM's perfmgr (tests/opensm/opensm_runner.py --perfmgr S) on the same
net file (stdlib only).

  perfmgr_ibsim.py --bin BUILD/bin [--fabric SPEC] [--interval S] [--sweeps N]
                   [--outdir DIR]

The fabric (default fat-tree:levels=3,k=16) is written as an ibsim net file
by interop_netfile, as the OpenSM runner does. subnetd runs as a daemon
under umad2sim (ftree, debug log, perfmgr.interval S) and the script reads
its log as it comes: the "counters: N ports read ... in X ms" line of each
counter sweep (reading every port's PortCounters and, where the PMA has
them, PortCountersExtended; the first sweep reads each node's ClassPortInfo
first). Prints and writes OUTDIR/result.json with the first N sweeps.
Exit 77 when ibsim or umad2sim is missing.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ibsim_helpers import (Ibsim, client_cwd, find_umad2sim, preload_env, track,  # noqa: E402
                           write_subnetd_config)

SWEEP = re.compile(r"counters: (\d+) ports read, (\d+) failed, \d+ with new errors in ([\d.]+) ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the build's bin directory")
    ap.add_argument("--fabric", default="fat-tree:levels=3,k=16")
    ap.add_argument("--interval", type=int, default=10, help="perfmgr.interval in s")
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--outdir", help="default: a new /tmp/perfmgr-ibsim-*")
    a = ap.parse_args()
    a.bin = os.path.abspath(a.bin)
    if find_umad2sim() is None or subprocess.run(["which", "ibsim"], capture_output=True).returncode:
        print("ibsim or libumad2sim0 is not installed")
        return 77
    out = a.outdir or tempfile.mkdtemp(prefix="perfmgr-ibsim-")
    os.makedirs(out, exist_ok=True)
    netfile = os.path.join(out, "fabric.net")
    subprocess.run([os.path.join(a.bin, "interop_netfile"), a.fabric, netfile], check=True)
    told = subprocess.run([os.path.join(a.bin, "interop_netfile"), "--sizing", netfile],
                          check=True, capture_output=True, text=True).stdout
    sizing = next(line.split() for line in told.splitlines() if line.startswith("-"))
    sock = "pmi%d" % os.getpid()
    ib = Ibsim(netfile, sizing, out, sock)
    ib.start(timeout=300)
    sockdir = tempfile.mkdtemp(prefix="pmi-")
    cfg = os.path.join(out, "subnetd.yaml")
    write_subnetd_config(cfg, "ftree", os.path.join(out, "subnetd.db"),
                         os.path.join(sockdir, "api.sock"), log_level="debug",
                         perfmgr_interval="%ds" % a.interval)
    proc = track(subprocess.Popen([os.path.join(a.bin, "subnetd"), "--config", cfg],
                                  env=preload_env(sock), cwd=client_cwd(out),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    # A bound on the whole run, not a wait: the loop below ends on the lines.
    limit = threading.Timer(600 + a.sweeps * a.interval, proc.kill)
    limit.start()
    sweeps = []
    with open(os.path.join(out, "subnetd.log"), "w") as log:
        for line in proc.stdout:
            log.write(line)
            m = SWEEP.search(line)
            if m:
                sweeps.append({"ports": int(m.group(1)), "failed": int(m.group(2)),
                               "sweep_s": float(m.group(3)) / 1000})
                if len(sweeps) == a.sweeps:
                    break
    limit.cancel()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    ib.stop()
    res = {"fabric": a.fabric, "interval_s": a.interval, "sweeps": sweeps}
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(res, f, indent=1)
    for i, s in enumerate(sweeps):
        print("counter sweep %d: %d ports, %d unanswered, %.3f s" % (i + 1, s["ports"], s["failed"],
                                                                     s["sweep_s"]))
    print("result: %s" % os.path.join(out, "result.json"))
    return 0 if len(sweeps) == a.sweeps else 1


if __name__ == "__main__":
    sys.exit(main())
