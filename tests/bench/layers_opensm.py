#!/usr/bin/python3
"""Balance and routing time of subnetd's layered engine next to updn and
OpenSM's nue, dfsssp and lash, on the same net files (issue 18).

  layers_opensm.py --build BUILD_DIR [--fabric SPEC ...] [--engines nue,dfsssp,lash]
                   [--vls 8] [--cut PERCENT] [--outdir DIR] [--skip-opensm]

For every fabric (default: a 200-switch random graph, a 4x4x4 torus, a
dragonfly): `interop_netfile SPEC OUT/TAG.net` writes it as an ibsim net
file (with --cut, `layers_bench SPEC cut=PERCENT save=NET` writes it with
that share of the switch-to-switch links removed: a degraded fabric).
subnetd: `layers_bench NET engines=updn,layered,auto vls=V` routes it and
prints routes per link (LFT entries, and CA-to-CA paths next to their lower
bound), VLs, times. OpenSM, per engine: tests/opensm/opensm_runner.py NET -R
ENGINE --cycles 0 --creditloops (ibsim + OpenSM under umad2sim; nue gets
nue_max_num_vls V and QoS on, without which it routes on one VL); its
routing time and the engine that really configured the tables (a fallback
to minhop shows) come from its log, ibdmchk's credit-loop verdict from its
dumps, and its balance from `layers_bench NET lfts=OUT/.../opensm-lfts.dump`:
the same measure on OpenSM's own tables.
Prints a Markdown table and writes OUTDIR/results.json. Run it on an
otherwise quiet machine.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

import opensm_call

ROW = re.compile(r"^(\S+)\s+(\d+)\s+([0-9.]+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)"
                 r"\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+(.*)$")
DEFAULT_FABRICS = ["random:switches=200,degree=8,hosts=8,seed=1", "torus:dims=4x4x4,hosts=2",
                   "dragonfly:a=8,p=4,h=4,g=16"]


def bench_rows(bench, args):
    out = subprocess.run([bench] + args, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = {"entries_max": int(m.group(2)), "paths_max": int(m.group(4)),
                                "paths_mean": float(m.group(5)),
                                "bound": max(float(m.group(6)), float(m.group(7))),
                                "ratio": float(m.group(8)), "vls": int(m.group(9)),
                                "route_s": float(m.group(10)), "verdict": m.group(12).strip()}
    return rows, out


def opensm(net, engine, outdir, vls):
    # nue uses more than one VL only with QoS on (else it logs NUE48 and
    # routes on one); dfsssp and lash take the VLs the ports offer.
    extra = ["--creditloops", "--conf", "nue_max_num_vls=%d" % vls]
    if engine == "nue":
        extra += ["--conf", "qos=TRUE"]
    res, err = opensm_call.route(net, engine, outdir, extra)
    if err:
        res.setdefault("errors", []).append(err)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="CMake build dir with bin/interop_netfile and "
                    "bin/layers_bench")
    ap.add_argument("--fabric", action="append", help="generator spec (repeatable)")
    ap.add_argument("--engines", default="nue,dfsssp,lash", help="OpenSM's engines")
    ap.add_argument("--vls", type=int, default=8)
    ap.add_argument("--cut", type=float, default=0,
                    help="remove this %% of the switch-to-switch links first")
    ap.add_argument("--outdir", default="run/bench/layers_opensm")
    ap.add_argument("--skip-opensm", action="store_true")
    a = ap.parse_args()
    netfile_tool = os.path.join(a.build, "bin", "interop_netfile")
    bench = os.path.join(a.build, "bin", "layers_bench")
    for prog in (netfile_tool, bench):
        if not os.access(prog, os.X_OK):
            sys.exit("%s is not an executable (build it: see tests/bench/README.md)" % prog)
    os.makedirs(a.outdir, exist_ok=True)
    results = []
    for spec in a.fabric or DEFAULT_FABRICS:
        tag = re.sub(r"[^A-Za-z0-9]+", "-", spec + ("-cut%g" % a.cut if a.cut else "")).strip("-")
        net = os.path.abspath(os.path.join(a.outdir, tag + ".net"))
        if a.cut:
            subprocess.run([bench, spec, "cut=%g" % a.cut, "save=" + net, "engines=updn"],
                           check=True, capture_output=True, text=True)
        else:
            subprocess.run([netfile_tool, spec, net], check=True, capture_output=True, text=True)
        rows, text = bench_rows(bench, [net, "engines=updn,layered,auto", "vls=%d" % a.vls])
        print(text, flush=True)
        entry = {"spec": spec, "cut": " minus %g%% of links" % a.cut if a.cut else "",
                 "subnetd": rows, "opensm": {}}
        for engine in ([] if a.skip_opensm else a.engines.split(",")):
            outdir = os.path.abspath(os.path.join(a.outdir, "%s-%s" % (tag, engine)))
            res = opensm(net, engine, outdir, a.vls)
            dumps = sorted(glob.glob(os.path.join(outdir, "dumps-up", "opensm-lfts.dump")) +
                           glob.glob(os.path.join(outdir, "dump", "opensm-lfts.dump")))
            if dumps:
                osm_rows, text = bench_rows(bench, [net, "lfts=" + dumps[0], "label=" + engine])
                print(text, flush=True)
                res["balance"] = osm_rows.get(engine)
            entry["opensm"][engine] = res
        results.append(entry)
    with open(os.path.join(a.outdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("\n| fabric | routing | engine used | max paths/link | / lower bound | max LFT entries/port "
          "| VLs | routing time | credit loops |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in results:
        for name in ("updn", "layered", "auto"):
            r = e["subnetd"].get(name)
            if r:
                print("| `%s`%s | subnetd %s | %s | %d | %.2f | %d | %d | %.3f s | %s |" % (
                    e["spec"], e["cut"], name, name, r["paths_max"], r["ratio"], r["entries_max"], r["vls"],
                    r["route_s"], "none (verifier)" if r["verdict"] == "deadlock-free" else r["verdict"]))
        for name, res in e["opensm"].items():
            b = res.get("balance") or {}
            loops = res.get("creditloops_up")
            if isinstance(loops, dict):
                # ibdmchk reads no SLs of OpenSM's: every path on one VL.
                loops = ("found (all SLs as one VL)" if loops.get("credit_loops")
                         else "none" if loops.get("credit_loops") is False else "no verdict")
            print("| `%s`%s | OpenSM %s | %s | %s | %s | %s | - | %s | %s |" % (
                e["spec"], e["cut"], name, res.get("engine_used", "-"), b.get("paths_max", "-"),
                "%.2f" % b["ratio"] if b else "-", b.get("entries_max", "-"),
                "%.3f s" % res["route_s"] if res.get("route_s") else "-",
                loops if loops is not None else "; ".join(res.get("errors", []))[:120] or "-"))


if __name__ == "__main__":
    main()
