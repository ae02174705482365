#!/usr/bin/env python3
"""subnetd's fast path on ibsim, side by side with OpenSM (stdlib only).

  reroute_ibsim.py NETFILE ENGINE CYCLES --bin BUILD/bin [--link NAME --port P]
                   [--opensm OSM_ENGINE]

Starts ibsim on NETFILE (an ibnetdiscover net file, or a generator spec that
interop_netfile writes as one; own socket name, console on a pipe we hold),
then the long-running daemon `subnetd --config F` (umad transport under umad2sim,
engine ENGINE, no periodic sweeps), waits for its first "subnet up", and
CYCLES times: `Unlink "NAME"[P]` through the ibsim console, waits for the
daemon's "reroute:" log line and reads its own figures (trap received -> last
changed LFT block handed to umad, the repair alone), waits out the
re-balancing sweep, `ReLink`s and waits for the heavy sweep that link-up
causes. The default link is ibsim_helpers.pick_link's (agg-p8-0 port 5 on
fat-tree:levels=3,k=16), the cable tests/opensm/opensm_runner.py pulls by
default too. Prints each cycle and the medians.

--opensm OSM_ENGINE then runs OpenSM (-R OSM_ENGINE) through
tests/opensm/opensm_runner.py on the same net file and cable for the same
number of cycles, and prints its recovery (Unlink -> the last "SUBNET UP" it
causes) next to ours.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

# tests/ibsim_helpers.py, found from this file's place whatever the working
# directory; the OpenSM runner beside it.
TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, TESTS)
from ibsim_helpers import (Ibsim, netfile as make_netfile, pick_link, preload_env,  # noqa: E402
                           read_net, track, write_subnetd_config)

RUNNER = os.path.join(TESTS, "opensm", "opensm_runner.py")


def opensm(args, netfile, work):
    """OpenSM's recovery on the same file and cable: the runner's result."""
    out = os.path.join(work, "opensm-" + args.opensm)
    p = subprocess.run([sys.executable, RUNNER, netfile, "-R", args.opensm, "--outdir", out,
                        "--cycles", str(args.cycles), "--unlink", '"%s"[%d]' % (args.link, args.port),
                        "--netfile-tool", os.path.join(args.bin, "interop_netfile")],
                       capture_output=True, text=True)
    print((p.stdout + p.stderr).strip())
    if p.returncode != 0 or not os.path.exists(os.path.join(out, "result.json")):
        return 1
    with open(os.path.join(out, "result.json")) as f:
        r = json.load(f)
    unl = [e for e in r["events"] if e["cmd"].startswith("Unlink") and "last_up_s" in e]
    if not unl:
        return 0
    print("OpenSM %s: Unlink %s[%d] -> reprogrammed (last SUBNET UP) median %.1f ms over %d "
          "(%s), trap forced the sweep in %d" % (
              args.opensm, args.link, args.port, r["recovery_s"] * 1000, len(unl),
              ", ".join("%.0f" % (e["last_up_s"] * 1000) for e in unl),
              sum(e.get("trap_forced_sweep", False) for e in unl)))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("netfile")
    ap.add_argument("engine")
    ap.add_argument("cycles", type=int)
    ap.add_argument("--bin", required=True, help="build dir with subnetd and interop_netfile")
    ap.add_argument("--link", help="switch whose port to Unlink (default: pick_link's)")
    ap.add_argument("--port", type=int)
    ap.add_argument("--opensm", metavar="OSM_ENGINE", help="also measure OpenSM -R OSM_ENGINE")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="reroute-ibsim-")
    netfile, sizing, _ = make_netfile(os.path.join(args.bin, "interop_netfile"), args.netfile,
                                      os.path.join(work, "fabric.net"))
    if (args.link is None) != (args.port is None):
        ap.error("give both --link and --port, or neither")
    if args.link is None:
        picked = pick_link(read_net(netfile))
        if picked is None:
            print("no switch-to-switch link in %s" % netfile)
            return 2
        args.link, args.port = picked[:2]
    sock = "rri%d" % os.getpid()
    ib = Ibsim(netfile, sizing, work, sock)
    ib.start()
    cfg = os.path.join(work, "subnetd.yaml")
    write_subnetd_config(cfg, args.engine, os.path.join(work, "subnetd.db"),
                         os.path.join(work, "api.sock"), threads=2, log_level=os.environ.get("SUBNETD_LOG", "info"))
    logf = os.path.join(work, "daemon.log")
    d = track(subprocess.Popen([os.path.join(args.bin, "subnetd"), "--config", cfg],
                               env=preload_env(sock), stdout=open(logf, "w"),
                               stderr=subprocess.STDOUT))

    def lines():
        with open(logf) as f:
            return f.read().splitlines()

    def count(what):
        return sum(what in l for l in lines())

    def wait(pred, timeout):
        end = time.time() + timeout
        while time.time() < end:
            if pred():
                return True
            time.sleep(0.005)
        return False

    status = 0
    try:
        t0 = time.time()
        if not wait(lambda: count("subnet up") > 0, 120):
            print("no subnet up within 120 s, see", logf)
            return 1
        print("subnetd %s on %s: subnet up after %.2f s" % (args.engine, args.netfile,
                                                             time.time() - t0))
        got = []
        for _ in range(args.cycles):
            n_rr, n_up = count("reroute:"), count("subnet up")
            t = time.time()
            ib.console('Unlink "%s"[%d]' % (args.link, args.port))
            wait(lambda: count("reroute:") > n_rr or count("subnet up") > n_up, 30)
            took = time.time() - t
            rr = [l for l in lines() if "reroute:" in l]
            if len(rr) > n_rr:
                m = re.search(r"rewritten in (\d+) us \(probes (\d+) us for \d+ SMPs, repair (\d+) us",
                              rr[-1])
                if m is None:
                    print("  unexpected reroute log line:", rr[-1])
                    status = 1
                    continue
                got.append((int(m.group(1)) / 1000.0, int(m.group(3)) / 1000.0, took * 1000.0,
                            int(m.group(2)) / 1000.0))
                print("  Unlink %s[%d]: %s; console command -> log line %.1f ms"
                      % (args.link, args.port, rr[-1].split("reroute: ")[1], took * 1000.0))
            else:
                print("  Unlink %s[%d]: no reroute (a heavy sweep instead)" % (args.link, args.port))
                status = 1
            time.sleep(2.5)  # the re-balancing sweep comes 2 s after a reroute
            n_up = count("subnet up")
            ib.console('ReLink "%s"[%d]' % (args.link, args.port))
            if not wait(lambda: count("subnet up") > n_up, 30):
                print("  ReLink: no heavy sweep within 30 s")
                status = 1
            time.sleep(0.5)
        if got:
            med = lambda xs: sorted(xs)[len(xs) // 2]
            print("median over %d: trap -> last block handed to umad %.2f ms (probes %.2f ms, "
                  "repair %.2f ms), Unlink command -> log line %.1f ms"
                  % (len(got), med([g[0] for g in got]), med([g[3] for g in got]),
                     med([g[1] for g in got]), med([g[2] for g in got])))
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(timeout=10)
        ib.stop()
        print("log:", logf)
    if args.opensm:
        status = opensm(args, netfile, work) or status
    return status


if __name__ == "__main__":
    sys.exit(main())
