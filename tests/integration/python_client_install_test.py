#!/usr/bin/python3
"""Installs the Python client as a user would and runs its test against subnetd.

usage: python_client_install_test.py --subnetd BIN --version V
                                     [--topology SPEC --switches N --cas N]

What a management node without a package index does (clients/python/README.md):
  1. python3 -m venv --system-site-packages VENV   (Debian's python3-grpcio and
     python3-protobuf stay visible in it)
  2. VENV/bin/python -m pip install --no-build-isolation --no-deps ./clients/python
     (setuptools and wheel from Debian; --no-index here proves no index is asked)
then run_with_subnetd.py --tcp runs python_client_wrapper_test.py with the
venv's python and --installed V: the package must import from the venv's
site-packages, be version V (the project's), and pass every wrapper check.

The package is copied to a temp dir first: pip builds in the tree it is
given (build/, *.egg-info), and the checkout stays as it was. The user's
and the machine's pip configuration (PIP_* variables, pip.conf) are left
out, as on a fresh node. Exits with the wrapper test's status, or 1 when the
install fails.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "clients", "python"))


def run(argv, env=None):
    print("$ " + " ".join(argv), flush=True)
    return subprocess.run(argv, env=env).returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subnetd", required=True, help="the subnetd binary")
    ap.add_argument("--version", required=True, help="the project's version")
    ap.add_argument("--topology", default="fat-tree:levels=2,radix=8")
    # fat-tree:levels=2,radix=8: 8 leaves and 4 spines, 4 CAs on each leaf.
    ap.add_argument("--switches", type=int, default=12)
    ap.add_argument("--cas", type=int, default=32)
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="subnetd-pyinstall-")
    try:
        src = os.path.join(work, "python")
        shutil.copytree(CLIENT_DIR, src, ignore=shutil.ignore_patterns(
            "__pycache__", "build", "*.egg-info"))
        venv = os.path.join(work, "venv")
        python = os.path.join(venv, "bin", "python")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1",
                   PIP_NO_INPUT="1")
        if run([sys.executable, "-m", "venv", "--system-site-packages", venv], env) != 0:
            print("FAIL: python3 -m venv (Debian: python3-venv)")
            return 1
        if run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                "--no-index", src], env) != 0:
            print("FAIL: pip install --no-build-isolation --no-deps ./clients/python "
                  "(Debian: python3-pip, python3-setuptools, python3-wheel)")
            return 1
        # -E: the venv's python ignores PYTHONPATH, which run_with_subnetd.py
        # points at the source tree, so the test sees only the installed copy.
        return run([sys.executable, os.path.join(HERE, "run_with_subnetd.py"),
                    "--subnetd", a.subnetd, "--topology", a.topology, "--tcp", "--",
                    python, "-E", os.path.join(HERE, "python_client_wrapper_test.py"),
                    "--socket", "{socket}", "--addr", "{addr}", "--token-file", "{token_file}",
                    "--switches", str(a.switches), "--cas", str(a.cas),
                    "--installed", a.version])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
