#!/usr/bin/python3
"""The SA's PathRecord rate next to OpenSM's, on the same ibsim fabric with
the same client (stdlib only).

  sa_rate_ibsim.py --bin BUILD/bin [--fabric SPEC ...] [--count N]
                   [--window W] [--outdir DIR]

For every fabric (default fat-tree:levels=3,k=16 and k=24, written as ibsim
net files by interop_netfile), each SM runs in turn on a fresh ibsim of the
file (tests/interop/sa_compare.py's runners: OpenSM -R updn, then subnetd's
daemon over umad); once it is up, `ibnetdiscover -p` gives every CA port's
LID and BUILD/bin/sa_client (libibumad, under umad2sim) sends N (default
20000) Get PathRecord by SLID/DLID for seeded random pairs of them, W
(default 16) in flight, and reports answers per second and the latency
percentiles it saw; the CPU each process used meanwhile (from /proc) gives
the SM's PathRecords per CPU-second, which the harness does not bound.

What it measures is the SA behind ibsim: every MAD crosses ibsim's socket
and its packet loop twice, so both SMs' rates are bounded by ibsim (the
SA core's own rate is tests/bench/sa_bench.cpp's). Run it on a quiet
machine. Writes OUTDIR/results.json and prints a Markdown table. Exit 77
when a program is missing.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
sys.path.insert(0, os.path.join(HERE, "..", "opensm"))
from ibsim_helpers import find_umad2sim, ibsim_sizing, netfile as make_netfile, read_net  # noqa: E402
import opensm_runner  # noqa: E402
import sa_compare  # noqa: E402

LINE = re.compile(r"paths sent (\d+) answered (\d+) errors (\d+) lost (\d+) seconds ([\d.]+) "
                  r"rate (\d+)/s p50 (\d+) us p99 (\d+) us")


def cpu_seconds(names):
    """CPU seconds (user + system) of the running processes called `names`,
    by name (one run at a time: one ibsim, one SM)."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        if comm in names:
            fields = stat[stat.rindex(")") + 2:].split()
            out[comm] = out.get(comm, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def load(cl, client, count, window):
    _, ca = sa_compare.lid_map(cl)
    lids = sorted({lid for lid, _ in ca.values() if lid})
    names = ("ibsim", "opensm", "subnetd")
    before = cpu_seconds(names)
    rc, out, err = cl.run([client, "paths", "--lids", ",".join(map(str, lids)),
                           "--count", str(count), "--window", str(window)], timeout=600)
    after = cpu_seconds(names)
    m = LINE.search(out)
    if rc != 0 or not m:
        raise RuntimeError("sa_client paths: rc %d %s %s" % (rc, out.strip(), err.strip()[-300:]))
    keys = ["sent", "answered", "errors", "lost", "seconds", "rate", "p50_us", "p99_us"]
    r = {k: float(v) if k == "seconds" else int(v) for k, v in zip(keys, m.groups())}
    r["ca_lids"] = len(lids)
    # How busy each process was while the client ran: ibsim near 100% is
    # the harness's ceiling.
    for n in names:
        if n in after:
            r["%s_cpu_pct" % n] = round(100 * (after[n] - before.get(n, 0.0)) / r["seconds"])
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the build's bin directory")
    ap.add_argument("--fabric", action="append")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--outdir")
    args = ap.parse_args()
    fabrics = args.fabric or ["fat-tree:levels=3,k=16", "fat-tree:levels=3,k=24"]
    bindir = os.path.abspath(args.bin)
    tool = os.path.join(bindir, "interop_netfile")
    client = os.path.join(bindir, "sa_client")
    subnetd = os.path.join(bindir, "subnetd")
    missing = [t for t in ("ibsim", "ibnetdiscover") if shutil.which(t) is None]
    if missing or not find_umad2sim() or opensm_runner.find_program("opensm") is None:
        print("SKIP: missing %s" % ", ".join(missing or ["umad2sim or opensm"]))
        return 77
    outdir = os.path.abspath(args.outdir or tempfile.mkdtemp(prefix="sa-rate-"))
    os.makedirs(outdir, exist_ok=True)
    results = []
    for spec in fabrics:
        work = os.path.join(outdir, re.sub(r"[^A-Za-z0-9]+", "_", spec))
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        path = os.path.join(work, "fabric.net")
        make_netfile(tool, spec, path)
        net = read_net(path)
        sizing = ibsim_sizing(net)
        a = types.SimpleNamespace(fabric=spec, subnetd=subnetd)

        def suite(cl):
            return load(cl, client, args.count, args.window)

        for sm, run in (("OpenSM", lambda: sa_compare.run_opensm(a, path, sizing, net, work, suite,
                                                                 timeout=900)),
                        ("subnetd", lambda: sa_compare.run_subnetd(a, path, sizing, work, suite,
                                                                   timeout=900))):
            r = run()
            r.update(fabric=spec, sm=sm)
            results.append(r)
            print("%s %s: %s" % (spec, sm, r), flush=True)
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("\n| fabric | SM | CA LIDs | answered | errors | lost | PathRecords/s | p50 | p99 "
          "| SM CPU | per SM CPU-s | ibsim CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        sm_cpu = r.get("opensm_cpu_pct", r.get("subnetd_cpu_pct", 0))
        per_cpu = r["answered"] / (r["seconds"] * sm_cpu / 100) if sm_cpu else 0
        print("| %s | %s | %d | %d | %d | %d | %d | %d us | %d us | %d%% | %d | %d%% |"
              % (r["fabric"], r["sm"], r["ca_lids"], r["answered"], r["errors"], r["lost"],
                 r["rate"], r["p50_us"], r["p99_us"], sm_cpu, per_cpu,
                 r.get("ibsim_cpu_pct", -1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
