#!/usr/bin/python3
"""Interop check: subnetd (umad transport) on ibsim, read back with tools no
one here wrote (stdlib only).

  interop.py --fabric NAME=SPEC_OR_NETFILE --subnetd BIN --netfile-tool BIN
             --probe BIN --workdir DIR [--engines updn,minhop] [--all-pairs N]
             [--sample N] [--seed S] [--daemon yes|no]

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
With the long-running daemon (`subnetd --config F` without --once; --daemon
no skips this part):
 10. sminfo reports the daemon as master; with --subnetctl, the daemon's
     GetForwardingTable of every switch equals ibroute's and its TracePath
     equals ibtracert's, hop by hop, for a sample of CA pairs;
 11. `Unlink` a switch-to-switch link: the daemon gets trap 128 and reroutes,
     and ibtracert between the CA pairs whose paths used that link succeeds
     again, through tables that avoid it.
Exit 0 when every check passed; 1 with the failures listed; 77 when a
required tool is missing.
"""
import argparse
import base64
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# tests/ibsim_helpers.py, found from this file's place whatever the working
# directory (ctest runs this from the build tree).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ibsim_helpers import (Ibsim, client_cwd, find_umad2sim, netfile as make_netfile,  # noqa: E402
                           preload_env, track, write_subnetd_config)

TOOLS = ["ibsim", "ibnetdiscover", "ibroute", "ibtracert", "smpquery", "sminfo", "ibdmchk"]
IS_SM = 0x2

# ------------------------------------------------------------------ utilities


class Failures:
    def __init__(self):
        self.items = []

    def add(self, where, what):
        self.items.append("%s: %s" % (where, what))
        print("FAIL %s: %s" % (where, what), flush=True)


def log(msg):
    print(msg, flush=True)


class Env:
    """Runs programs under the preload for one ibsim, each in a fresh working
    directory under `scratch` (ibsim_helpers.client_cwd says why)."""

    def __init__(self, sock, umad2sim, scratch):
        self.env = preload_env(sock, umad2sim)
        self.scratch = scratch

    def run(self, args, timeout=120):
        cwd = client_cwd(self.scratch)
        try:
            p = subprocess.run(args, env=self.env, capture_output=True, text=True,
                               timeout=timeout, cwd=cwd)
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            return 124, "", "timed out after %ss" % timeout
        finally:
            shutil.rmtree(cwd, ignore_errors=True)


# ------------------------------------------------------------------ dump files

# OpenSM marks the SM's own node "CA-SM" / "SW-SM".
END = re.compile(r"\{ (SW|CA)(?:-SM)? Ports:([0-9A-F]+) SystemGUID:[0-9A-F]+ NodeGUID:([0-9A-F]+) "
                 r"PortGUID:([0-9A-F]+) .*?\{(.*?)\} LID:([0-9A-F]+) PN:([0-9A-F]+) \}")


# opensm.fdbs comes in two layouts: OpenSM's dump_ucast_routes (what OpenSM
# writes to opensm.fdbs and the only one ibdmchk reads) and dump_ucast_lfts
# (OpenSM's opensm-lfts.dump). Both are read here; ibdmchk decides whether
# subnetd wrote the right one (check_ibdmchk).
FDB_ROUTES_HDR = re.compile(r"^dump_ucast_routes: Switch 0x([0-9a-fA-F]+)")
FDB_ROUTES_ENT = re.compile(r"^0x([0-9a-fA-F]+) : (\d+)")
FDB_LFTS_HDR = re.compile(r"^Unicast lids \[.*\] of switch Lid \d+ guid 0x([0-9a-fA-F]+)")
FDB_LFTS_ENT = re.compile(r"^0x([0-9a-fA-F]+) (\d+) #")


def read_fdbs(path):
    """switch GUID -> {LID: port}."""
    lft, cur = {}, None
    with open(path) as f:
        for line in f:
            m = FDB_ROUTES_HDR.match(line) or FDB_LFTS_HDR.match(line)
            if m:
                cur = lft.setdefault(int(m.group(1), 16), {})
                continue
            m = FDB_ROUTES_ENT.match(line) or FDB_LFTS_ENT.match(line)
            if m and cur is not None:
                cur[int(m.group(1), 16)] = int(m.group(2))
    return lft


class Fabric:
    """What subnetd says it did, from its OpenSM-format dump files."""

    def __init__(self, dump):
        self.nodes = {}      # node guid -> {"type", "desc", "ports"}
        self.links = {}      # (node guid, port) -> (node guid, port)
        self.lid_of = {}     # switch node guid / CA port guid -> LID
        self.port_guid = {}  # (CA node guid, port) -> port guid
        self.port_of_guid = {}  # CA port guid -> (node guid, port)
        with open(os.path.join(dump, "opensm-subnet.lst")) as f:
            for n, line in enumerate(f, 1):
                ends = END.findall(line)
                if len(ends) != 2:
                    if line.strip():
                        raise RuntimeError("opensm-subnet.lst:%d: not a link line: %s" % (n, line.strip()[:120]))
                    continue
                (ta, na, ga, pa, da, la, pna), (tb, nb, gb, pb, db, lb, pnb) = ends
                for t, n, g, p, d, lid, pn in ends:
                    node = int(g, 16)
                    self.nodes[node] = {"type": t, "desc": d, "ports": int(n, 16)}
                    if t == "SW":
                        self.lid_of[node] = int(lid, 16)
                    else:
                        pg = int(p, 16)
                        self.lid_of[pg] = int(lid, 16)
                        self.port_guid[(node, int(pn, 16))] = pg
                        self.port_of_guid[pg] = (node, int(pn, 16))
                self.links[(int(ga, 16), int(pna, 16))] = (int(gb, 16), int(pnb, 16))
        self.lft = read_fdbs(os.path.join(dump, "opensm.fdbs"))

    def switches(self):
        return sorted(n for n, v in self.nodes.items() if v["type"] == "SW")

    def ca_ports(self):
        return sorted(self.port_of_guid)

    def sw_links(self):
        out = []
        for (a, pa), (b, pb) in sorted(self.links.items()):
            if self.nodes[a]["type"] == "SW" and self.nodes[b]["type"] == "SW" and (a, pa) < (b, pb):
                out.append((a, pa, b, pb))
        return out

    def pairs_using(self, end_a, end_b):
        """CA port pairs whose path (through subnetd's tables) crosses the
        link end_a <-> end_b in either direction."""
        ends = {end_a, end_b}
        out = []
        for s in self.ca_ports():
            for t in self.ca_ports():
                if s == t:
                    continue
                hops = self.walk(s, t)
                if isinstance(hops, str):
                    continue
                node = self.port_of_guid[s][0]
                for out_port, guid, _ in hops:
                    if (node, out_port) in ends:
                        out.append((s, t))
                        break
                    node = guid
        return out

    def walk(self, src_pg, dst_pg):
        """(out port, GUID, in port) per hop through subnetd's tables, as ibtracert
        prints them (switch node GUID, final CA port GUID), or an error string."""
        dlid = self.lid_of[dst_pg]
        node, port = self.port_of_guid[src_pg]
        hops = []
        for _ in range(64):
            nxt = self.links.get((node, port))
            if nxt is None:
                return "port %d of %#x has no link" % (port, node)
            rnode, rport = nxt
            if self.nodes[rnode]["type"] == "CA":
                hops.append((port, self.port_guid.get((rnode, rport)), rport))
                if self.port_guid.get((rnode, rport)) != dst_pg:
                    return "reached CA port %#x, not %#x" % (self.port_guid.get((rnode, rport)), dst_pg)
                return hops
            hops.append((port, rnode, rport))
            out = self.lft.get(rnode, {}).get(dlid)
            if out is None or out == 0:
                return "switch %#x has no route to LID %d" % (rnode, dlid)
            node, port = rnode, out
        return "more than 64 hops"


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


def parse_tracert(out):
    hops = []
    for line in out.splitlines():
        m = re.match(r"^\[(\d+)\] -> (?:switch|ca) port \{0x([0-9a-f]+)\}\[(\d+)\]", line)
        if m:
            hops.append((int(m.group(1)), int(m.group(2), 16), int(m.group(3))))
    return hops


def trace_pairs(env, fab, pairs, where, fails, label="ibtracert"):
    ok = 0
    for s, d in pairs:
        sl, dl = fab.lid_of[s], fab.lid_of[d]
        rc, out, err = env.run(["ibtracert", str(sl), str(dl)])
        if rc != 0:
            fails.add(where, "%s %d %d failed (rc %d): %s" % (label, sl, dl, rc, err.strip()[-200:]))
            continue
        want = fab.walk(s, d)
        got = parse_tracert(out)
        if isinstance(want, str):
            fails.add(where, "subnetd's own tables: %d -> %d: %s" % (sl, dl, want))
        elif got != want:
            fails.add(where, "%s %d %d: path %s, subnetd's tables say %s" % (label, sl, dl, got, want))
        else:
            ok += 1
    return ok


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

class Child:
    """A line-oriented child process under the preload (stdin held open).
    Reads its stdout with os.read, so select() never misses a line that a
    buffered reader already pulled in."""

    def __init__(self, args, env, logpath):
        self.log = open(logpath, "w")
        self.cwd = client_cwd(env.scratch)
        self.proc = track(subprocess.Popen(args, env=env.env, stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=self.log, cwd=self.cwd))
        self.lines, self.pending, self.eof = [], b"", False
        self.seen = 0  # lines already offered to wait_line

    def _pump(self, timeout):
        if self.eof:
            return False
        r, _, _ = select.select([self.proc.stdout], [], [], max(0.0, timeout))
        if not r:
            return False
        data = os.read(self.proc.stdout.fileno(), 65536)
        if not data:
            self.eof = True
            return False
        self.pending += data
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            text = line.decode(errors="replace")
            self.log.write("[stdout] %s\n" % text)
            self.log.flush()
            self.lines.append(text)
        return True

    def wait_line(self, rx, timeout):
        """The next line (after those already returned) matching rx, or None."""
        end = time.time() + timeout
        while True:
            while self.seen < len(self.lines):
                line = self.lines[self.seen]
                self.seen += 1
                if re.search(rx, line):
                    return line
            if time.time() >= end or (self.eof and self.proc.poll() is not None):
                return None
            self._pump(min(0.2, end - time.time()))

    def finish(self, timeout=10, sig=None):
        """Ends the child: closes its stdin (umad_probe's cue) or sends `sig`
        (the daemon stops on SIGTERM), then collects the rest of its output."""
        try:
            if sig is not None and self.proc.poll() is None:
                self.proc.send_signal(sig)
            self.proc.stdin.close()
        except OSError:
            pass
        end = time.time() + timeout
        while not self.eof and time.time() < end:
            self._pump(0.2)
        try:
            self.proc.wait(timeout=max(0.1, end - time.time()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.cwd, ignore_errors=True)
        return self.proc.returncode


def parse_sminfo(out):
    m = re.search(r"sm lid (\d+) sm guid (0x[0-9a-f]+), activity count (\d+) priority (\d+) "
                  r"state (\d+)", out)
    if not m:
        return None
    return {"lid": int(m.group(1)), "guid": int(m.group(2), 16), "act": int(m.group(3)),
            "prio": int(m.group(4)), "state": int(m.group(5))}


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
            ib.console('Unlink "%s"[%d]' % (fab.nodes[a]["desc"], pa))
            line = probe.wait_line(r"^trap 128 ", 5)
            lids = {fab.lid_of[a], fab.lid_of[b]}
            if not line:
                fails.add(where, "no trap 128 reached the SM port after Unlink %s[%d]" % (fab.nodes[a]["desc"], pa))
            else:
                lid = int(line.split()[5], 16)
                if lid not in lids or "repressed yes" not in line:
                    fails.add(where, "trap: %s; want LID in %s and a TrapRepress sent" % (line, sorted(lids)))
                else:
                    log("  Unlink %s[%d]: %s" % (fab.nodes[a]["desc"], pa, line))
            ib.console('ReLink "%s"[%d]' % (fab.nodes[a]["desc"], pa))
    finally:
        rc = probe.finish()
    stats = [l for l in probe.lines if l.startswith("stats ")]
    if rc != 0 or not stats:
        fails.add(where, "umad_probe exited with %s, see %s/probe.log" % (rc, workdir))
    else:
        answered = int(stats[-1].split()[6])
        if answered < 1:
            fails.add(where, "the transport answered no SMInfo request: %s" % stats[-1])


def check_daemon(env, fab, ib, args, workdir, cfg, api_sock, sm_lid, sm_node, where, fails):
    dump = os.path.join(workdir, "dump-daemon")
    d = Child([args.subnetd, "--config", cfg, "--dump-dir", dump], env,
              os.path.join(workdir, "daemon.log"))
    try:
        if not wait_daemon_up(d, dump, 60):
            fails.add(where, "daemon: no subnet up within 60 s, see %s/daemon.log" % workdir)
            return
        rc, out, err = env.run(["sminfo"])
        s = parse_sminfo(out)
        if rc != 0 or not s or s["state"] != 3 or s["lid"] != sm_lid:
            fails.add(where, "daemon: sminfo: rc %d %s %s" % (rc, out.strip(), err.strip()[-200:]))
        else:
            log("  daemon: sminfo: %s" % out.strip())
        if args.subnetctl:
            check_grpc(env, fab, args, api_sock, where, fails)
        # The switch-to-switch link that most CA pairs' paths cross (ties:
        # the first), so the reroute has something to prove.
        best = None
        for link in fab.sw_links():
            n = len(fab.pairs_using((link[0], link[1]), (link[2], link[3])))
            if best is None or n > best[0]:
                best = (n, link)
        if not best:
            return
        a, pa, b, pb = best[1]
        affected = fab.pairs_using((a, pa), (b, pb))
        affected = affected[:args.sample]
        before = os.path.getmtime(os.path.join(dump, "opensm.fdbs"))
        t0 = time.time()
        ib.console('Unlink "%s"[%d]' % (fab.nodes[a]["desc"], pa))
        # The daemon rewrites its dump files after a reroute.
        while time.time() - t0 < 30:
            p = os.path.join(dump, "opensm.fdbs")
            if os.path.exists(p) and os.path.getmtime(p) > before:
                break
            time.sleep(0.02)
        else:
            fails.add(where, "daemon: no new tables within 30 s of Unlink %s[%d]" % (fab.nodes[a]["desc"], pa))
            return
        took = time.time() - t0
        time.sleep(0.3)  # let the dump files settle
        after = Fabric(dump)
        ok = trace_pairs(env, after, affected, where, fails, "ibtracert after Unlink")
        log("  daemon: Unlink %s[%d]: new tables after %.2f s, %d/%d affected pairs trace through them"
            % (fab.nodes[a]["desc"], pa, took, ok, len(affected)))
    finally:
        d.finish(sig=signal.SIGTERM)


def subnetctl(env, args, sock, cmd):
    rc, out, err = env.run([args.subnetctl, "--socket", sock, "--json"] + cmd, timeout=60)
    if rc != 0:
        return None, "subnetctl %s: rc %d %s" % (" ".join(cmd), rc, err.strip()[-200:])
    try:
        return json.loads(out), ""
    except ValueError as e:
        return None, "subnetctl %s: bad JSON (%s)" % (" ".join(cmd), e)


def ibroute_table(env, lid):
    rc, out, err = env.run(["ibroute", str(lid)])
    if rc != 0:
        return None
    got = {}
    for line in out.splitlines():
        m = re.match(r"^0x([0-9a-f]+) (\d+) :", line)
        if m:
            got[int(m.group(1), 16)] = int(m.group(2))
    return got


def check_grpc(env, fab, args, sock, where, fails):
    """What the daemon serves over gRPC (GetForwardingTable, TracePath, via
    subnetctl --json) against what ibroute / ibtracert read from the fabric."""
    bad = 0
    for sw in fab.switches():
        blocks, err = subnetctl(env, args, sock, ["lft", "0x%016x" % sw])
        if blocks is None:
            fails.add(where, "daemon: " + err)
            bad += 1
            continue
        served = {}
        for b in blocks:
            ports = base64.b64decode(b.get("ports", ""))
            top = int(b.get("linear_fdb_top", 0))
            for i, port in enumerate(ports):
                lid = int(b.get("block", 0)) * 64 + i
                if port != 255 and lid <= top:
                    served[lid] = port
        served.pop(0, None)  # LID 0 is not a LID; ibroute starts at 1
        real = ibroute_table(env, fab.lid_of[sw])
        if real != served:
            diff = sorted(set((real or {}).items()) ^ set(served.items()))[:4]
            fails.add(where, "daemon: GetForwardingTable of %s differs from ibroute: %s"
                      % (fab.nodes[sw]["desc"], diff))
            bad += 1
    if not bad:
        log("  daemon: GetForwardingTable == ibroute on all %d switches" % len(fab.switches()))
    cas = fab.ca_ports()
    pairs = [(s_, t) for s_ in cas for t in cas if s_ != t]
    pairs = random.Random(args.seed + 1).sample(pairs, min(len(pairs), 20))
    bad = 0
    for s_, t in pairs:
        sl, dl = fab.lid_of[s_], fab.lid_of[t]
        r, err = subnetctl(env, args, sock, ["trace", "lid:%d" % sl, "lid:%d" % dl])
        if r is None:
            fails.add(where, "daemon: " + err)
            bad += 1
            continue
        hops = r.get("hops", [])
        served = [(int(hops[i - 1].get("out_port", 0)), int(hops[i]["node_guid"]), int(hops[i].get("in_port", 0)))
                  for i in range(1, len(hops))]
        rc, out, e2 = env.run(["ibtracert", str(sl), str(dl)])
        real = parse_tracert(out) if rc == 0 else None
        # ibtracert names the last CA by its port GUID, TracePath by its node GUID.
        if real and served and fab.port_of_guid.get(real[-1][1], (None,))[0] == served[-1][1]:
            real[-1] = served[-1]
        if not r.get("complete") or real != served:
            fails.add(where, "daemon: TracePath %d -> %d %s, ibtracert %s" % (sl, dl, served, real))
            bad += 1
    if not bad:
        log("  daemon: TracePath == ibtracert for %d CA pairs" % len(pairs))


def wait_daemon_up(child, dump, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(os.path.join(dump, "opensm.fdbs")):
            return True
        if child.proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fabric", required=True, help="NAME=SPEC_OR_NETFILE")
    ap.add_argument("--subnetd", required=True)
    ap.add_argument("--netfile-tool", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--subnetctl", help="also check the daemon's gRPC answers (GetForwardingTable, TracePath)")
    ap.add_argument("--engines", default="updn,minhop")
    ap.add_argument("--all-pairs", type=int, default=16,
                    help="trace all CA pairs up to this many CA ports (first engine only)")
    ap.add_argument("--sample", type=int, default=60)
    ap.add_argument("--portinfo-max", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--daemon", choices=["yes", "no"], default="yes",
                    help="also check the long-running daemon (sminfo, Unlink reroute)")
    args = ap.parse_args()

    missing = [t for t in TOOLS if shutil.which(t) is None]
    umad2sim = find_umad2sim()
    if missing or not umad2sim:
        print("SKIP: missing %s" % ", ".join(missing + ([] if umad2sim else ["libumad2sim.so"])))
        return 77

    name, _, spec = args.fabric.partition("=")
    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
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
                                 os.path.join(sockdir, "api.sock"), threads=2)
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
                    ib = Ibsim(netfile, sizing, run, sock + "d")
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
