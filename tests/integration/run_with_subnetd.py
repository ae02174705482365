#!/usr/bin/python3
"""Runs a command against a live subnetd on a simulated fabric.

Starts `subnetd --config <temp config>` (transport sim, the given topology,
socket, store and token in a fresh temp dir) with NOTIFY_SOCKET set to a
socket of ours, waits for its READY=1 (sent once it has published its first
MASTER state, with the API socket already listening), checks that its unix
socket answers GetStatus with state MASTER, runs the command, then stops
subnetd with SIGTERM (SIGKILL if it has not exited after 5 s) and exits with
the command's status. The daemon's log is printed when anything fails.

In the command, {socket}, {addr}, {token_file}, {workdir}, {config},
{metrics} and {pid} are replaced by the unix socket path, the TCP address
(with --tcp), the bearer-token file, the temp dir, the daemon's config file
(a test may edit it and send SIGHUP to {pid}), the /metrics address (with
--metrics) and the daemon's pid.

Run with /usr/bin/python3 (the system Python has python3-grpcio). The Python
client comes from the source tree (clients/python, found from this file's
place): this script uses it, and the command gets it on PYTHONPATH.
"""

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

# tests/proc_helpers.py and clients/python, found from this file's place.
TESTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CLIENT_DIR = os.path.normpath(os.path.join(TESTS_DIR, "..", "clients", "python"))
sys.path.insert(0, TESTS_DIR)
sys.path.insert(0, CLIENT_DIR)
from proc_helpers import NotifySocket, wait_exit  # noqa: E402
from subnetd_client import Client, Error, pb  # noqa: E402


def free_tcp_port():
    # Bound and released at once; the daemon binds it a moment later.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(path, workdir, topology, tcp_addr, token_file, metrics_addr, perfmgr):
    api = [f'  socket: "{workdir}/subnetd.sock"']
    metrics = ["metrics:", f'  listen: "{metrics_addr}"'] if metrics_addr else []
    if perfmgr:
        metrics += ["perfmgr:", f"  interval: {perfmgr}"]
    if tcp_addr:
        api.append(f'  tcp: "{tcp_addr}"')
        api.append(f'  token_file: "{token_file}"')
    with open(path, "w") as f:
        f.write("\n".join([
            "fabric:",
            "  transport: sim",
            f'  topology: "{topology}"',
            "sweep:",
            "  interval: 1s",
            "api:",
            *api,
            *metrics,
            "store:",
            f'  path: "{workdir}/subnetd.db"',
            "log:",
            "  level: info",
            "",
        ]))


def wait_master(sock_path, proc, notify, timeout):
    """Waits for READY=1 from the daemon, then asks GetStatus once; returns
    None when it is MASTER, or why not."""
    if notify.wait_for("READY=1", proc, timeout) is None:
        if proc.poll() is not None:
            return f"subnetd exited with status {proc.returncode} before it was ready"
        return f"no READY=1 from subnetd within {timeout} s"
    try:
        with Client(sock_path, timeout=10) as client:
            st = client.status()
    except Error as e:
        return f"READY, but {e}"
    if st.state != pb.SM_STATE_MASTER:
        return f"READY, but state {pb.SmState.Name(st.state)} {st.message}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subnetd", required=True, help="the subnetd binary")
    ap.add_argument("--topology", default="fat-tree:levels=2,radix=8")
    ap.add_argument("--tcp", action="store_true", help="also listen on a TCP port (with a token)")
    ap.add_argument("--metrics", action="store_true", help="serve /metrics on a TCP port")
    ap.add_argument("--perfmgr-interval", default="", help="perfmgr.interval, e.g. 1s")
    ap.add_argument("--ready-timeout", type=float, default=60.0)
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given")

    # Short path: a unix socket path has at most 107 bytes.
    workdir = tempfile.mkdtemp(prefix="subnetd-it-", dir="/tmp")
    os.chmod(workdir, 0o755)
    token_file = os.path.join(workdir, "token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    tcp_addr = f"127.0.0.1:{free_tcp_port()}" if args.tcp else ""
    config = os.path.join(workdir, "subnetd.yaml")
    metrics_addr = f"127.0.0.1:{free_tcp_port()}" if args.metrics else ""
    write_config(config, workdir, args.topology, tcp_addr, token_file, metrics_addr,
                 args.perfmgr_interval)
    sock_path = os.path.join(workdir, "subnetd.sock")
    log_path = os.path.join(workdir, "subnetd.log")

    status = 1
    notify = NotifySocket(os.path.join(workdir, "notify.sock"))
    with open(log_path, "w") as log:
        proc = subprocess.Popen([args.subnetd, "--config", config], stdout=log,
                                stderr=subprocess.STDOUT, cwd=workdir,
                                env=dict(os.environ, **notify.env))
    try:
        why = wait_master(sock_path, proc, notify, args.ready_timeout)
        if why:
            print(f"run_with_subnetd: {why}", file=sys.stderr)
        else:
            subst = {"socket": sock_path, "addr": tcp_addr, "token_file": token_file,
                     "workdir": workdir, "config": config, "metrics": metrics_addr,
                     "pid": str(proc.pid)}
            argv = [a.format(**subst) for a in cmd]
            env = dict(os.environ, PYTHONPATH=CLIENT_DIR, SUBNETD_SOCKET=sock_path)
            status = subprocess.run(argv, env=env).returncode
            if status != 0:
                print(f"run_with_subnetd: {' '.join(argv)} exited with {status}", file=sys.stderr)
    finally:
        if proc.poll() is None:
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            if wait_exit(proc, 5) is not None:
                print(f"run_with_subnetd: subnetd stopped {time.monotonic() - t0:.2f} s after "
                      f"SIGTERM (status {proc.returncode})")
            else:
                print("run_with_subnetd: subnetd ignored SIGTERM for 5 s; killing it",
                      file=sys.stderr)
                proc.kill()
                proc.wait()
                status = status or 1
        if status != 0:
            with open(log_path) as log:
                lines = log.readlines()
            print(f"---- subnetd log ({log_path}), last 60 lines ----", file=sys.stderr)
            sys.stderr.writelines(lines[-60:])
        notify.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
