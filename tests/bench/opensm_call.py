"""One OpenSM routing run for the benchmarks that set OpenSM's engines next
to subnetd's: tests/opensm/opensm_runner.py on a net file, once, without
link cycles, and its result.json."""
import json
import os
import subprocess
import sys

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "opensm", "opensm_runner.py")


def route(net, engine, outdir, extra=()):
    """Runs OpenSM's `engine` on `net` (results in `outdir`). Returns
    (result dict, error text or None): the result holds what the runner
    wrote even when it failed."""
    cmd = [sys.executable, RUNNER, net, "-R", engine, "--outdir", outdir, "--cycles", "0"]
    p = subprocess.run(cmd + list(extra), capture_output=True, text=True)
    res = {}
    path = os.path.join(outdir, "result.json")
    if os.path.exists(path):
        with open(path) as f:
            res = json.load(f)
    err = None
    if p.returncode != 0:
        err = "opensm_runner.py rc %d: %s" % (p.returncode, (p.stdout + p.stderr).strip()[-400:])
    return res, err
