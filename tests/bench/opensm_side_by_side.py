#!/usr/bin/python3
"""subnetd and OpenSM side by side on the same ibsim fabrics (stdlib only).

  opensm_side_by_side.py --bin BUILD/bin [--outdir DIR]
      [--fabric SPEC ...] [--opensm-engines ftree,updn] [--engine auto]
      [--cycles 3] [--quiet S] [--skip-opensm]

(--subnetd BIN and --netfile-tool BIN instead of --bin name the two
programs one by one.)

For every fabric (default: fat-tree:levels=2,radix=36 / levels=3,k=16 /
levels=3,k=24, written as ibsim net files by interop_netfile from
subnetd's own generator, so both SMs manage the very same file):

OpenSM, once per engine, through tests/opensm/opensm_runner.py on the same
net file (see tests/opensm/README.md): time from process start to the first
"SUBNET UP", routing time from its own log ("building routing with" ->
"tables configured"), recovery = console `Unlink` of one switch-to-switch
link until the last "SUBNET UP" it causes, peak RSS (VmHWM).

subnetd, on a fresh ibsim each (umad transport under umad2sim, empty store):
  - `subnetd --once`: wall time from process start to programmed, the phase
    times (sweep, LIDs, route, verify, program) and peak RSS it prints;
  - the daemon (`subnetd --config F`): process start -> first "subnet up"
    log line, then --cycles times: `Unlink` of the same link as OpenSM's
    (ibsim_helpers.pick_link, the runner's default too) ->
    the last "subnet up" it causes (trap 128 -> reroute -> programmed), then
    `ReLink` and settle; peak RSS (VmHWM) at the end. Periodic light sweeps
    are off (sweep.interval 0) so only the trap drives the recovery.

Writes OUTDIR/results.json and prints a Markdown table. Run it on a quiet
machine: both SMs and ibsim share the CPUs with whatever else runs.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# tests/ibsim_helpers.py and tests/opensm/opensm_runner.py, found from this
# file's place whatever the working directory.
TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(TESTS, "opensm"))
from ibsim_helpers import (Ibsim, netfile as make_netfile, pick_link, preload_env,  # noqa: E402
                           read_net, track, write_subnetd_config)
from opensm_runner import missing_packages  # noqa: E402

RUNNER = os.path.join(TESTS, "opensm", "opensm_runner.py")
DEFAULT_FABRICS = ["fat-tree:levels=2,radix=36", "fat-tree:levels=3,k=16", "fat-tree:levels=3,k=24"]
LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) ")


def log(msg):
    print(msg, flush=True)


def vm_hwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def subnetd_once(args, netfile, sizing, run, sockdir):
    """One `subnetd --once` on a fresh ibsim: wall time, phases, RSS."""
    os.makedirs(run, exist_ok=True)
    sock = "sbs%d%s" % (os.getpid(), os.path.basename(run)[:12])
    ib = Ibsim(netfile, sizing, run, sock)
    ib.start(timeout=300)
    try:
        cfg = os.path.join(run, "once.yaml")
        write_subnetd_config(cfg, args.engine, os.path.join(run, "subnetd.db"),
                             os.path.join(sockdir, "api.sock"))
        t0 = time.time()
        p = subprocess.run([args.subnetd, "--config", cfg, "--once"], env=preload_env(sock),
                           capture_output=True, text=True, timeout=1800)
        elapsed = time.time() - t0
        with open(os.path.join(run, "once.out"), "w") as f:
            f.write(p.stdout + p.stderr)
        if p.returncode != 0:
            raise RuntimeError("subnetd --once failed (rc %d): %s" % (p.returncode, p.stderr.strip()[-300:]))
        out = {"process_s": round(elapsed, 3)}
        m = re.search(r"phases \(ms\): sweep ([\d.]+), lids ([\d.]+), route ([\d.]+), verify ([\d.]+), "
                      r"program ([\d.]+), total ([\d.]+)", p.stdout)
        if m:
            out.update({k: float(v) / 1000 for k, v in zip(
                ["sweep_s", "lids_s", "route_s", "verify_s", "program_s", "bringup_s"], m.groups())})
        m = re.search(r"wall time ([\d.]+) ms, peak RSS ([\d.]+) MiB", p.stdout)
        if m:
            out["wall_s"] = float(m.group(1)) / 1000
            out["rss_mib"] = float(m.group(2))
        m = re.search(r"routing: engine (\S+),", p.stdout)
        if m:
            out["engine_used"] = m.group(1)
        m = re.search(r"sweep: (\d+) SMPs \((\d+) retries, (\d+) timeouts\)", p.stdout)
        if m:
            out["sweep_smps"], out["sweep_retries"], out["sweep_timeouts"] = map(int, m.groups())
        return out
    finally:
        ib.stop()


class DaemonLog:
    """Follows the daemon's log file: (epoch seconds, message) per line."""

    def __init__(self, path):
        self.path, self.pos, self.rest, self.events = path, 0, "", []

    def poll(self):
        try:
            with open(self.path, errors="replace") as f:
                f.seek(self.pos)
                data = f.read()
                self.pos = f.tell()
        except OSError:
            return
        data = self.rest + data
        lines = data.split("\n")
        self.rest = lines.pop()
        for line in lines:
            m = LOG_TS.match(line)
            if not m:
                continue
            ts = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            self.events.append((ts, line[m.end():]))

    def after(self, t0, rx):
        return [e for e in self.events if e[0] >= t0 - 0.002 and re.search(rx, e[1])]


UP = r"\bsubnet up\b|\breroute[d]? .*(programmed|done|complete)"
BUSY = r"\bheavy sweep\b|\btrap 128\b|\breroute"


def wait_settled(dlog, proc, t0, quiet, timeout):
    """Waits until a "subnet up" (or reroute done) after t0 is followed by
    `quiet` seconds without sweep activity; returns (first, last) up times."""
    end = time.time() + timeout
    while time.time() < end:
        dlog.poll()
        ups = dlog.after(t0, UP)
        if ups:
            last_busy = max(e[0] for e in dlog.after(t0, UP + "|" + BUSY))
            if ups[-1][0] >= last_busy and time.time() - last_busy >= quiet:
                return ups[0][0], ups[-1][0]
        if proc.poll() is not None:
            raise RuntimeError("subnetd exited (rc %s)" % proc.returncode)
        time.sleep(0.02)
    return None


def subnetd_daemon(args, netfile, sizing, run, sockdir, link):
    os.makedirs(run, exist_ok=True)
    sock = "sbd%d%s" % (os.getpid(), os.path.basename(run)[:12])
    ib = Ibsim(netfile, sizing, run, sock)
    ib.start(timeout=300)
    proc = None
    try:
        cfg = os.path.join(run, "daemon.yaml")
        write_subnetd_config(cfg, args.engine, os.path.join(run, "subnetd.db"),
                             os.path.join(sockdir, "api.sock"))
        logpath = os.path.join(run, "daemon.log")
        t0 = time.time()
        proc = track(subprocess.Popen([args.subnetd, "--config", cfg], env=preload_env(sock),
                                      stdout=open(logpath, "w"), stderr=subprocess.STDOUT))
        dlog = DaemonLog(logpath)
        up = wait_settled(dlog, proc, t0, args.quiet, 1800)
        if not up:
            raise RuntimeError("daemon: no subnet up, see %s" % logpath)
        out = {"up_s": round(up[0] - t0, 3)}
        m = dlog.after(t0, r"engine (\S+), routed in ([\d.]+) ms")
        if m:
            g = re.search(r"engine (\S+), routed in ([\d.]+) ms", m[0][1])
            out["engine_used"] = g.group(1)
            out["route_s"] = float(g.group(2)) / 1000
        out["events"] = []
        if link:
            node, port = link
            for i in range(args.cycles):
                for cmd in ('Unlink "%s"[%d]' % (node, port), 'ReLink "%s"[%d]' % (node, port)):
                    tc = time.time()
                    ib.console(cmd)
                    r = wait_settled(dlog, proc, tc, args.quiet, 600)
                    ev = {"cmd": cmd}
                    if r:
                        ev["first_up_s"] = round(r[0] - tc, 4)
                        ev["last_up_s"] = round(r[1] - tc, 4)
                    else:
                        ev["error"] = "no subnet up"
                    out["events"].append(ev)
        out["rss_mib"] = round((vm_hwm_kb(proc.pid) or 0) / 1024, 1)
        return out
    finally:
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        ib.stop()


def opensm(args, netfile, engine, run, link):
    """OpenSM on the same net file and cable, through the in-repo runner."""
    cmd = [sys.executable, args.opensm_runner, netfile, "-R", engine, "--outdir", run,
           "--cycles", str(args.cycles if link else 0), "--quiet", str(args.quiet),
           "--netfile-tool", args.netfile_tool]
    if link:
        cmd += ["--unlink", '"%s"[%d]' % link]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=7200)
    res_path = os.path.join(run, "result.json")
    if p.returncode not in (0, 1) or not os.path.exists(res_path):
        raise RuntimeError("opensm_runner.py (rc %d): %s" % (p.returncode, (p.stdout + p.stderr).strip()[-300:]))
    with open(res_path) as f:
        r = json.load(f)
    return {"up_s": r.get("up_s"), "route_s": r.get("route_s"), "engine_used": r.get("engine_used"),
            "rss_mib": r.get("opensm_rss_mib"), "error": "; ".join(r["errors"]) or None,
            "events": [{"cmd": e.get("cmd"), "first_up_s": e.get("first_up_s"),
                        "last_up_s": e.get("last_up_s")} for e in r.get("events", [])]}


def recovery(res):
    vals = [e["last_up_s"] for e in res.get("events", [])
            if e.get("cmd", "").startswith("Unlink") and e.get("last_up_s") is not None]
    return statistics.median(vals) if vals else None


def fmt_s(v):
    if v is None:
        return "–"
    if v < 0.01:
        return "%.2f ms" % (v * 1000)
    if v < 1:
        return "%.0f ms" % (v * 1000)
    return "%.2f s" % v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="build dir's bin/ with subnetd and interop_netfile")
    ap.add_argument("--subnetd", help="default: BIN/subnetd")
    ap.add_argument("--netfile-tool", help="default: BIN/interop_netfile")
    ap.add_argument("--outdir", default="side-by-side")
    ap.add_argument("--fabric", action="append", help="generator spec (repeatable)")
    ap.add_argument("--opensm-engines", default="ftree,updn")
    ap.add_argument("--engine", default="auto", help="subnetd routing engine")
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--quiet", type=float, default=2.0, help="s without sweeps that ends an event")
    ap.add_argument("--opensm-runner", default=RUNNER, help="default: the in-repo tests/opensm/opensm_runner.py")
    ap.add_argument("--skip-opensm", action="store_true")
    args = ap.parse_args()
    for name, prog in (("subnetd", "subnetd"), ("netfile_tool", "interop_netfile")):
        if getattr(args, name) is None:
            if args.bin is None:
                ap.error("give --bin BUILD/bin, or --subnetd and --netfile-tool")
            setattr(args, name, os.path.join(args.bin, prog))
        if not os.access(getattr(args, name), os.X_OK):
            ap.error("%s is not an executable (build the %s target)" % (getattr(args, name), prog))

    missing = missing_packages(["ibsim", "libumad2sim.so"] + ([] if args.skip_opensm else ["opensm"]))
    if missing:
        print("missing %s" % ", ".join(missing))
        return 2

    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    sockdir = tempfile.mkdtemp(prefix="subnetd-sbs-")
    results = []
    for spec in args.fabric or DEFAULT_FABRICS:
        tag = re.sub(r"[^A-Za-z0-9]+", "-", spec).strip("-")
        fdir = os.path.join(outdir, tag)
        os.makedirs(fdir, exist_ok=True)
        try:
            netfile, sizing, summary = make_netfile(args.netfile_tool, spec, os.path.join(fdir, tag + ".net"))
        except RuntimeError as e:
            print(e)
            return 1
        cas = int(re.search(r"cas (\d+)", summary).group(1))
        link = pick_link(read_net(netfile))
        link = link[:2] if link else None
        log("== %s: %s; ibsim %s; Unlink %s" % (spec, summary, " ".join(sizing), link))
        row = {"fabric": spec, "cas": cas, "unlink": link, "runs": {}}
        try:
            row["runs"]["subnetd --once"] = subnetd_once(args, netfile, sizing, os.path.join(fdir, "once"), sockdir)
            log("   subnetd --once: %s" % row["runs"]["subnetd --once"])
            row["runs"]["subnetd"] = subnetd_daemon(args, netfile, sizing, os.path.join(fdir, "daemon"),
                                                    sockdir, link)
            log("   subnetd daemon: %s" % row["runs"]["subnetd"])
        except RuntimeError as e:
            row["runs"]["subnetd"] = {"error": str(e)}
            log("   subnetd: %s" % e)
        if not args.skip_opensm:
            for eng in args.opensm_engines.split(","):
                try:
                    r = opensm(args, netfile, eng, os.path.join(fdir, "opensm-" + eng), link)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    r = {"error": str(e)}
                row["runs"]["OpenSM " + eng] = r
                log("   OpenSM %s: %s" % (eng, r))
        results.append(row)
        with open(os.path.join(outdir, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    shutil.rmtree(sockdir, ignore_errors=True)

    print()
    with open("/proc/loadavg") as f:
        print("load average at the end: %s" % " ".join(f.read().split()[:3]))
    print("| fabric | CAs | SM (engine) | subnet up | routing | recovery (median of %d) | peak RSS |" % args.cycles)
    print("|---|---|---|---|---|---|---|")
    for row in results:
        for name, r in row["runs"].items():
            if name == "subnetd --once":
                eng = r.get("engine_used", args.engine)
                print("| `%s` | %s | subnetd --once (%s) | %s | %s | – | %.0f MiB |" % (
                    row["fabric"], f"{row['cas']:,}", eng, fmt_s(r.get("wall_s")),
                    fmt_s(r.get("route_s")), r.get("rss_mib", 0)))
                continue
            if r.get("error") and r.get("up_s") is None:
                print("| `%s` | %s | %s | error: %s | | | |" % (row["fabric"], f"{row['cas']:,}", name, r["error"][:80]))
                continue
            eng = r.get("engine_used") or (args.engine if name == "subnetd" else name.split()[-1])
            label = "%s (%s)" % (name.split()[0], eng)
            print("| `%s` | %s | %s | %s | %s | %s | %.0f MiB |" % (
                row["fabric"], f"{row['cas']:,}", label, fmt_s(r.get("up_s")), fmt_s(r.get("route_s")),
                fmt_s(recovery(r)), r.get("rss_mib") or 0))
    print("\nresults: %s" % os.path.join(outdir, "results.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
