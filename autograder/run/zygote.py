"""Warm kernels: a process that has already imported torch, IPython and ipykernel forks each
submission's kernel, instead of every kernel paying ~2 s of imports.

The zygote never runs student code: each fork is a fresh copy of a clean, pre-imported process,
which then enters the sandbox exactly as a cold-started kernel does (`sandbox.enter`: namespaces,
its own root, an init, limits, its own uid, a clean environment) before it becomes an ipykernel.
The grader talks to the zygote over its stdin/stdout, one JSON line per request; the zygote dies
when the grading process that started it does (its stdin closes), and its kernels with it (each
sandbox dies with its parent).

Imports go one way: runner -> zygote -> sandbox (the sandbox knows nothing of how it is started).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from types import MappingProxyType

from jupyter_client.provisioning.local_provisioner import LocalProvisioner

from autograder.run import outputs, rootfs, sandbox

PRELOAD_ENV = MappingProxyType(
    {
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # ipykernel's debugger, imported once here: no warnings
    }
)


# What a kernel imports while it starts (measured: modules new in sys.modules after
# IPKernelApp.initialize in a process that had the imports of `serve`): ipykernel's debugger alone
# (debugpy, pydevd) was about 0.7 of the kernel's 1.0 s start on a loaded machine.
KERNEL_START_IMPORTS = (
    "ipykernel.debugger",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.core.oinspect",
    "IPython.extensions.storemagic",
    "IPython.utils.wildcard",
    "faulthandler",
    "pdb",
    "sqlite3",
    "tornado.platform.asyncio",
    "torch._dynamo",  # what a kernel's first TorchDispatchMode imports (lesson 10's checks): 1.2 s
)

# ---------------------------------------------------------------------------------------------
# the zygote process


def _child(spec_path: str, connection_file: str) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env = sandbox.enter(spec_path)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["ipykernel_launcher", "-f", connection_file]
    outputs.cap_kernel_streams()
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(argv=["-f", connection_file])
    os._exit(0)


def serve() -> None:
    os.environ.update(PRELOAD_ENV)
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import IPython  # noqa: F401
    import matplotlib  # noqa: F401
    import matplotlib_inline.backend_inline  # noqa: F401
    import numpy  # noqa: F401
    import torch
    import torch.nn  # noqa: F401
    import torch.nn.functional  # noqa: F401

    torch.set_num_threads(1)
    rootfs.kernel_packages()  # the checks package, whichever name it has
    for name in KERNEL_START_IMPORTS:  # what IPKernelApp would import in each kernel, after the fork
        importlib.import_module(name)

    statuses: dict = {}

    def reap():
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            statuses[pid] = os.waitstatus_to_exitcode(status)

    out = sys.stdout
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        reap()
        if req["op"] == "spawn":
            pid = os.fork()
            if pid == 0:
                try:
                    _child(req["spec"], req["connection_file"])
                finally:
                    os._exit(70)
            reply = {"pid": pid}
        elif req["op"] == "status":
            reply = {"code": statuses.pop(req["pid"], None) if req["pid"] in statuses else None}
        else:
            reply = {"error": f"unknown op {req['op']}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


# ---------------------------------------------------------------------------------------------
# the grader's side


class Zygote:
    def __init__(self, scratch: str | None = None):
        """`scratch`: a folder of the grading run's own for what the imports write (torch's
        compiler cache: `torch._dynamo` makes one), removed with the run's folder."""
        self.lock = threading.Lock()
        env = {**os.environ, **PRELOAD_ENV}
        if scratch:
            env["TORCHINDUCTOR_CACHE_DIR"] = scratch
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.run.zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=env,
        )
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError("the warm-kernel zygote did not start")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, **msg) -> dict:
        with self.lock:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the warm-kernel zygote died")
        return json.loads(line)

    def close(self):
        if self.alive():
            self.proc.stdin.close()  # the zygote exits when its pipe closes
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class ZygoteProcess:
    """What jupyter_client expects of a Popen, for a kernel forked by the zygote."""

    def __init__(self, zygote: Zygote, pid: int):
        self.zygote, self.pid, self.returncode = zygote, pid, None

    def poll(self):
        if self.returncode is None:
            try:
                self.returncode = self.zygote.request(op="status", pid=self.pid)["code"]
            except RuntimeError:
                self.returncode = -signal.SIGKILL
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, sig):
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def terminate(self):
        self.send_signal(signal.SIGTERM)


class ZygoteProvisioner(LocalProvisioner):
    zygote = None
    sandbox_spec = ""

    async def launch_kernel(self, cmd, **kwargs):
        pid = self.zygote.request(
            op="spawn", spec=self.sandbox_spec, connection_file=self.parent.connection_file
        )["pid"]
        self.process = ZygoteProcess(self.zygote, pid)
        self.pid = pid
        self.pgid = pid
        self.cwd = kwargs.get("cwd")
        return self.connection_info

    async def wait(self):
        ret = 0
        if self.process:
            while self.process.poll() is None:
                await asyncio.sleep(0.05)
            ret = self.process.returncode
            self.process = None
        return ret


if __name__ == "__main__":
    serve()
