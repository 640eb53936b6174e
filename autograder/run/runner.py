"""Execute one submitted notebook in a sandboxed kernel, then ask that kernel for the trusted probe.

The notebook runs cell by cell with errors allowed (like nbgrader), a wall-clock limit per cell and
per notebook, and cells tagged `demo` in the lesson source skipped. After the last cell the grader
sends the probe (probe.py): the cases of every question, as data. The kernel answers with plain
numbers printed after a one-time marker; the grader judges them in its own process (see grade.py).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import zmq
from byhand.i18n import message_of, msg
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

from autograder.run import outputs, probe, sandbox, users, zygote


class Station:
    """One grader's place to run kernels, made once per grading process (a pool worker, a Dask
    worker, the command itself when it grades serially) and used for every submission it grades:
    its limits, work folder and slot, the paths its kernels must not see, the sandbox uid it holds
    and its warm-kernel zygote (restarted if it died). `close()` gives the uid and the zygote back."""

    def __init__(self, limits: sandbox.Limits, base: Path, slot: int = 0, hide=()):
        self.limits, self.base, self.slot, self.hide = limits, Path(base), slot, list(hide)
        self._uid: users.UidClaim | None = None
        self._zygote: zygote.Zygote | None = None

    def uid(self) -> int:
        """The sandbox uid of this station's kernels (-1 where the OS does not allow isolation)."""
        if not sandbox.isolating(self.limits):
            return -1
        if self._uid is None:
            self._uid = users.UidClaim(self.limits)
        return self._uid.uid

    def kernels(self) -> zygote.Zygote | None:
        """The zygote that forks this station's kernels, or None for cold starts."""
        if not self.limits.warm_kernels:
            return None
        if self._zygote is None or not self._zygote.alive():
            self._zygote = zygote.Zygote(str(self.base / "zygote-cache"))
        return self._zygote

    def forget_kernels(self) -> None:
        """Stop the zygote: the next kernel comes from a fresh one (or cold, without warm kernels)."""
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None

    def close(self) -> None:
        self.forget_kernels()
        if self._uid is not None:
            self._uid.release()
            self._uid = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class RunResult:
    nb: nbformat.NotebookNode
    cell_errors: dict = field(default_factory=dict)  # cell index -> (ename, evalue)
    timed_out: list = field(default_factory=list)  # cell indices interrupted by the cell limit
    died_at: int | None = None  # index of the cell during which the kernel died
    death: str = ""
    probe: dict | None = None  # question -> wire results, one per case
    probe_errors: dict = field(default_factory=dict)  # question -> why its probe gave nothing
    probe_error: str = ""
    kernel_lost: bool = False  # the kernel died or stopped answering during a probe: no more probes
    seconds: float = 0.0
    steps: dict = field(default_factory=dict)  # step -> seconds: kernel start, cells, probe, kernel stop
    started: bool = False  # the kernel answered: a failure before that is the grader's, not the notebook's


# A kernel that does not answer within its startup limit (a loaded machine, a zygote that died) has
# run none of the notebook: try again with a fresh one before the notebook is called ungradable.
KERNEL_START_TRIES = 3


class SandboxKernelManager(AsyncKernelManager):
    """A KernelManager whose kernel starts in the sandbox, over unix sockets: warm (forked by the
    zygote, through its provisioner) or cold (`python -m autograder.run.sandbox SPEC -- KERNEL_CMD`)."""

    sandbox_spec: str = ""
    sandbox_uid: int = -1
    zygote = None  # a warm kernel factory (autograder/zygote.py), or None for a cold start

    async def _async_pre_start_kernel(self, **kw):
        if self.zygote is not None and self.provisioner is None:
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
            self.provisioner = zygote.ZygoteProvisioner(
                kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self
            )
            self.provisioner.zygote = self.zygote
            self.provisioner.sandbox_spec = self.sandbox_spec
        return await super()._async_pre_start_kernel(**kw)

    def client(self, **kwargs):
        kc = super().client(**kwargs)
        kc.context.setsockopt(zmq.MAXMSGSIZE, outputs.MAX_MESSAGE_BYTES)  # its sockets refuse larger ones
        return kc

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        if self.sandbox_uid >= 0 and os.path.exists(self.connection_file):
            os.chown(self.connection_file, self.sandbox_uid, self.sandbox_uid)  # ipykernel rewrites it
        return [sys.executable, "-m", "autograder.run.sandbox", self.sandbox_spec, "--", *cmd]


def run(
    nb: nbformat.NotebookNode, skip: set, per_question: dict, station: Station, check_names=None
) -> RunResult:
    """Run `nb` at `station` (cells whose index is in `skip` are not executed), then probe the
    questions of `per_question` (name -> cases): see `_probe_all`. `check_names`: question -> the
    names its checks look up (a result recorded before one of them was redefined is not used).
    A kernel that never answers is replaced, up to KERNEL_START_TRIES kernels in all."""
    for attempt in range(1, KERNEL_START_TRIES + 1):
        result = _run_once(nb, skip, per_question, station, check_names)
        if result.started:
            return result
        station.forget_kernels()  # the zygote may be what did not answer
        time.sleep(attempt)
    return result


def _run_once(nb, skip, per_question, station: Station, check_names) -> RunResult:
    limits = station.limits
    sandbox.warn_if_degraded(limits)
    uid = station.uid()
    workdir = users.prepare_workdir(station.base, station.slot, uid)
    stage = station.base / f"stage{station.slot}"
    stage.mkdir(exist_ok=True)
    stage.chmod(0o700)
    spec = sandbox.write_spec(workdir, uid, limits, station.hide, stage)
    km = SandboxKernelManager(
        kernel_name="python3",
        transport="ipc",
        ip=str(workdir / "kernel"),
        connection_file=str(workdir / "kernel.json"),
    )
    km.sandbox_spec = str(spec)
    km.sandbox_uid = uid
    km.zygote = station.kernels()
    client = outputs.CappedClient(
        nb,
        km=km,
        timeout=limits.cell_timeout,
        allow_errors=True,
        interrupt_on_timeout=True,
        startup_timeout=60,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
        iopub_timeout=5,
        shutdown_kernel="immediate",
    )
    result = RunResult(nb=nb)
    start = time.monotonic()
    clock = _Clock(result.steps)
    try:
        with client.setup_kernel(cwd=str(workdir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            users.seal(workdir, uid)  # its sockets are bound: from now on it writes to its tmpfs only
            # the checks keep each case's result for the probe, and stop a case at a question's limit
            per_q = min(limits.question_timeout, limits.cell_timeout)  # a question: never over a cell
            probe.silently(client, probe.RECORD + probe.CASE_LIMIT.format(seconds=per_q))
            result.started = True
            clock.lap("kernel start")
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code" or index in skip:
                    continue
                if time.monotonic() - start > limits.notebook_timeout:
                    result.died_at, result.death = (
                        index,
                        msg("the notebook ran past its {s} s limit", s=limits.notebook_timeout),
                    )
                    break
                began = time.monotonic()
                try:
                    probe.execute(client, cell, index)
                except CellTimeoutError:
                    result.timed_out.append(index)
                except probe.Unresponsive as exc:
                    result.died_at, result.death = index, message_of(exc)
                    break
                except Exception as exc:  # noqa: BLE001 - any failure here is the submission's
                    if probe.kernel_died(exc):
                        result.died_at, result.death = index, probe.death_reason(km)
                        break
                    raise
                for out in cell.get("outputs", []):
                    if out.get("output_type") == "error":
                        result.cell_errors[index] = (out.get("ename", ""), out.get("evalue", ""))
                        # nbclient interrupts a cell past its limit (interrupt_on_timeout): the cell
                        # then shows a bare KeyboardInterrupt, which the elapsed time tells apart
                        stopped = out.get("ename") == "CellTimeoutError" or (
                            out.get("ename") == "KeyboardInterrupt"
                            and time.monotonic() - began >= limits.cell_timeout
                        )
                        if stopped and index not in result.timed_out:
                            result.timed_out.append(index)
            clock.lap("cells")
            if result.died_at is None:
                # the probe talks to the kernel alone: whatever it forked is gone first
                users.kill_user_processes(km.sandbox_uid, keep=getattr(km.provisioner, "pid", None))
                # a question's calls: never longer than a cell (before, a question alone had the cell limit)
                probe.probe_all(client, per_question, result, check_names or {}, per_q)
                clock.lap("probe")
    except Exception as exc:  # noqa: BLE001
        if result.died_at is None:
            result.died_at = -1
            result.death = (
                probe.death_reason(km)
                if probe.kernel_died(exc)
                else msg("the kernel could not run: {error}", error=str(exc))
            )
    finally:
        users.kill_user_processes(km.sandbox_uid)
        _release(client, km)
        clock.lap("kernel stop")
        result.seconds = time.monotonic() - start
    return result


class _Clock:
    """Seconds between laps, added into `steps` under each lap's name (`make bench` prints them)."""

    def __init__(self, steps: dict):
        self.steps, self.t = steps, time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.steps[name] = self.steps.get(name, 0.0) + now - self.t
        self.t = now


def _release(client: NotebookClient, km) -> None:
    """Close what one run opened in the grader: its ZeroMQ contexts. Left to the garbage collector
    they leaked about 20 descriptors a notebook, and a worker ran out of them after some 50."""
    kc = getattr(client, "kc", None)
    if kc is not None:
        with contextlib.suppress(Exception):
            kc.stop_channels()
    for ctx in {id(c): c for c in (getattr(kc, "context", None), getattr(km, "context", None)) if c}.values():
        if not ctx.closed:
            with contextlib.suppress(Exception):
                ctx.destroy(linger=0)
