#!/usr/bin/python3
"""SM takeover on an ibsim fabric (issue 17), next to OpenSM's on the same
net file (stdlib only).

  takeover_ibsim.py --bin BUILD/bin [--fabric SPEC] [--outdir DIR]
                    [--opensm-default]

The fabric (default fat-tree:levels=3,k=16) is written as an ibsim net
file by interop_netfile. Each run starts ibsim, a master SM on one
simulated CA and a standby on another, waits until both are settled,
kill -9's the master and measures until the standby is master of a
programmed, verified fabric:
  - subnetd pair at sm.poll_period x sm.poll_retries 500ms x 3 (the
    default) and 200ms x 2: time to the standby's SWEEP event after
    its "-> MASTER" (the heavy sweep discovers, keeps the LIDs, routes,
    verifies and programs), LIDs changed, LFT blocks it sent;
  - then a higher subnetd joins: the handover (its blocks sent);
  - OpenSM pair, both OpenSM 3.3, standby tuned to 1000 ms x 2 (and with
    --opensm-default at its defaults, 10 s x 4): kill -9 -> the standby's
    "SUBNET UP".
Prints a table and writes OUTDIR/result.json. Exit 77 when a tool is
missing.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
from ibsim_helpers import Ibsim, find_umad2sim, netfile as make_netfile, read_net  # noqa: E402
from interop_election import (OpenSm, Sm, blocks_sent, lid_changes, lids_of,  # noqa: E402
                              wait_master)
from interop_lib import Env, Failures, follow_events, subnetctl  # noqa: E402


class Args:
    pass


def subnetd_run(net, path, sizing, b, work, poll, retries, fails):
    cas = net.cas()
    sock = "snt%d%s" % (os.getpid(), poll)
    sockdir = tempfile.mkdtemp(prefix="subnetd-take-")
    ib = Ibsim(path, sizing, work, sock)
    env = Env(sock, find_umad2sim(), work)
    res = {"poll": "%s x %d" % (poll, retries)}
    a = s = h = None
    try:
        ib.start()
        a = Sm("master", cas[1], 10, b, env, work, sockdir, poll, retries)
        if not a.ready(300):
            fails.add("subnetd", "master not READY")
            return res
        s = Sm("standby", cas[-1], 5, b, env, work, sockdir, poll, retries)
        if not s.ready(300):
            fails.add("subnetd", "standby not READY")
            return res
        before = lids_of(a.dump)
        follow = follow_events(env, b, s.api, work, "standby-events-%s.log" % poll, "subnetd", fails)
        st, _ = subnetctl(env, b, s.api, ["status"])
        last = int((st or {}).get("last_event_id", "0"))
        at = len(s.log_text())
        t0 = time.time()
        a.kill()
        ev = wait_master(env, b, s, follow, last, 300)
        res["takeover_s"] = round(time.time() - t0, 2)
        if ev is None:
            fails.add("subnetd", "no takeover")
            return res
        after = lids_of(s.dump)
        res["lids"] = len(after)
        res["lids_changed"] = len(lid_changes(before, after))
        res["blocks_sent"] = blocks_sent(s.log_text(), at)
        # A higher SM joins: the clean handover.
        at = len(s.log_text())
        t0 = time.time()
        h = Sm("higher", cas[2], 12, b, env, work, sockdir, poll, retries)
        hf = None
        if h.ready(300):
            hf = follow_events(env, b, h.api, work, "higher-events-%s.log" % poll, "subnetd",
                               fails, from_start=True)
        if hf is not None and wait_master(env, b, h, hf, 0, 300) is not None:
            res["handover_s"] = round(time.time() - t0, 2)
            res["handover_lids_changed"] = len(lid_changes(after, lids_of(h.dump)))
            res["handover_blocks_sent"] = blocks_sent(h.log_text())
        if hf:
            hf.close()
        follow.close()
    finally:
        for x in (h, s, a):
            if x is not None:
                x.stop()
        ib.stop()
        shutil.rmtree(sockdir, ignore_errors=True)
    return res


def opensm_run(net, path, sizing, work, timeout_ms, retries, fails):
    cas = net.cas()
    sock = "sno%d%d" % (os.getpid(), timeout_ms)
    ib = Ibsim(path, sizing, work, sock)
    env = Env(sock, find_umad2sim(), work)
    res = {"poll": "%d ms x %d" % (timeout_ms, retries)}
    conf = ["sminfo_polling_timeout %d" % timeout_ms, "polling_retry_number %d" % retries]
    m = st = None
    try:
        ib.start()
        m = OpenSm("osm-master-%d" % timeout_ms, cas[1], 10, env, work, conf)
        if m.wait(r"SUBNET UP", 300) is None:
            fails.add("opensm", "master: no SUBNET UP")
            return res
        st = OpenSm("osm-standby-%d" % timeout_ms, cas[-1], 5, env, work, conf)
        if st.wait(r"[Ee]ntering STANDBY state", 300) is None:
            fails.add("opensm", "standby did not stand by")
            return res
        t0 = time.time()
        m.kill()
        if st.wait(r"SUBNET UP", 180) is None:
            fails.add("opensm", "standby OpenSM: no SUBNET UP within 180 s of the kill, see %s"
                      % st.child.log.name)
            return res
        res["takeover_s"] = round(time.time() - t0, 2)
    finally:
        for x in (st, m):
            if x is not None:
                x.stop()
        ib.stop()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fabric", default="fat-tree:levels=3,k=16")
    ap.add_argument("--outdir")
    ap.add_argument("--opensm-default", action="store_true")
    a = ap.parse_args()
    if not find_umad2sim() or not shutil.which("ibsim"):
        print("SKIP: ibsim or umad2sim missing")
        return 77
    binp = os.path.abspath(a.bin)
    b = Args()
    b.subnetd = os.path.join(binp, "subnetd")
    b.subnetctl = os.path.join(binp, "subnetctl")
    work = os.path.abspath(a.outdir or tempfile.mkdtemp(prefix="takeover-"))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    path, sizing, summary = make_netfile(os.path.join(binp, "interop_netfile"), a.fabric,
                                         os.path.join(work, "fabric.net"))
    net = read_net(path)
    print("%s: %s" % (a.fabric, summary), flush=True)
    fails = Failures()
    out = {"fabric": a.fabric, "summary": summary, "subnetd": [], "opensm": []}
    for poll, retries in (("500ms", 3), ("200ms", 2)):
        r = subnetd_run(net, path, sizing, b, work, poll, retries, fails)
        print("subnetd %s: %s" % (r["poll"], r), flush=True)
        out["subnetd"].append(r)
    opensm = shutil.which("opensm", path=os.environ.get("PATH", "") + ":/usr/sbin")
    if opensm:
        runs = [(1000, 2)] + ([(10000, 4)] if a.opensm_default else [])
        for ms, n in runs:
            r = opensm_run(net, path, sizing, work, ms, n, fails)
            print("opensm %s: %s" % (r["poll"], r), flush=True)
            out["opensm"].append(r)
    with open(os.path.join(work, "result.json"), "w") as f:
        json.dump(out, f, indent=1)
    for item in fails.items:
        print("FAILED " + item)
    return 1 if fails.items else 0


if __name__ == "__main__":
    sys.exit(main())
