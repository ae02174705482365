"""What the interop checks share (stdlib only): failures, running programs
under the umad2sim preload, subnetd's OpenSM-format dump files read back as
a fabric, ibtracert paths, and line-oriented child processes.

Imported by interop.py, interop_daemon.py and sa_compare.py beside it (interop.py puts this
directory and tests/ on sys.path).
"""
import json
import os
import re
import shutil
import subprocess

from ibsim_helpers import client_cwd, preload_env, track
from proc_helpers import EventFollower, Tap, stop

# ------------------------------------------------------------------ utilities


class Failures:
    def __init__(self, quiet=False):
        self.items = []
        self.quiet = quiet  # collected only; the caller decides what counts

    def add(self, where, what):
        self.items.append("%s: %s" % (where, what))
        if not self.quiet:
            print("FAIL %s: %s" % (where, what), flush=True)

    def merge(self, other):
        for item in other.items:
            self.items.append(item)
            print("FAIL %s" % item, flush=True)


def log(msg):
    print(msg, flush=True)


def missing_tools(tools, umad2sim):
    """The SKIP line naming what of `tools` (programs, also looked for in
    /usr/sbin) and libumad2sim.so (`umad2sim`, found or None) is missing,
    or None when nothing is."""
    path = os.environ.get("PATH", "") + ":/usr/sbin"
    missing = [t for t in tools if shutil.which(t, path=path) is None]
    if not umad2sim:
        missing.append("libumad2sim.so")
    return "SKIP: missing %s" % ", ".join(missing) if missing else None


def fresh_dir(path):
    """`path` made absolute, emptied and created."""
    path = os.path.abspath(path)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


class Env:
    """Runs programs under the preload for one ibsim, each in a fresh working
    directory under `scratch` (ibsim_helpers.client_cwd says why)."""

    def __init__(self, sock, umad2sim, scratch):
        self.env = preload_env(sock, umad2sim)
        self.scratch = scratch

    def run(self, args, timeout=120, extra_env=None):
        cwd = client_cwd(self.scratch)
        env = dict(self.env, **extra_env) if extra_env else self.env
        try:
            p = subprocess.run(args, env=env, capture_output=True, text=True,
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


# ------------------------------------------------------------------ paths

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


# ------------------------------------------------------------------ processes

class Child:
    """A line-oriented child process under the preload (stdin held open). Its
    stdout is read on a thread (proc_helpers.Tap) into `lines` and the log,
    where its stderr goes too; wait_line wakes on each new line."""

    def __init__(self, args, env, logpath, extra_env=None):
        self.log = open(logpath, "w")
        self.cwd = client_cwd(env.scratch)
        self.proc = track(subprocess.Popen(args, env=dict(env.env, **(extra_env or {})),
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=self.log, cwd=self.cwd))
        self.tap = Tap(self.proc.stdout, self.log, prefix="[stdout] ")
        self.lines = self.tap.lines
        self.seen = 0  # lines already offered to wait_line

    def wait_line(self, rx, timeout):
        """The next line (after those already returned) matching rx, or None
        (the deadline, or the child closed its output)."""
        def found():
            while self.seen < len(self.lines):
                line = self.lines[self.seen]
                self.seen += 1
                if re.search(rx, line):
                    return line
            return None
        return self.tap.wait(found, timeout)

    def finish(self, timeout=10, sig=None):
        """Ends the child: closes its stdin (umad_probe's cue) or sends `sig`
        (the daemon stops on SIGTERM), waits for its exit (SIGKILL after
        `timeout` s) and for the rest of its output."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        rc = stop(self.proc, timeout, sig)
        self.tap.close(timeout)
        self.log.close()
        shutil.rmtree(self.cwd, ignore_errors=True)
        return rc


def parse_sminfo(out):
    m = re.search(r"sm lid (\d+) sm guid (0x[0-9a-f]+), activity count (\d+) priority (\d+) "
                  r"state (\d+)", out)
    if not m:
        return None
    return {"lid": int(m.group(1)), "guid": int(m.group(2), 16), "act": int(m.group(3)),
            "prio": int(m.group(4)), "state": int(m.group(5))}


SA_FIELD = re.compile(r"^\s*([A-Za-z0-9_ ]+?):?\.{2,}(.*)$")


def parse_sa_dump(out):
    """saquery's record dumps ("NodeRecord dump:", "ClassPortInfo:" and the
    "field.....value" or "Field:.....value" lines under them) -> a list of
    {field: value}. A record's nested attribute dump (PortInfoRecord's
    "PortInfo dump:", SwitchInfoRecord's, SMInfoRecord's) belongs to its
    record."""
    nested = ("PortInfo dump:", "SwitchInfo dump:", "SMInfo dump:")
    recs = []
    for line in out.splitlines():
        s = line.strip()
        if s in nested and recs:
            continue  # the attribute inside its record: the same record
        if s.endswith("dump:") or s.endswith("Info:"):
            recs.append({})
            continue
        m = SA_FIELD.match(line)
        if m and recs:
            recs[-1][m.group(1).strip()] = m.group(2).strip()
    return recs


def subnetctl(env, args, sock, cmd):
    rc, out, err = env.run([args.subnetctl, "--socket", sock, "--json"] + cmd, timeout=60)
    if rc != 0:
        return None, "subnetctl %s: rc %d %s" % (" ".join(cmd), rc, err.strip()[-200:])
    try:
        return json.loads(out), ""
    except ValueError as e:
        return None, "subnetctl %s: bad JSON (%s)" % (" ".join(cmd), e)


def subnetctl_json(env, args, sock, cmd):
    """Like subnetctl(), but reads the JSON whatever the exit status: verify
    prints its answer and exits 1 when the verdict is not OK."""
    rc, out, err = env.run([args.subnetctl, "--socket", sock, "--json"] + cmd, timeout=60)
    try:
        return json.loads(out), ""
    except ValueError:
        return None, "subnetctl %s: rc %d %s" % (" ".join(cmd), rc, err.strip()[-200:])


def follow_events(env, args, api_sock, workdir, logname, where, fails, from_start=False):
    """The daemon's events from the next id on (what happens between now
    and the follower's start is replayed, nothing is missed), or from its
    first with from_start, logged to workdir/logname; None (and a failure)
    when its status cannot be read."""
    st, err = subnetctl(env, args, api_sock, ["status"])
    if st is None:
        fails.add(where, "daemon: " + err)
        return None
    first = 1 if from_start else int(st.get("last_event_id", "0")) + 1
    return EventFollower([args.subnetctl, "--socket", api_sock], first, env.env,
                         os.path.join(workdir, logname))
