#!/usr/bin/python3
"""Routing time of subnetd's engines next to OpenSM's, on the same net files.

  ftree_opensm_routing.py --build BUILD_DIR [--ks 24,36] [--fabric SPEC ...]
                          [--engines ftree,updn] [--outdir DIR] [--repeat 3]
                          [--skip-opensm]

For every k (or every --fabric spec instead): `interop_netfile
"fat-tree:levels=3,k=K" OUT/ft3-kK.net` writes the fabric as an ibsim net
file (subnetd's own generator, a CA port first). Then, per engine:
  - OpenSM: tests/opensm/opensm_runner.py NET -R ENGINE --cycles 0 (ibsim +
    OpenSM under umad2sim, see tests/opensm/README.md); its routing time is
    route_s from its own log: "building routing with '<engine>'" ->
    "<engine> tables configured on all switches" (min-hop matrices, the
    engine's LFTs, queuing the LFT MADs);
  - subnetd: `ftree_scale_bench NET engines=ENGINE cuts=0` reads the same net
    file, assigns LIDs and times the engine's compute() (switch graph, hop
    tables, every LFT; the best of --repeat runs), then verifies the tables.
Prints a Markdown table with both times and the ratio, and writes
OUTDIR/results.json. OpenSM is CPU-heavy (k=36 runs for about a minute): run
it when the machine is otherwise quiet; the load average is printed.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import opensm_call

ROUTE = re.compile(r"^\s+(\S+)\s+route\s+([0-9.]+) s\s+verify\s+([0-9.]+) s.*?max (\d+) mean ([0-9.]+)"
                   r" ideal ([0-9.]+)\s+(\S.*)$")


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def ours(bench, net, engine, repeat):
    best = None
    for _ in range(repeat):
        out = subprocess.run([bench, net, "engines=" + engine, "cuts=0"], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = ROUTE.match(line)
            if m and m.group(1) == engine:
                run = {"route_s": float(m.group(2)), "verify_s": float(m.group(3)),
                       "max_routes": int(m.group(4)), "mean_routes": float(m.group(5)),
                       "verdict": m.group(7)}
                if best is None or run["route_s"] < best["route_s"]:
                    best = run
    if best is None:
        sys.exit("ftree_scale_bench printed no %s line for %s" % (engine, net))
    return best


def opensm(net, engine, outdir, netfile_tool):
    res, err = opensm_call.route(net, engine, outdir, ["--netfile-tool", netfile_tool])
    if err:
        sys.exit(err)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="CMake build dir with bin/interop_netfile and "
                    "bin/ftree_scale_bench")
    ap.add_argument("--ks", default="24,36", help="3-level fat trees fat-tree:levels=3,k=K")
    ap.add_argument("--fabric", action="append", help="generator spec instead of --ks (repeatable)")
    ap.add_argument("--engines", default="ftree,updn")
    ap.add_argument("--outdir", default="run/bench/opensm_routing")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-opensm", action="store_true")
    a = ap.parse_args()
    netfile_tool = os.path.join(a.build, "bin", "interop_netfile")
    bench = os.path.join(a.build, "bin", "ftree_scale_bench")
    os.makedirs(a.outdir, exist_ok=True)
    rows = []
    for prog in (netfile_tool, bench):
        if not os.access(prog, os.X_OK):
            sys.exit("%s is not an executable (build it: see tests/bench/README.md)" % prog)
    specs = a.fabric or ["fat-tree:levels=3,k=%s" % k for k in a.ks.split(",")]
    for spec in specs:
        tag = re.sub(r"[^A-Za-z0-9]+", "-", spec.replace("fat-tree:levels=3,k=", "ft3-k")).strip("-")
        net = os.path.abspath(os.path.join(a.outdir, tag + ".net"))
        made = subprocess.run([netfile_tool, spec, net], check=True, capture_output=True, text=True)
        cas = int(re.search(r"cas (\d+)", made.stdout).group(1))
        for engine in a.engines.split(","):
            print("%s %s: load average %s" % (spec, engine, load_average()), flush=True)
            row = {"spec": spec, "cas": cas, "engine": engine, "load_before": load_average(),
                   "subnetd": ours(bench, net, engine, a.repeat)}
            if not a.skip_opensm:
                row["opensm"] = opensm(net, engine, os.path.join(a.outdir, "%s-%s" % (tag, engine)),
                                       netfile_tool)
            rows.append(row)
    with open(os.path.join(a.outdir, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("\n| fabric | CAs | engine | OpenSM routing | subnetd routing | ratio | subnetd verify |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        ours_s = r["subnetd"]["route_s"]
        osm = r.get("opensm", {})
        osm_s = osm.get("route_s")
        ratio = "%.0fx" % (osm_s / ours_s) if osm_s and ours_s > 0 else "-"
        print("| `%s` | %d | %s | %s | %.3f s | %s | %.3f s (%s) |" % (
            r["spec"], r["cas"], r["engine"], "%.3f s" % osm_s if osm_s else "-", ours_s, ratio,
            r["subnetd"]["verify_s"], r["subnetd"]["verdict"]))


if __name__ == "__main__":
    main()
