#!/usr/bin/python3
"""Interop check: subnetd (umad transport) on ibsim, read back with tools no
one here wrote (stdlib only, but for prometheus_client's parser of
/metrics).

  interop.py --fabric NAME=SPEC_OR_NETFILE --subnetd BIN --netfile-tool BIN
             --probe BIN --subnetctl BIN --reset-switch BIN --workdir DIR
             [--engines updn,minhop] [--all-pairs N] [--sample N] [--seed S]
             [--daemon yes|no]

For every engine, on a fresh `ibsim -s` (own IBSIM_SOCKNAME, size options
computed from the file, console on a pipe this script keeps open):
  1. `subnetd --once --engine E --dump-dir D` under umad2sim; if the engine's
     tables fail subnetd's own verifier (minhop on a ring or torus), that is
     recorded and the engine is skipped — nothing was programmed;
  2. ibnetdiscover -p: every switch and CA port with the LID subnetd assigned
     (D/opensm-subnet.lst), nothing more, nothing less;
  3. ibroute on every switch == subnetd's table (D/opensm.fdbs);
  4. ibtracert for all CA pairs when there are at most --all-pairs CA ports
     (first engine; later ones and bigger fabrics: a seeded sample of
     --sample pairs): succeeds, and hop by hop (out
     port, node GUID, in port) equals the walk through subnetd's tables;
  5. smpquery portinfo on every CA port, switch port 0 and linked switch port
     (a sample on big fabrics): LinkState Active, the LID subnetd assigned,
     SMLid = the SM port's LID;
  6. ibdmchk on D: "no credit loops found" and no traversal errors.
Then, once per fabric, with an SM that holds the port but does not sweep
(umad_probe, the UmadTransport alone):
  7. IsSM is set in the SM port's CapabilityMask while it runs;
  8. `sminfo` reports it as master (our port GUID, state 3 = MASTER);
  9. an ibsim `Unlink` of a switch-to-switch link reaches it as trap 128
     from one of the two switches, and it sends TrapRepress.
With the long-running daemon (`subnetd --config F` without --once, ready
when it sends READY=1 to our NOTIFY_SOCKET; --daemon no skips this part):
 10. sminfo reports the daemon as master; the daemon's GetForwardingTable of
     every switch equals ibroute's and its TracePath equals ibtracert's, hop
     by hop, for a sample of CA pairs (through subnetctl --json);
 11. the switch next to the SM power-cycled (issue 12.1): its LFT emptied and
     LinearFDBTop 0 (umad_reset_switch: ibsim cannot do that itself), its
     ports reset and links retrained (ibsim `Clear` + `ReLink`); after
     `subnetctl sweep --light` the SM has said the switch lost its tables,
     ibroute on it equals the daemon's table and `verify --read-back` finds
     no difference (skipped when the SM sits on a switch);
 12. `Unlink` a switch-to-switch link: the daemon gets trap 128 and reroutes
     (its event stream, `subnetctl events --follow`, says when); the
     switches hold the new tables (`verify --read-back`), the paths of the
     CA pairs that used the link avoid it in them, and ibtracert follows
     them; the same again after the heavy sweep that re-balances 2 s later;
 13. the operations suite (interop_ops.py): PMA counters equal perfquery's
     after ibsim's PerformanceSet and its Error command (a receive-errors
     finding); `check cabling` with the ibsim net file as the plan finds
     nothing, and with two cables swapped in a YAML plan one `swapped`;
     /metrics parses with prometheus_client; a switch link unlinked three
     times is isolated (PhysLinkState Disabled, `ports --unhealthy`), or
     refused where it would cut endpoints off, and `port enable` returns it.
Nothing here sleeps to let something happen: every wait is for the event
itself (a line, a datagram, an event, a process exit), with a deadline only
a failing run reaches.
Exit 0 when every check passed; 1 with the failures listed; 77 when a
required tool is missing.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

# tests/ibsim_helpers.py and the interop modules beside this file, found from
# this file's place whatever the working directory (ctest runs this from the
# build tree).
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from ibsim_helpers import (INTEROP_PARTITIONS, Ibsim, find_umad2sim,  # noqa: E402
                           netfile as make_netfile, write_subnetd_config)
from interop_daemon import check_daemon  # noqa: E402
from interop_lib import (Child, Env, Fabric, Failures, fresh_dir, log, missing_tools,  # noqa: E402
                         parse_sminfo, trace_pairs)

TOOLS = ["ibsim", "ibnetdiscover", "ibroute", "ibtracert", "smpquery", "sminfo", "ibdmchk"]
IS_SM = 0x2

# ------------------------------------------------------------------ checks

def check_ibnetdiscover(env, fab, where, fails):
    rc, out, err = env.run(["ibnetdiscover", "-p"])
    if rc != 0:
        fails.add(where, "ibnetdiscover -p failed (rc %d): %s" % (rc, err.strip()[-300:]))
        return
    seen = {}
    for line in out.splitlines():
        m = re.match(r"^(CA|SW)\s+(\d+)\s+(\d+)\s+(0x[0-9a-f]+)", line)
        if not m:
            continue
        guid, lid = int(m.group(4), 16), int(m.group(2))
        seen.setdefault(guid, set()).add(lid)
    want = dict(fab.lid_of)
    bad = []
    for guid, lid in sorted(want.items()):
        got = seen.get(guid)
        if got != {lid}:
            bad.append("%#x: subnetd LID %d, ibnetdiscover %s" % (guid, lid, sorted(got) if got else "absent"))
    extra = sorted(set(seen) - set(want))
    if extra:
        bad.append("ibnetdiscover lists %d GUIDs subnetd does not: %s" % (
            len(extra), ", ".join("%#x" % g for g in extra[:5])))
    if bad:
        fails.add(where, "ibnetdiscover disagrees: " + "; ".join(bad[:5]))
    else:
        log("  ibnetdiscover: %d switches, %d CA ports, every LID as assigned"
            % (len(fab.switches()), len(fab.ca_ports())))


def check_ibroute(env, fab, where, fails):
    bad = 0
    for sw in fab.switches():
        lid = fab.lid_of[sw]
        rc, out, err = env.run(["ibroute", str(lid)])
        if rc != 0:
            fails.add(where, "ibroute %d failed (rc %d): %s" % (lid, rc, err.strip()[-200:]))
            bad += 1
            continue
        got = {}
        for line in out.splitlines():
            m = re.match(r"^0x([0-9a-f]+) (\d+) :", line)
            if m:
                got[int(m.group(1), 16)] = int(m.group(2))
        want = fab.lft.get(sw, {})
        if got != want:
            diff = sorted(set(got.items()) ^ set(want.items()))[:4]
            fails.add(where, "ibroute %d (%s) differs from subnetd's table: %d vs %d entries, "
                      "first differences %s" % (lid, fab.nodes[sw]["desc"], len(got), len(want), diff))
            bad += 1
    if not bad:
        log("  ibroute: %d switches, every LFT equals subnetd's" % len(fab.switches()))


def check_ibtracert(env, fab, args, where, fails, all_pairs):
    cas = fab.ca_ports()
    pairs = [(s, d) for s in cas for d in cas if s != d]
    if not all_pairs or len(cas) > args.all_pairs:
        rnd = random.Random(args.seed)
        pairs = rnd.sample(pairs, min(args.sample, len(pairs)))
        how = "sample of %d pairs (seed %d)" % (len(pairs), args.seed)
    else:
        how = "all %d pairs" % len(pairs)
    ok = trace_pairs(env, fab, pairs, where, fails)
    if ok == len(pairs):
        log("  ibtracert: %s, every path as subnetd's tables route it" % how)


def query_portinfo(env, lid, port):
    rc, out, err = env.run(["smpquery", "portinfo", str(lid), str(port)])
    if rc != 0:
        return None, err.strip()[-200:]
    fields = {}
    for line in out.splitlines():
        m = re.match(r"^(\w+):\.*(.*)$", line)
        if m:
            fields[m.group(1)] = m.group(2).strip()
    return fields, ""


def sm_port_info(env):
    """PortInfo of the port the SM (and every client) attaches to: DR path 0."""
    rc, out, err = env.run(["smpquery", "-D", "portinfo", "0"])
    if rc != 0:
        return None
    fields = {}
    for line in out.splitlines():
        m = re.match(r"^(\w+):\.*(.*)$", line)
        if m:
            fields[m.group(1)] = m.group(2).strip()
    return fields


def check_portinfo(env, fab, args, sm_lid, where, fails):
    targets = []  # (lid to query, port, expected LID or None)
    for sw in fab.switches():
        targets.append((fab.lid_of[sw], 0, fab.lid_of[sw]))
    for pg in fab.ca_ports():
        node, port = fab.port_of_guid[pg]
        targets.append((fab.lid_of[pg], port, fab.lid_of[pg]))
    for (a, pa), _ in sorted(fab.links.items()):
        if fab.nodes[a]["type"] == "SW":
            targets.append((fab.lid_of[a], pa, None))
    how = "all %d ports" % len(targets)
    if len(targets) > args.portinfo_max:
        targets = random.Random(args.seed).sample(targets, args.portinfo_max)
        how = "a sample of %d ports" % len(targets)
    bad = 0
    for lid, port, want_lid in targets:
        f, err = query_portinfo(env, lid, port)
        if f is None:
            fails.add(where, "smpquery portinfo %d %d failed: %s" % (lid, port, err))
            bad += 1
            continue
        problems = []
        if f.get("LinkState") != "Active":
            problems.append("LinkState %s" % f.get("LinkState"))
        if want_lid is not None:
            if f.get("Lid") != str(want_lid):
                problems.append("Lid %s, subnetd assigned %d" % (f.get("Lid"), want_lid))
            if f.get("SMLid") != str(sm_lid):
                problems.append("SMLid %s, SM port LID %d" % (f.get("SMLid"), sm_lid))
        if problems:
            fails.add(where, "smpquery portinfo %d %d: %s" % (lid, port, ", ".join(problems)))
            bad += 1
    if not bad:
        log("  smpquery portinfo: %s Active, LIDs as assigned, SMLid %d" % (how, sm_lid))


def check_ibdmchk(dump, fab, where, fails):
    args = ["ibdmchk", "-s", "opensm-subnet.lst", "-f", "opensm.fdbs", "-m", "opensm.mcfdbs"]
    if os.path.exists(os.path.join(dump, "opensm-path-sl.dump")):
        # Layered routing: each SL's (VL's) dependency graph checked on its own.
        args += ["-c", "opensm-path-sl.dump"]
    try:
        p = subprocess.run(args, cwd=dump, capture_output=True, text=True, timeout=600)
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        fails.add(where, "ibdmchk timed out")
        return
    with open(os.path.join(dump, "ibdmchk.out"), "w") as f:
        f.write(out)
    # ibutils 1.5.7's ibdmchk may crash after its verdict: read the report, not rc.
    # It silently skips lines it cannot parse, so first make sure it read our
    # tables at all.
    m = re.search(r"^-I- Defined (\d+) fdb entries for:(\d+) switches", out, re.M)
    want = sum(len(v) for v in fab.lft.values())
    if not m or int(m.group(2)) != len(fab.switches()) or int(m.group(1)) != want:
        fails.add(where, "ibdmchk read %s of subnetd's %d LFT entries on %d switches from opensm.fdbs"
                  % ("%s entries on %s switches" % m.groups() if m else "nothing", want, len(fab.switches())))
        return
    trav = re.search(r"Some Point to Point Traversals Failed|Fail to traverse|Dead end|Unassigned LFT", out)
    if trav:
        fails.add(where, "ibdmchk traversal error (%s), see %s/ibdmchk.out" % (trav.group(0), dump))
    if re.search(r"^-E- credit loops in routing", out, re.M):
        fails.add(where, "ibdmchk found credit loops, see %s/ibdmchk.out" % dump)
    elif not re.search(r"^-I- no credit loops found", out, re.M):
        fails.add(where, "ibdmchk gave no verdict (rc %d), see %s/ibdmchk.out" % (p.returncode, dump))
    elif not trav:
        log("  ibdmchk: no credit loops, all paths traverse")


# ------------------------------------------------------------------ SM alive

def pick_sw_link(fab, sm_node):
    """A switch-to-switch link away from the SM's switch, deterministic."""
    links = fab.sw_links()
    sm_sw = sm_node if sm_node in fab.nodes and fab.nodes[sm_node]["type"] == "SW" else None
    if sm_sw is None:
        for (a, pa), (b, pb) in fab.links.items():
            if a == sm_node:
                sm_sw = b
                break
    cand = [l for l in links if sm_sw not in (l[0], l[2])] or links
    return cand[len(cand) // 2] if cand else None


def trap_reaches(fab, sw, sm_lid, cut):
    """Whether a trap from switch `sw` reaches the SM: ibsim sends it to
    the SM's LID through subnetd's tables, and drops it on the link whose
    ends are `cut` (down, or just back and not yet active)."""
    node = sw
    for _ in range(64):
        if fab.lid_of.get(node) == sm_lid:
            return True
        out = fab.lft.get(node, {}).get(sm_lid)
        if not out or (node, out) in cut or (node, out) not in fab.links:
            return False
        node, port = fab.links[(node, out)]
        if fab.nodes[node]["type"] == "CA":
            return fab.lid_of.get(fab.port_guid.get((node, port))) == sm_lid
    return False


def wait_traps(probe, lids, timeout):
    """The probe's trap 128 lines, one from each switch in `lids` (ibsim
    sends one from each switch end of a link that goes down or comes
    back, of which those whose way to the SM avoids the link arrive), or
    those that came before the deadline."""
    got = {}
    while set(got) != lids:
        line = probe.wait_line(r"^trap 128 ", timeout)
        if not line:
            break
        got[int(line.split()[5], 16)] = line
    return got


def check_probe(env, fab, ib, args, workdir, sm_lid, sm_node, where, fails):
    probe = Child([args.probe], env, os.path.join(workdir, "probe.log"))
    try:
        ready = probe.wait_line(r"^ready ", 20)
        if not ready:
            fails.add(where, "umad_probe did not open the port, see %s/probe.log" % workdir)
            return
        guid = int(ready.split()[2], 16)
        pi = sm_port_info(env)
        cap = int(pi.get("CapMask", "0"), 16) if pi else 0
        if not cap & IS_SM:
            fails.add(where, "IsSM not set in the SM port's CapabilityMask (%#x) while the port is held" % cap)
        else:
            log("  IsSM set in the SM port's CapabilityMask (%#x)" % cap)
        rc, out, err = env.run(["sminfo"])
        s = parse_sminfo(out)
        if rc != 0 or not s:
            fails.add(where, "sminfo failed (rc %d): %s %s" % (rc, out.strip(), err.strip()[-200:]))
        elif s["guid"] != guid or s["state"] != 3 or s["lid"] != sm_lid:
            fails.add(where, "sminfo: %s; want guid %#x, lid %d, state 3 (MASTER)" % (out.strip(), guid, sm_lid))
        else:
            log("  sminfo (transport's SmAgent): %s" % out.strip())
        link = pick_sw_link(fab, sm_node)
        if link:
            a, pa, b, pb = link
            cut = {(a, pa), (b, pb)}
            lids = {fab.lid_of[x] for x in (a, b) if trap_reaches(fab, x, sm_lid, cut)}
            # Every trap of each event that can arrive is waited for, so
            # that none is still on its way when the probe exits: umad2sim
            # crashes (a MAD after the port is closed) or deadlocks (one
            # during its atexit handler) on a late one (umad_probe.cpp).
            for event in ("Unlink", "ReLink"):
                ib.console('%s "%s"[%d]' % (event, fab.nodes[a]["desc"], pa))
                got = wait_traps(probe, lids, 5)
                bad = [l for l in got.values() if "repressed yes" not in l]
                if set(got) != lids or bad:
                    fails.add(where, "%s %s[%d]: traps %s; want one from each of LIDs %s (the "
                              "ends whose way to the SM avoids the link), each with a TrapRepress "
                              "sent" % (event, fab.nodes[a]["desc"], pa, list(got.values()),
                                        sorted(lids)))
                else:
                    log("  %s %s[%d]: %s" % (event, fab.nodes[a]["desc"], pa,
                                             "; ".join(got[l] for l in sorted(got))))
    finally:
        # Its exit is the event waited for; the kill is only a safety net.
        # The probe printed its stats and never exited a few times (TSan,
        # ASan, release): umad2sim's atexit handler deadlocked on a trap
        # the driver did not wait for (it waited for the Unlink's first).
        rc = probe.finish(timeout=60)
    stats = [l for l in probe.lines if l.startswith("stats ")]
    if rc != 0 or not stats:
        fails.add(where, "umad_probe exited with %s, see %s/probe.log" % (rc, workdir))
    else:
        answered = int(stats[-1].split()[6])
        if answered < 1:
            fails.add(where, "the transport answered no SMInfo request: %s" % stats[-1])


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fabric", required=True, help="NAME=SPEC_OR_NETFILE")
    ap.add_argument("--subnetd", required=True)
    ap.add_argument("--netfile-tool", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--reset-switch", help="umad_reset_switch, for the power cycle (daemon checks)")
    ap.add_argument("--mcast-join", help="mcast_join, for the multicast checks (daemon checks)")
    ap.add_argument("--sa-client", help="sa_client, for the service and Report checks (daemon "
                    "checks)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--subnetctl", help="subnetctl, for the daemon checks (required unless --daemon no)")
    ap.add_argument("--engines", default="updn,minhop")
    ap.add_argument("--all-pairs", type=int, default=16,
                    help="trace all CA pairs up to this many CA ports (first engine only)")
    ap.add_argument("--sample", type=int, default=60)
    ap.add_argument("--portinfo-max", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--daemon", choices=["yes", "no"], default="yes",
                    help="also check the long-running daemon (sminfo, Unlink reroute)")
    args = ap.parse_args()
    if args.daemon == "yes" and not (args.subnetctl and args.reset_switch):
        ap.error("the daemon checks need --subnetctl (its events tell when the daemon rerouted) "
                 "and --reset-switch (the power cycle)")

    umad2sim = find_umad2sim()
    skip = missing_tools(TOOLS, umad2sim)
    if skip:
        print(skip)
        return 77

    name, _, spec = args.fabric.partition("=")
    work = fresh_dir(args.workdir)
    try:
        netfile, sizing, summary = make_netfile(args.netfile_tool, spec, os.path.join(work, name + ".net"))
    except RuntimeError as e:
        print("FAIL %s: %s" % (name, e))
        return 1
    log("%s: %s (%s), ibsim %s" % (name, spec, summary, " ".join(sizing)))

    fails = Failures()
    first = True
    sockdir = tempfile.mkdtemp(prefix="subnetd-interop-")
    for engine in args.engines.split(","):
        where = "%s/%s" % (name, engine)
        run = os.path.join(work, engine)
        os.makedirs(run)
        sock = "sni%d%s" % (os.getpid(), engine[:4])
        ib = Ibsim(netfile, sizing, run, sock)
        env = Env(sock, umad2sim, run)
        try:
            ib.start()
            cfg = os.path.join(run, "subnetd.yaml")
            write_subnetd_config(cfg, engine, os.path.join(run, "subnetd.db"),
                                 os.path.join(sockdir, "api.sock"), threads=2,
                                 partitions=INTEROP_PARTITIONS, perfmgr_interval="1s")
            dump = os.path.join(run, "dump")
            t0 = time.time()
            rc, out, err = env.run([args.subnetd, "--config", cfg, "--once", "--dump-dir", dump], timeout=300)
            with open(os.path.join(run, "subnetd.out"), "w") as f:
                f.write(out + err)
            if rc != 0:
                if "verification failed" in err:
                    log("  %s: subnetd's verifier refused the tables, nothing programmed: %s"
                        % (where, err.strip().splitlines()[-1][:300]))
                    continue
                fails.add(where, "subnetd --once failed (rc %d): %s" % (rc, err.strip()[-400:]))
                continue
            up = [l for l in out.splitlines() if l.startswith("subnet up")]
            log("  %s: %s in %.2f s" % (where, up[0] if up else "?", time.time() - t0))
            fab = Fabric(dump)
            pi = sm_port_info(env)
            sm_lid = int(pi["Lid"]) if pi and "Lid" in pi else -1
            sm_node = None
            for g, v in fab.nodes.items():
                if fab.lid_of.get(g) == sm_lid or any(
                        fab.lid_of.get(fab.port_guid.get((g, p))) == sm_lid for p in range(1, v["ports"] + 1)):
                    sm_node = g
            check_ibnetdiscover(env, fab, where, fails)
            check_ibroute(env, fab, where, fails)
            # All pairs (small fabrics) for the first engine, a sample for the others.
            check_ibtracert(env, fab, args, where, fails, all_pairs=first)
            check_portinfo(env, fab, args, sm_lid, where, fails)
            check_ibdmchk(dump, fab, where, fails)
            if first:
                first = False
                check_probe(env, fab, ib, args, run, sm_lid, sm_node, where, fails)
                if args.daemon == "yes":
                    ib.stop()
                    ib = Ibsim(netfile, sizing, run, sock + "d", out="ibsim-daemon.out")
                    env = Env(sock + "d", umad2sim, run)
                    ib.start()
                    check_daemon(env, fab, ib, args, run, cfg, os.path.join(sockdir, "api.sock"),
                                 sm_lid, sm_node, where, fails)
        except RuntimeError as e:
            fails.add(where, str(e))
        finally:
            ib.stop()

    shutil.rmtree(sockdir, ignore_errors=True)
    if fails.items:
        print("%s: %d failure(s)" % (name, len(fails.items)))
        return 1
    print("%s: all checks passed" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
