#!/usr/bin/python3
"""Routing time of subnetd's engines next to OpenSM's, on the same net files.

  ftree_opensm_routing.py --build BUILD_DIR [--ks 24,36] [--engines ftree,updn]
                          [--outdir DIR] [--repeat 3] [--skip-opensm]

For every k: `interop_netfile "fat-tree:levels=3,k=K" OUT/ft3-kK.net` writes the
fabric as an ibsim net file (subnetd's own generator, a CA port first). Then,
per engine:
  - OpenSM: ../shared/tools/opensm/run_opensm.py NET -R ENGINE --cycles 0
    (ibsim + OpenSM under umad2sim); its routing time is route_s from its own
    log: "building routing with '<engine>'" -> "<engine> tables configured on
    all switches" (min-hop matrices, the engine's LFTs, queuing the LFT MADs);
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

HARNESS = "/work/shared/tools/opensm/run_opensm.py"
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


def opensm(net, engine, outdir):
    subprocess.run([sys.executable, HARNESS, net, "-R", engine, "--outdir", outdir, "--cycles", "0"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(outdir, "result.json")) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="CMake build dir with bin/interop_netfile and "
                    "bin/ftree_scale_bench")
    ap.add_argument("--ks", default="24,36")
    ap.add_argument("--engines", default="ftree,updn")
    ap.add_argument("--outdir", default="run/bench/opensm_routing")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-opensm", action="store_true")
    a = ap.parse_args()
    netfile_tool = os.path.join(a.build, "bin", "interop_netfile")
    bench = os.path.join(a.build, "bin", "ftree_scale_bench")
    os.makedirs(a.outdir, exist_ok=True)
    rows = []
    for k in a.ks.split(","):
        spec = "fat-tree:levels=3,k=%s" % k
        net = os.path.abspath(os.path.join(a.outdir, "ft3-k%s.net" % k))
        subprocess.run([netfile_tool, spec, net], check=True, stdout=subprocess.DEVNULL)
        for engine in a.engines.split(","):
            print("%s %s: load average %s" % (spec, engine, load_average()), flush=True)
            row = {"spec": spec, "engine": engine, "load_before": load_average(),
                   "subnetd": ours(bench, net, engine, a.repeat)}
            if not a.skip_opensm:
                res = opensm(net, engine, os.path.join(a.outdir, "k%s-%s" % (k, engine)))
                row["opensm"] = res
            rows.append(row)
    with open(os.path.join(a.outdir, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("\n| fabric | CAs | engine | OpenSM routing | subnetd routing | ratio | subnetd verify |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        cas = int(r["spec"].split("k=")[1]) ** 3 // 4
        ours_s = r["subnetd"]["route_s"]
        osm = r.get("opensm", {})
        osm_s = osm.get("route_s")
        ratio = "%.0fx" % (osm_s / ours_s) if osm_s and ours_s > 0 else "-"
        print("| `%s` | %d | %s | %s | %.3f s | %s | %.3f s (%s) |" % (
            r["spec"], cas, r["engine"], "%.2f s" % osm_s if osm_s else "-", ours_s, ratio,
            r["subnetd"]["verify_s"], r["subnetd"]["verdict"]))


if __name__ == "__main__":
    main()
