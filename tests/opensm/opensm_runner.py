#!/usr/bin/python3
"""OpenSM on an ibsim fabric, measured for the side-by-side figures (stdlib only).

  opensm_runner.py FABRIC [-R ENGINE] [--netfile-tool BIN] [--outdir DIR]
                   [--cycles N] [--unlink '"NODE"[PORT]'] [--creditloops]
                   [--tracert N] [--strict] [--quiet S] [--sweep S]
                   [--conf KEY=VALUE ...] [--timeout S] [--event-timeout S]
                   [--perfmgr S]

FABRIC is an ibsim net file, or a generator spec ("fat-tree:levels=3,k=16")
that subnetd's own interop_netfile (--netfile-tool BUILD/bin/interop_netfile)
writes as one, so OpenSM and subnetd manage the very same file. ENGINE is
OpenSM's -R list (ftree, updn, minhop, dfsssp, nue, lash, "ftree,updn", ...).

One run:
  1. ibsim -s with the size options the file needs (interop_netfile --sizing,
     or ibsim_helpers.ibsim_sizing without the tool), its own socket name
     (IBSIM_SOCKNAME) and its console on a pipe held open;
  2. opensm under umad2sim with everything in OUTDIR: its config (no system
     opensm.conf, partitions, QoS policy), its log (flushed per line; VERBOSE
     for the state, unicast and trap managers only), OSM_TMP_DIR=OUTDIR/tmp,
     OSM_CACHE_DIR=OUTDIR/cache (no guid2lid of an earlier run),
     --dump_files_dir OUTDIR/dump; console off, so nothing listens on a port;
  3. from OpenSM's own log timestamps:
       up_s      opensm started -> first "SUBNET UP"
       route_s   "building routing with '<engine>'" -> "<engine> tables
                 configured on all switches" (LID matrices, the LFTs, queuing
                 the LFT MADs); engine_used is the one that configured them
                 (ftree falls back to minhop on a fabric it does not accept);
     then waits until OpenSM is quiet (--quiet s without a sweep) and reads
     opensm_cpu_s (CPU seconds to SUBNET UP);
  4. --tracert N: ibnetdiscover -p (every CA port of the file has a LID) and
     ibtracert between N seeded random pairs of CA LIDs;
  5. --cycles N: N times `Unlink "NODE"[PORT]` of one switch-to-switch cable
     (default: ibsim_helpers.pick_link, the cable the subnetd benchmarks pull)
     on ibsim's console, which sends trap 128 to the SM; first_up_s / last_up_s
     = console command -> first / last "SUBNET UP" it causes (OpenSM
     reprogrammed, then quiet), whether trap 128 forced the heavy sweep, the
     routing time and engine of that sweep; then `ReLink` and the same again;
     recovery_s is the median Unlink last_up_s;
  6. --creditloops: OpenSM also writes its routing dumps (-D adds 0x40; this
     happens inside the sweep, so up_s and recovery include it: time without
     it), and ibutils' ibdmchk checks the tables after SUBNET UP and after the
     first Unlink for credit loops and paths that do not traverse. ibdmchk
     1.5.7 may crash after its verdict: the verdict is read from its output;
  7. opensm_rss_mib / ibsim_rss_mib: peak RSS (VmHWM, the high-water mark),
     read before the processes are stopped;
  8. --perfmgr S: OpenSM's performance manager on, a counter sweep every S
     s; perfmgr_sweeps = for three sweeps, "Gathering PerfMgr stats" -> the
     last PMA answer processed (osm_perfmgr.c's function trace, the only
     per-answer line it logs; logging it slows OpenSM, so this is an upper
     bound) and the answers counted.
OpenSM logs to its stdout, which the runner reads as it comes (and copies to
OUTDIR/opensm.log): the waits above wake on the log line itself.
Writes OUTDIR/result.json (the keys above, "findings": what ibdmchk,
ibtracert or ibnetdiscover reported against OpenSM's tables, "errors": what
could not be measured) and prints a summary.

Exit 0 when everything was measured (findings are reported, not failed,
unless --strict); 1 when something was not (see "errors"); 2 on bad
arguments; 77 when a package is missing (the message names it).
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# tests/ibsim_helpers.py, found from this file's place whatever the working
# directory.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ibsim_helpers import (Ibsim, client_cwd, find_umad2sim, ibsim_sizing,  # noqa: E402
                           netfile as make_netfile, pick_link, preload_env, read_net, track)
from proc_helpers import Tap, stop, wait_exit  # noqa: E402

# Programs and the Debian packages that bring them. opensm is in /usr/sbin,
# which a user's PATH may lack.
PACKAGES = {"ibsim": "ibsim-utils", "opensm": "opensm", "ibdmchk": "ibutils",
            "ibnetdiscover": "infiniband-diags", "ibtracert": "infiniband-diags",
            "libumad2sim.so": "libumad2sim0"}
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
SKIP = 77

# OpenSM's log: "Dec 01 15:57:34 355375 [8CABA6C0] 0x02 -> message". The
# sweep banners ("*** INITIATING HEAVY SWEEP ***") come on untimed lines after
# a timed one and take its time.
LOG_LINE = re.compile(r"^([A-Z][a-z]{2}) +(\d+) (\d\d):(\d\d):(\d\d) (\d{6}) \[[0-9A-Fa-f]+\] 0x[0-9a-f]{2} -> (.*)$")
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
EVENTS = [
    ("up", re.compile(r"^SUBNET UP$")),
    ("heavy", re.compile(r"INITIATING HEAVY SWEEP")),
    ("route_begin", re.compile(r"building routing with '([^']+)' routing algorithm")),
    ("route_end", re.compile(r"osm_ucast_mgr_process: (\S+) tables configured on all switches")),
    ("trap128", re.compile(r"Received Generic Notice type:\d+ num:128 ")),
    ("trap_sweep", re.compile(r"Forcing heavy sweep\. Received trap:128")),
    ("init_errors", re.compile(r"ERRORS DURING INITIALIZATION")),
    ("err", re.compile(r"\bERR [0-9A-F]{4}:")),
    # --perfmgr: a counter sweep begins; one PMA answer is processed (the
    # function trace of osm_perfmgr.c, logged only with --perfmgr).
    ("pm_begin", re.compile(r"Gathering PerfMgr stats")),
    ("pm_answer", re.compile(r"^pc_recv_process: \[$")),
]
BUSY = ("up", "heavy", "route_begin", "init_errors")
# VERBOSE (0x04) for these files only: the sweep banners, "building routing
# with" and the trap lines, without the per-port VERBOSE flood elsewhere.
VERBOSE_MODULES = ["osm_state_mgr.c", "osm_ucast_mgr.c", "osm_trap_rcv.c"]
DUMP_FILES = ["opensm-subnet.lst", "opensm.fdbs", "opensm.mcfdbs"]
# What a run writes into OUTDIR besides the directories and fabric.net
# (removed first; fabric.net may be the FABRIC given, it is overwritten when
# written from a spec).
RUN_FILES = ["result.json", "opensm.log", "opensm.out", "opensm.conf", "opensm-modules.conf",
             "ibsim.out", "ibnetdiscover.txt"]


def log(msg):
    print(msg, flush=True)


def find_program(name):
    return shutil.which(name, path=SEARCH_PATH)


def missing_packages(need):
    """'PROGRAM (package P)' for every program of `need` that is not installed."""
    out = []
    for prog in need:
        found = find_umad2sim() if prog == "libumad2sim.so" else find_program(prog)
        if not found:
            out.append("%s (Debian package %s)" % (prog, PACKAGES[prog]))
    return out


def proc_status_kb(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def proc_cpu_s(pid):
    """utime + stime of a live process, in seconds."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def log_time(mon, day, hh, mm, ss, usec, now=None):
    """Epoch seconds of an OpenSM log stamp (local time, no year: this year,
    or last year for a stamp that would lie in the future)."""
    now = time.time() if now is None else now
    year = time.localtime(now).tm_year
    for y in (year, year - 1):
        t = time.mktime((y, MONTHS.index(mon) + 1, int(day), int(hh), int(mm), int(ss), 0, 0, -1))
        if t <= now + 86400:
            return t + int(usec) / 1e6
    return t + int(usec) / 1e6


class OpensmLog:
    """OpenSM's log as it comes (fed line by line from its stdout): a list of
    (epoch s, kind, detail)."""

    def __init__(self, path):
        self.path, self.ts = path, None
        self.events = []

    def feed(self, line):
        m = LOG_LINE.match(line)
        text = line
        if m:
            self.ts = log_time(*m.groups()[:6])
            text = m.group(7)
        if self.ts is None:
            return
        for kind, rx in EVENTS:
            e = rx.search(text)
            if e:
                self.events.append((self.ts, kind, e.group(1) if e.groups() else ""))

    def since(self, t0, kinds=None):
        return [e for e in self.events if e[0] >= t0 and (kinds is None or e[1] in kinds)]


def routing_of(events):
    """Routing time, engine used and engines tried of the first routing in
    `events` (a sweep's events, oldest first)."""
    begins = [e for e in events if e[1] == "route_begin"]
    if not begins:
        return {}
    end = next((e for e in events if e[1] == "route_end" and e[0] >= begins[0][0]), None)
    tried = [e[2] for e in begins if end is None or e[0] <= end[0]]
    out = {"engines_tried": tried}
    if end is not None:
        out.update({"route_s": round(end[0] - begins[0][0], 6), "engine_used": end[2]})
    return out


def parse_link(text):
    """'"NODE"[PORT]' or 'NODE[PORT]' -> (node, port)."""
    m = re.match(r'^"?([^"\[]+)"?\[(\d+)\]$', text.strip())
    if not m:
        raise ValueError('expected "NODE"[PORT], got %r' % text)
    return m.group(1), int(m.group(2))


def ibdmchk_verdict(out, switches):
    """What ibdmchk's report says: (verdict dict, error or None). Its exit
    code is not used (1.5.7 may crash after the verdict)."""
    v = {}
    m = re.search(r"^-I- Defined (\d+) fdb entries for:(\d+) switches", out, re.M)
    if m:
        v["fdb_entries"], v["switches_read"] = int(m.group(1)), int(m.group(2))
    trav = re.search(r"Some Point to Point Traversals Failed|Fail to traverse|Dead end|Unassigned LFT", out)
    v["traversal_errors"] = trav.group(0) if trav else None
    if re.search(r"^-E- credit loops in routing", out, re.M):
        v["credit_loops"] = True
    elif re.search(r"^-I- no credit loops found", out, re.M):
        v["credit_loops"] = False
    if "credit_loops" not in v:
        return v, "ibdmchk gave no verdict"
    if v.get("switches_read") != switches:
        return v, "ibdmchk read the tables of %s of %d switches" % (v.get("switches_read", "no"), switches)
    return v, None


class Run:
    def __init__(self, a, netfile, sizing, net):
        self.a, self.netfile, self.sizing, self.net = a, netfile, sizing, net
        self.out = a.outdir
        self.sock = "osmr%d" % os.getpid()
        self.ib = self.osm = self.log = self.tap = None
        self.peak = {"opensm": 0, "ibsim": 0}
        self.res = {"fabric": a.fabric, "netfile": netfile, "engine": a.engine,
                    "switches": len(net.switches()), "cas": len(net.cas()),
                    "switch_links": len(net.switch_links()), "ibsim_args": sizing,
                    "creditloops_dumps": a.creditloops, "events": [], "findings": [], "errors": []}

    # ---------------------------------------------------------- processes

    def sample(self):
        for key, p in (("opensm", self.osm), ("ibsim", self.ib and self.ib.proc)):
            if p is not None and p.poll() is None:
                self.peak[key] = max(self.peak[key], proc_status_kb(p.pid, "VmHWM") or 0)

    def write_config(self):
        d = self.out
        modules = os.path.join(d, "opensm-modules.conf")
        with open(modules, "w") as f:
            f.writelines("%s 0x07\n" % m for m in VERBOSE_MODULES)
            if self.a.perfmgr:
                # Every level with the function trace: "pc_recv_process: ["
                # per PMA answer marks when a counter sweep's last answer
                # came (Debian's OpenSM logs no sweep time). Logging each
                # answer costs OpenSM time: its figure is an upper bound.
                f.write("osm_perfmgr.c 0xFF\n")
        conf = os.path.join(d, "opensm.conf")
        # The log goes to stdout, which this runner reads as it comes and
        # copies to OUTDIR/opensm.log; flushed per line.
        lines = ["log_file stdout", "force_log_flush TRUE",
                 "per_module_logging_file %s" % modules, "console off",
                 "sweep_on_trap TRUE", "dump_files_dir %s" % os.path.join(d, "dump"),
                 # Files under OUTDIR that do not exist: OpenSM's defaults,
                 # whatever /etc/opensm holds.
                 "partition_config_file %s" % os.path.join(d, "partitions.conf"),
                 "qos_policy_file %s" % os.path.join(d, "qos-policy.conf"),
                 "prefix_routes_file %s" % os.path.join(d, "prefix-routes.conf")]
        if self.a.sweep is not None:
            lines.append("sweep_interval %d" % self.a.sweep)
        if self.a.perfmgr:
            lines += ["perfmgr TRUE", "perfmgr_sweep_time_s %d" % self.a.perfmgr]
        lines += [kv.replace("=", " ", 1) for kv in self.a.conf or []]
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        return conf

    def start(self):
        self.ib = Ibsim(self.netfile, self.sizing, self.out, self.sock)
        self.ib.start(timeout=self.a.timeout)
        self.res["ibsim_cmd"] = "ibsim -s %s %s" % (" ".join(self.sizing), self.netfile)
        conf = self.write_config()
        flags = 0x03 | (0x40 if self.a.creditloops else 0)
        logpath = os.path.join(self.out, "opensm.log")
        cmd = [find_program("opensm"), "-f", "stdout", "-D", "0x%02x" % flags, "-F", conf,
               "-R", self.a.engine, "--dump_files_dir", os.path.join(self.out, "dump")]
        self.res["opensm_cmd"] = " ".join(cmd)
        env = dict(preload_env(self.sock), OSM_TMP_DIR=os.path.join(self.out, "tmp"),
                   OSM_CACHE_DIR=os.path.join(self.out, "cache"))
        self.log = OpensmLog(logpath)
        self.t_start = time.time()
        # A working directory of its own: umad2sim keeps per-pid files there
        # (ibsim_helpers.client_cwd).
        self.osm_cwd = client_cwd(self.out)
        with open(os.path.join(self.out, "opensm.out"), "w") as err:
            self.osm = track(subprocess.Popen(cmd, env=env, cwd=self.osm_cwd, stdin=subprocess.DEVNULL,
                                              stdout=subprocess.PIPE, stderr=err))
        self.tap = Tap(self.osm.stdout, logpath, keep=False, on_line=self.log.feed)

    def stop(self):
        self.sample()
        if self.osm is not None:
            stop(self.osm, timeout=20, sig=signal.SIGTERM)
            self.tap.close()
            shutil.rmtree(self.osm_cwd, ignore_errors=True)
        if self.ib is not None:
            self.ib.stop()

    def alive(self):
        """RuntimeError when OpenSM has closed its output (it exits) or ibsim
        has exited."""
        if self.tap.eof:
            rc = wait_exit(self.osm, 10)
            raise RuntimeError("opensm exited (rc %s), see %s" % (rc, os.path.join(self.out, "opensm.out")))
        if self.ib.proc.poll() is not None:
            raise RuntimeError("ibsim exited (rc %s), see %s" % (self.ib.proc.returncode,
                                                                os.path.join(self.out, "ibsim.out")))

    # ---------------------------------------------------------- waiting
    # OpenSM's log lines arrive on the tap's thread; these wait on it (a
    # new line wakes them), never on a clock, except for what --quiet means.

    def wait_up(self, t0, timeout):
        """The first SUBNET UP logged at or after t0, or None at the deadline."""
        ups = self.tap.wait(lambda: self.log.since(t0, ("up",)), timeout)
        if ups:
            return ups[0]
        self.alive()
        return None

    def settle(self, t0, timeout):
        """Waits until the last sweep activity since t0 is a SUBNET UP that is
        --quiet seconds old; returns it (None at the deadline). Woken by each
        new log line, and at the moment the last SUBNET UP turns --quiet s
        old."""
        end = time.time() + timeout
        while True:
            busy = self.log.since(t0, BUSY)
            now = time.time()
            if busy and busy[-1][1] == "up" and now - busy[-1][0] >= self.a.quiet:
                return busy[-1]
            if now >= end:
                return None
            wake = busy[-1][0] + self.a.quiet if busy and busy[-1][1] == "up" else end
            seen = len(self.log.events)
            if not self.tap.wait(lambda: len(self.log.events) > seen, min(wake, end) - now):
                self.alive()

    def perfmgr_sweeps(self, count):
        """Waits for `count` + 1 counter sweeps to begin (so `count` have
        ended) and returns, per sweep, the time from its start to its last
        PMA answer and the answers processed."""
        want = count + 1
        ok = self.tap.wait(lambda: len(self.log.since(self.t_start, ("pm_begin",))) >= want,
                           want * self.a.perfmgr + 120)
        if not ok:
            self.alive()
            raise RuntimeError("OpenSM's perfmgr began fewer than %d counter sweeps" % want)
        events = self.log.since(self.t_start, ("pm_begin", "pm_answer"))
        begins = [i for i, e in enumerate(events) if e[1] == "pm_begin"][:want]
        out = []
        for i, j in zip(begins, begins[1:]):
            answers = [e for e in events[i + 1:j] if e[1] == "pm_answer"]
            out.append({"sweep_s": round(answers[-1][0] - events[i][0], 4) if answers else None,
                        "answers": len(answers)})
        return out

    # ---------------------------------------------------------- checks

    def diag(self, args, timeout=120):
        cwd = client_cwd(self.out)
        try:
            p = subprocess.run([find_program(args[0])] + args[1:], env=preload_env(self.sock),
                               cwd=cwd, capture_output=True, text=True, timeout=timeout)
            return p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            return 124, "timed out after %s s" % timeout
        finally:
            shutil.rmtree(cwd, ignore_errors=True)

    def tracert(self, n):
        rc, out = self.diag(["ibnetdiscover", "-p"])
        with open(os.path.join(self.out, "ibnetdiscover.txt"), "w") as f:
            f.write(out)
        # "CA    12 1 0x0002c90100000009 4x QDR - SW ...": LID, port, port GUID
        ca = {}
        for line in out.splitlines():
            f = line.split()
            if len(f) > 3 and f[0] == "CA":
                ca[(f[3], f[2])] = int(f[1])
        want = sum(len(self.net.nodes[c]["links"]) for c in self.net.cas())
        lids = sorted(set(v for v in ca.values() if v))
        r = {"ca_ports": len(ca), "ca_ports_in_file": want, "ca_ports_with_lid": len(lids)}
        if rc != 0 or not ca:
            self.res["errors"].append("ibnetdiscover -p failed (rc %d): %s" % (rc, out.strip()[-200:]))
            return r
        if len(lids) != want:
            self.res["findings"].append("%d of %d CA ports have a LID" % (len(lids), want))
        rng = random.Random(self.a.seed)
        pairs = [tuple(rng.sample(lids, 2)) for _ in range(n)] if len(lids) > 1 else []
        failed = []
        for s, d in pairs:
            rc, out = self.diag(["ibtracert", str(s), str(d)], timeout=60)
            if rc != 0 or "To ca" not in out:
                failed.append("%d->%d" % (s, d))
        r.update({"tracert_pairs": len(pairs), "tracert_failed": failed})
        if failed:
            self.res["findings"].append("ibtracert failed for %d of %d pairs: %s"
                                        % (len(failed), len(pairs), " ".join(failed[:8])))
        return r

    def creditloops(self, tag):
        """Copies OpenSM's dump files to OUTDIR/dumps-TAG and runs ibdmchk there."""
        src, d = os.path.join(self.out, "dump"), os.path.join(self.out, "dumps-" + tag)
        os.makedirs(d, exist_ok=True)
        for name in DUMP_FILES:
            if not os.path.exists(os.path.join(src, name)):
                self.res["errors"].append("%s: OpenSM wrote no %s" % (tag, name))
                return None
            shutil.copy(os.path.join(src, name), d)
        args = [find_program("ibdmchk"), "-s", DUMP_FILES[0], "-f", DUMP_FILES[1], "-m", DUMP_FILES[2]]
        try:
            p = subprocess.run(args, cwd=d, capture_output=True, text=True, timeout=self.a.timeout)
            out = p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            self.res["errors"].append("%s: ibdmchk timed out" % tag)
            return None
        with open(os.path.join(d, "ibdmchk.out"), "w") as f:
            f.write(out)
        v, err = ibdmchk_verdict(out, len(self.net.switches()))
        v["report"] = os.path.join(d, "ibdmchk.out")
        if err:
            self.res["errors"].append("%s: %s, see %s" % (tag, err, v["report"]))
        if v.get("credit_loops"):
            self.res["findings"].append("%s: ibdmchk found credit loops in OpenSM's tables" % tag)
        if v["traversal_errors"]:
            self.res["findings"].append("%s: ibdmchk: %s" % (tag, v["traversal_errors"]))
        return v

    # ---------------------------------------------------------- the run

    def cable_event(self, cmd):
        """A console command (Unlink/ReLink) and OpenSM's reaction to it."""
        cpu0 = proc_cpu_s(self.osm.pid)
        t0 = time.time()
        self.ib.console(cmd)
        ev = {"cmd": cmd}
        first = self.wait_up(t0, self.a.event_timeout)
        last = first and self.settle(t0, self.a.event_timeout)
        if not last:
            ev["error"] = "no SUBNET UP within %s s" % self.a.event_timeout
            self.res["errors"].append("%s: %s" % (cmd, ev["error"]))
            return ev
        evs = self.log.since(t0)
        heavy = [e for e in evs if e[1] == "heavy" and e[0] <= last[0]]
        forced = [e for e in evs if e[1] == "trap_sweep"]
        ev.update({"first_up_s": round(first[0] - t0, 4), "last_up_s": round(last[0] - t0, 4),
                   "trap128": any(e[1] == "trap128" for e in evs),
                   "trap_forced_sweep": bool(forced and heavy and forced[0][0] <= heavy[0][0]),
                   "heavy_sweep_starts": len(heavy), "opensm_cpu_s": round(proc_cpu_s(self.osm.pid) - cpu0, 3)})
        ev.update(routing_of(evs))
        return ev

    def main(self):
        a = self.a
        try:
            self.start()
            up = self.wait_up(self.t_start, a.timeout)
            if up is None:
                raise RuntimeError("no SUBNET UP within %s s, see %s" % (a.timeout, self.log.path))
            self.res["up_s"] = round(up[0] - self.t_start, 4)
            self.res["opensm_cpu_s"] = proc_cpu_s(self.osm.pid)
            self.res.update(routing_of([e for e in self.log.since(self.t_start) if e[0] <= up[0]]))
            if "route_s" not in self.res:
                self.res["errors"].append("no routing time in OpenSM's log (%s)" % self.log.path)
            settled = self.settle(self.t_start, a.timeout)
            if settled is None:
                raise RuntimeError("OpenSM did not settle within %s s" % a.timeout)
            self.res["settled_s"] = round(settled[0] - self.t_start, 4)
            if a.perfmgr:
                self.res["perfmgr_sweeps"] = self.perfmgr_sweeps(3)
            if a.tracert:
                self.res["tracert"] = self.tracert(a.tracert)
            if a.creditloops:
                self.res["creditloops_up"] = self.creditloops("up")
            link = parse_link(a.unlink) if a.unlink else pick_link(self.net)
            if a.cycles and link is None:
                self.res["errors"].append("no switch-to-switch link to Unlink")
            elif a.cycles:
                self.res["unlink"] = "%s[%d]" % link[:2]
                for i in range(a.cycles):
                    ev = self.cable_event('Unlink "%s"[%d]' % link[:2])
                    self.res["events"].append(ev)
                    if "error" in ev:
                        break
                    if i == 0 and a.creditloops:
                        self.res["creditloops_unlink"] = self.creditloops("unlink")
                    ev = self.cable_event('ReLink "%s"[%d]' % link[:2])
                    self.res["events"].append(ev)
                    if "error" in ev:
                        break
                rec = [e["last_up_s"] for e in self.res["events"]
                       if e["cmd"].startswith("Unlink") and "last_up_s" in e]
                if rec:
                    self.res["recovery_s"] = round(statistics.median(rec), 4)
        except RuntimeError as e:
            self.res["errors"].append(str(e))
        finally:
            self.stop()
            if self.log is not None:
                self.res["log_err_lines"] = len([e for e in self.log.events if e[1] == "err"])
            self.res["opensm_rss_mib"] = round(self.peak["opensm"] / 1024, 1)
            self.res["ibsim_rss_mib"] = round(self.peak["ibsim"] / 1024, 1)
            if a.strict:
                self.res["errors"] += ["strict: " + f for f in self.res["findings"]]
            with open(os.path.join(self.out, "result.json"), "w") as f:
                json.dump(self.res, f, indent=1)
        return self.res


def fmt_s(v):
    if v is None:
        return "-"
    if v < 0.01:
        return "%.2f ms" % (v * 1000)
    return "%.0f ms" % (v * 1000) if v < 1 else "%.2f s" % v


def summary(r):
    s = "%s, OpenSM -R %s: " % (r["fabric"], r["engine"])
    if "up_s" in r:
        s += "SUBNET UP %s, routing %s (%s), peak RSS %.0f MiB" % (
            fmt_s(r["up_s"]), fmt_s(r.get("route_s")), r.get("engine_used", "?"), r["opensm_rss_mib"])
    if "recovery_s" in r:
        unl = [e for e in r["events"] if e["cmd"].startswith("Unlink") and "last_up_s" in e]
        s += "; Unlink %s -> reprogrammed in %s (median of %d, engine %s)" % (
            r["unlink"], fmt_s(r["recovery_s"]), len(unl), unl[0].get("engine_used", "?"))
    for tag in ("up", "unlink"):
        v = r.get("creditloops_" + tag)
        if v and "credit_loops" in v:
            s += "; ibdmchk (%s): %s%s" % (tag, "credit loops" if v["credit_loops"] else "no credit loops",
                                           ", " + v["traversal_errors"] if v["traversal_errors"] else "")
    if "tracert" in r and "tracert_pairs" in r["tracert"]:
        t = r["tracert"]
        s += "; %d/%d CA ports with a LID, ibtracert %d/%d" % (
            t["ca_ports_with_lid"], t["ca_ports_in_file"], t["tracert_pairs"] - len(t["tracert_failed"]),
            t["tracert_pairs"])
    return s


def prepare_outdir(path):
    """OUTDIR, created, without what an earlier run left in it: its log would
    be read before OpenSM erases it, its cache would hand OpenSM the old LIDs."""
    path = os.path.abspath(path) if path else tempfile.mkdtemp(prefix="opensm-run-")
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if name in ("tmp", "cache", "dump") or name.startswith("dumps-"):
            shutil.rmtree(full, ignore_errors=True)
        elif name in RUN_FILES:
            os.remove(full)
    for sub in ("tmp", "cache", "dump"):
        os.makedirs(os.path.join(path, sub))
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fabric", help="ibsim net file, or a generator spec (needs --netfile-tool)")
    ap.add_argument("-R", "--engine", default="ftree", help="OpenSM's routing engine list (-R)")
    ap.add_argument("--netfile-tool", help="subnetd's interop_netfile: writes a spec as a net file, sizes ibsim")
    ap.add_argument("--outdir", help="where everything goes (default: a new /tmp/opensm-run-*)")
    ap.add_argument("--cycles", type=int, default=3, help="Unlink/ReLink cycles (0: bring-up only)")
    ap.add_argument("--unlink", help='cable to pull, "NODE"[PORT] (default: ibsim_helpers.pick_link)')
    ap.add_argument("--creditloops", action="store_true", help="ibdmchk on OpenSM's dump files")
    ap.add_argument("--tracert", type=int, default=0, metavar="N",
                    help="ibnetdiscover + ibtracert on N random CA pairs after SUBNET UP")
    ap.add_argument("--strict", action="store_true", help="findings (loops, failed traces) fail the run")
    ap.add_argument("--quiet", type=float, default=2.0, help="s without a sweep that count as settled")
    ap.add_argument("--perfmgr", type=int, default=0, metavar="S",
                    help="OpenSM's perfmgr on, a counter sweep every S s: times 3 sweeps")
    ap.add_argument("--sweep", type=int, help="OpenSM's sweep_interval in s (default OpenSM's 10; 0 = off)")
    ap.add_argument("--conf", action="append", metavar="KEY=VALUE", help="more opensm.conf settings")
    ap.add_argument("--timeout", type=float, default=1800, help="s for ibsim, SUBNET UP and checks")
    ap.add_argument("--event-timeout", type=float, default=600, help="s for OpenSM to react to a cable")
    ap.add_argument("--seed", type=int, default=1, help="ibtracert pair sample")
    a = ap.parse_args(argv)

    need = ["ibsim", "libumad2sim.so", "opensm"] + (["ibdmchk"] if a.creditloops else []) + \
        (["ibnetdiscover", "ibtracert"] if a.tracert else [])
    missing = missing_packages(need)
    if missing:
        print("SKIP: missing %s" % ", ".join(missing))
        return SKIP
    if a.unlink:
        try:
            parse_link(a.unlink)
        except ValueError as e:
            ap.error(str(e))
    if not os.path.isfile(a.fabric) and not a.netfile_tool:
        ap.error("%s is not a file; a generator spec needs --netfile-tool BUILD/bin/interop_netfile"
                 % a.fabric)
    if a.netfile_tool and not os.access(a.netfile_tool, os.X_OK):
        ap.error("--netfile-tool %s is not an executable (build the interop_netfile target)" % a.netfile_tool)

    a.outdir = prepare_outdir(a.outdir)
    if a.netfile_tool:
        try:
            netfile, sizing, _ = make_netfile(a.netfile_tool, a.fabric, os.path.join(a.outdir, "fabric.net"))
        except RuntimeError as e:
            print(e)
            return 1
    else:
        netfile = os.path.abspath(a.fabric)
    net = read_net(netfile)
    if not a.netfile_tool:
        sizing = ibsim_sizing(net)
    if a.unlink and parse_link(a.unlink)[0] not in net.nodes:
        ap.error("--unlink: no node %s in %s" % (parse_link(a.unlink)[0], netfile))

    r = Run(a, netfile, sizing, net).main()
    print(summary(r))
    for f in r["findings"]:
        print("finding: " + f)
    for e in r["errors"]:
        print("error: " + e)
    print("result: %s" % os.path.join(a.outdir, "result.json"))
    return 1 if r["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
