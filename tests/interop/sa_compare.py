#!/usr/bin/python3
"""saquery against OpenSM and against subnetd on the same ibsim net file,
compared field by field (stdlib only).

  sa_compare.py FABRIC --subnetd BIN --netfile-tool BIN --workdir DIR
                [--nodes N] [--pairs N] [--seed S]

FABRIC is an ibsim net file or a generator spec (written as one by
interop_netfile). Each SM runs in turn on a fresh ibsim of the same file
(OpenSM with -R updn, then subnetd's daemon over umad with updn); in each
run `ibnetdiscover -p` gives the LID of every CA port and switch, and then
  saquery -c                      ClassPortInfo
  saquery NR <lid>                N sampled CA ports and switches
  saquery LR <lid>/<port>         each sampled CA port's cable
  saquery PIR <lid>/<port>        each sampled CA port's PortInfoRecord
  saquery -p --src-to-dst A:B     N sampled pairs of CA ports
  saquery SWIR <lid>              each sampled switch's SwitchInfoRecord
  saquery GIR <lid>/0             each sampled CA port's GUIDInfo block 0
  saquery SL2VL <lid>//<port>     each sampled CA port's SL-to-VL table
  saquery VLAR <lid>/<port>/1     each sampled CA port's low-priority VLArb block
  saquery -p --dgid <IPoIB MGID>  the requester's path to the broadcast group
  saquery SMIR                    the SM's SMInfoRecord
  saquery --smkey 1 PKTR <lid>/<port>/0  each sampled CA port's P_Key table block 0
  saquery MCMR --mgid <IPoIB MGID>  the broadcast group's member, after one
                                  CA (the file's last) joined it with mcast_join
ask one record each (umad2sim has no RMPP). The records are matched by GUID
(each SM assigns its own LIDs) and every field is compared.

What differs by design is listed, not failed (BY_DESIGN below, with the
reason); any other difference fails the run (exit 1). Exit 77 when a
program is missing.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "opensm"))
from ibsim_helpers import (Ibsim, client_cwd, find_umad2sim, ibsim_sizing,  # noqa: E402
                           netfile as make_netfile, preload_env, read_net, write_subnetd_config)
from proc_helpers import NotifySocket, stop  # noqa: E402
import opensm_runner  # noqa: E402
from interop_lib import parse_sa_dump  # noqa: E402

IPOIB_MGID = "ff12:401b:ffff::ffff:ffff"

# (query kind, field) -> why the two SMs may answer differently.
BY_DESIGN = {
    ("NR", "lid"): "each SM assigns its own LIDs (records are matched by GUID)",
    ("PR", "dlid"): "each SM assigns its own LIDs",
    ("PR", "slid"): "each SM assigns its own LIDs",
    ("LR", "FromLID"): "each SM assigns its own LIDs",
    ("LR", "ToLID"): "each SM assigns its own LIDs (compared as the GUID behind it)",
    ("PIR", "EndPortLid"): "each SM assigns its own LIDs (records are matched by GUID)",
    ("PIR", "Lid"): "each SM assigns its own LIDs",
    ("PIR", "SMLid"): "each SM's own LID",
    ("PIR", "OperVLs"): "subnetd runs one data VL (its SL2VL tables put every SL on VL0, its "
                        "VLArb tables give VL0 the link) until VL-layered routing needs more: "
                        "each VL costs buffer space while every path is on SL 0; OpenSM enables "
                        "every VL the ports have",
    ("SL2VL", "LID"): "each SM assigns its own LIDs (records are matched by GUID)",
    ("VLAR", "LID"): "each SM assigns its own LIDs (records are matched by GUID; OpenSM "
                     "without QoS answers the all-zero tables ibsim holds, subnetd the VL0 "
                     "entry it wrote: saquery prints the entries in a form not compared here)",
    ("CPI", "Capability mask"): "each SA claims what it serves: subnetd UD multicast; OpenSM "
                                "multipath and PortInfo CapabilityMask matching too",
    ("CPI", "Capability mask 2"): "as above: subnetd MulticastFDBTop; OpenSM QoS, extended "
                                  "speeds and more",
    ("MPR", "sgid"): "subnetd fills in the source of a path to a multicast group (the "
                     "requester's port); OpenSM leaves what the query had (none)",
    ("MPR", "slid"): "as above: subnetd gives the requester's LID, OpenSM the query's 0",
    ("SWIR", "LID"): "each SM assigns its own LIDs (records are matched by GUID)",
    ("SWIR", "MulticastFDBTop"): "subnetd writes it on every switch (here 0xBFFF: no group has "
                                 "members yet) and answers what it wrote; OpenSM writes it only "
                                 "where the switch claims support (ibsim's do not) and answers "
                                 "the 0 it read",
    ("GIR", "LID"): "each SM assigns its own LIDs (records are matched by GUID)",
    ("PKTR", "LID"): "each SM assigns its own LIDs (records are matched by GUID)",
    ("SMIR", "LID"): "each SM's own LID",
    ("SMIR", "ActCount"): "each SM counts its own activity (OpenSM: SMPs sent; subnetd: snapshots "
                          "published)",
    ("SMIR", "Priority"): "OpenSM's default priority is 0; subnetd answers 15 until SM priority "
                          "is configurable (issue 17)",
}


class Client:
    def __init__(self, sock, scratch):
        self.env = preload_env(sock)
        self.scratch = scratch

    def run(self, args, timeout=60, extra_env=None):
        cwd = client_cwd(self.scratch)
        try:
            p = subprocess.run(args, env=dict(self.env, **(extra_env or {})), cwd=cwd,
                               capture_output=True, text=True, timeout=timeout)
            # Every query and its answer, for whoever reads a failure.
            with open(os.path.join(self.scratch, "queries.log"), "a") as log:
                log.write("$ %s (rc %d)\n%s%s\n" % (" ".join(args), p.returncode, p.stdout,
                                                     p.stderr))
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            return 124, "", "timed out"
        finally:
            shutil.rmtree(cwd, ignore_errors=True)


def lid_map(cl):
    """ibnetdiscover -p: {port GUID or switch GUID: LID}, {CA port GUID: (LID, port)}."""
    rc, out, err = cl.run(["ibnetdiscover", "-p"])
    if rc != 0:
        raise RuntimeError("ibnetdiscover -p: rc %d %s" % (rc, err.strip()[-200:]))
    lids, ca = {}, {}
    for line in out.splitlines():
        f = line.split()
        # "CA    12 1 0x0002c90100000009 4x QDR - SW 2 3 0x..."
        if len(f) > 3 and f[0] in ("CA", "SW"):
            guid, lid, port = int(f[3], 16), int(f[1]), int(f[2])
            if lid:
                lids[guid] = lid
            if f[0] == "CA":
                ca[guid] = (lid, port)
    return lids, ca


def query_all(cl, samples, args):
    """The suite of one run, keyed by GUIDs: {key: record dict}. The first
    run picks the samples (ibsim gives both runs the same GUIDs)."""
    lids, ca = lid_map(cl)
    guid_of_lid = {v: k for k, v in lids.items()}
    if not samples:
        rng = random.Random(args.seed)
        ports = sorted(g for g in ca if lids.get(g))
        switches = sorted(g for g in lids if g not in ca)
        samples["ports"] = rng.sample(ports, min(args.nodes, len(ports)))
        samples["switches"] = rng.sample(switches, min(max(1, args.nodes // 4), len(switches)))
        pairs = [(a, b) for a in ports for b in ports if a != b]
        samples["pairs"] = rng.sample(pairs, min(args.pairs, len(pairs)))
    sample_ports, sample_sw, pairs = samples["ports"], samples["switches"], samples["pairs"]
    res = {}

    def one(*query):
        """saquery's single record for `query`, or {"error": ...}."""
        rc, out, err = cl.run(["saquery"] + list(query))
        recs = parse_sa_dump(out)
        if rc == 0 and len(recs) == 1:
            return recs[0]
        return {"error": "rc %d, %d records %s" % (rc, len(recs), err[-200:])}

    res[("CPI",)] = one("-c")
    for g in sample_ports + sample_sw:
        lid = lids.get(g)
        res[("NR", g)] = one("NR", str(lid)) if lid is not None else {"error": "no LID"}
    for g in sample_ports:
        lid, port = ca.get(g, (0, 0))
        r = one("LR", "%d/%d" % (lid, port))
        if "ToLID" in r:
            r["ToLID GUID"] = "%#x" % guid_of_lid.get(int(r["ToLID"], 0), 0)
        res[("LR", g)] = r
        res[("PIR", g)] = one("PIR", "%d/%d" % (lid, port))
        res[("GIR", g)] = one("GIR", "%d/0" % lid)
        res[("SL2VL", g)] = one("SL2VL", "%d//%d" % (lid, port))
        res[("VLAR", g)] = one("VLAR", "%d/%d/1" % (lid, port))
    for g in sample_sw:
        res[("SWIR", g)] = one("SWIR", str(lids[g]))
    # The requester's path to the IPoIB broadcast group of the default
    # partition, which both SMs create (a source named in the query would
    # have to be a member).
    res[("MPR",)] = one("-p", "--dgid", IPOIB_MGID)
    res[("SMIR",)] = one("SMIR")
    for g in sample_ports:
        lid, port = ca.get(g, (0, 0))
        # OpenSM answers P_KeyTableRecords to trusted requests only: its
        # default SM_Key, 1 (subnetd does not check SM_Keys before issue 17).
        res[("PKTR", g)] = one("--smkey", "1", "PKTR", "%d/%d/0" % (lid, port))
    if args.mcast_join:
        # One member, joined from its own simulated node, so that both SMs
        # answer one record.
        joiner = args.net.cas()[-1]
        rc, out, err = cl.run([args.mcast_join, "ff12:401b:ffff:0:0:0:ffff:ffff"],
                              extra_env={"SIM_HOST": joiner})
        if rc != 0:
            res[("MCMR",)] = {"error": "mcast_join from %s: rc %d %s %s"
                                       % (joiner, rc, out.strip(), err.strip()[-200:])}
        else:
            res[("MCMR",)] = one("MCMR", "--mgid", IPOIB_MGID)
    for a, b in pairs:
        res[("PR", a, b)] = one("-p", "--src-to-dst", "%d:%d" % (lids[a], lids[b]))
    return res


def run_opensm(args, netfile, sizing, net, work, suite, timeout=120):
    """OpenSM (-R updn) on a fresh ibsim of `netfile`; suite(Client) once it
    is up (tests/bench/sa_rate_ibsim.py uses it too)."""
    out = os.path.join(work, "opensm")
    os.makedirs(out)
    a = types.SimpleNamespace(fabric=args.fabric, engine="updn", outdir=out, timeout=timeout,
                              sweep=0, conf=None, creditloops=False, seed=1, perfmgr=0)
    run = opensm_runner.Run(a, netfile, sizing, net)
    try:
        t0 = time.time()
        run.start()
        if run.wait_up(t0, timeout) is None:
            raise RuntimeError("OpenSM: no SUBNET UP within %d s, see %s" % (timeout, out))
        return suite(Client(run.sock, out))
    finally:
        run.stop()


def run_subnetd(args, netfile, sizing, work, suite, timeout=60):
    """subnetd's daemon (updn, umad) on a fresh ibsim of `netfile`;
    suite(Client) once it is READY."""
    out = os.path.join(work, "subnetd")
    os.makedirs(out)
    sock = "sac%d" % os.getpid()
    ib = Ibsim(netfile, sizing, out, sock)
    ib.start()
    short = tempfile.mkdtemp(prefix="subnetd-sa-")
    cfg = os.path.join(out, "subnetd.yaml")
    write_subnetd_config(cfg, "updn", os.path.join(out, "subnetd.db"), os.path.join(short, "api.sock"))
    notify = NotifySocket(os.path.join(short, "notify.sock"))
    cwd = client_cwd(out)
    d = None
    try:
        with open(os.path.join(out, "daemon.log"), "w") as log:
            d = subprocess.Popen([args.subnetd, "--config", cfg], env=dict(preload_env(sock), **notify.env),
                                 cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        if notify.wait_for("READY=1", d, timeout) is None:
            raise RuntimeError("subnetd: not READY within %d s, see %s/daemon.log"
                               % (timeout, out))
        return suite(Client(sock, out))
    finally:
        if d is not None:
            stop(d, timeout=10)
        ib.stop()
        shutil.rmtree(cwd, ignore_errors=True)
        shutil.rmtree(short, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fabric")
    ap.add_argument("--subnetd", required=True)
    ap.add_argument("--netfile-tool", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mcast-join", help="mcast_join, for the MCMemberRecord comparison")
    args = ap.parse_args()
    missing = [t for t in ("ibsim", "saquery", "ibnetdiscover") if shutil.which(t) is None]
    if missing or not find_umad2sim() or opensm_runner.find_program("opensm") is None:
        print("SKIP: missing %s" % ", ".join(missing or ["umad2sim or opensm"]))
        return 77
    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    path = os.path.join(work, "fabric.net")
    if os.path.exists(args.fabric):
        shutil.copy(args.fabric, path)
    else:
        make_netfile(args.netfile_tool, args.fabric, path)
    net = read_net(path)
    args.net = net
    sizing = ibsim_sizing(net)
    samples = {}

    def suite(cl):
        return query_all(cl, samples, args)

    try:
        theirs = run_opensm(args, path, sizing, net, work, suite)
        ours = run_subnetd(args, path, sizing, work, suite)
    except RuntimeError as e:
        print("FAIL: %s" % e)
        return 1
    fails, by_design, same = [], {}, 0
    for key in sorted(theirs, key=str):
        a, b = theirs[key], ours.get(key, {"error": "not asked"})
        if "error" in a or "error" in b:
            fails.append("%s: OpenSM %s, subnetd %s" % (key, a.get("error", "ok"), b.get("error", "ok")))
            continue
        for field in sorted(set(a) | set(b)):
            va, vb = a.get(field), b.get(field)
            if va == vb:
                same += 1
                continue
            why = BY_DESIGN.get((key[0], field))
            if why:
                by_design.setdefault((key[0], field, why), 0)
                by_design[(key[0], field, why)] += 1
            else:
                fails.append("%s %s: OpenSM %r, subnetd %r" % (key[0], field, va, vb))
    print("sa_compare %s: %d queries, %d fields equal" % (args.fabric, len(theirs), same))
    for (kind, field, why), n in sorted(by_design.items()):
        print("  by design: %s %s differs in %d records: %s" % (kind, field, n, why))
    for f in fails:
        print("  DIFFERS: " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
