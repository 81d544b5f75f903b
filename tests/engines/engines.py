"""Real scheduling engines for the launcher tests, started on this machine and stopped afterwards:
a single-node SLURM (Debian's slurm-wlm: munged, slurmctld and slurmd on localhost) and a Ray head."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcpworld.apps.programs import free_port
from mcpworld.env.docker.image import _apt_install

SLURM_CONF = """\
ClusterName=mcpworld-test
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
SlurmUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
NodeName={host} CPUs={cpus} RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _wait(check, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {timeout_s:.0f}s")
        time.sleep(0.3)


def _kill_pidfile(path: Path) -> None:
    """Stop the daemon whose pid file this is, and wait (briefly) until it has gone."""
    try:
        pid = int(path.read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.2)


@contextmanager
def slurm_cluster(root: Path) -> Iterator[dict[str, str]]:
    """A one-node cluster whose configuration lives in ``root``; yields the environment that points
    sbatch/squeue (and submitit through them) at it."""
    if shutil.which("slurmctld") is None or shutil.which("munged") is None:
        _apt_install("slurm-wlm", "munge")
    for folder in ("state", "spool"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    host = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=host, root=root, cpus=os.cpu_count(), ctld_port=free_port(), d_port=free_port()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    started_munge = subprocess.run(["pgrep", "-x", "munged"], capture_output=True).returncode != 0
    if started_munge:  # the authentication daemon, as its own account (its key came with the package)
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=True)
    try:
        subprocess.run(["slurmctld", "-f", str(conf)], env=env, check=True)
        subprocess.run(["slurmd", "-f", str(conf)], env=env, check=True)
        _wait(
            lambda: "idle" in subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True).stdout,
            60,
            "the SLURM node",
        )
        yield {"SLURM_CONF": str(conf)}
    finally:
        subprocess.run(["scancel", "--partition=debug"], env=env, capture_output=True)
        for daemon in ("slurmd", "slurmctld"):
            _kill_pidfile(root / f"{daemon}.pid")
        if started_munge:
            subprocess.run(["pkill", "-x", "munged"], capture_output=True)


@contextmanager
def ray_head() -> Iterator[dict[str, str]]:
    """A Ray head on this machine; yields RAY_ADDRESS for the launcher."""
    ray = str(Path(sys.executable).parent / "ray")
    port = free_port()
    subprocess.run(
        [
            ray,
            "start",
            "--head",
            f"--port={port}",
            f"--num-cpus={os.cpu_count()}",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    try:
        yield {"RAY_ADDRESS": f"127.0.0.1:{port}"}
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, timeout=120)
