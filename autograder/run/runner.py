"""Execute one submitted notebook in a sandboxed kernel, then ask that kernel for the trusted probe.

The notebook runs cell by cell with errors allowed (like nbgrader), a wall-clock limit per cell and
per notebook, and cells tagged `demo` in the lesson source skipped. After the last cell the grader
sends the probe: the cases of every question, as data. The kernel answers with plain numbers
printed after a one-time marker; the grader judges them in its own process (see grade.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import zmq
from byhand._core import case_digest
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from autograder.run import outputs, sandbox, users, zygote

# The probe, in two steps that each print one line per question as soon as it is ready:
# RECORDED asks for the results the lesson's test cells already computed (the cases named by their
# digests: a few bytes), PROBE calls the student's code on the cases given in full (kilobytes to
# megabytes of inputs), only for the cases RECORDED did not have.
_PRINT = """\
import json as _j, sys as _s
_w = getattr(type(_s.stdout).write, "__wrapped__", type(_s.stdout).write)
def _say(line):
    _w(_s.stdout, line + "\\n")
    _s.stdout.flush()
"""
RECORDED = (
    _PRINT
    + """\
from byhand._core import recorded as _rd
for _q, _ds, _ns in _j.loads({payload!r}):
    _say({marker!r} + _q + " " + _rd(_q, _ds, globals(), _ns))
"""
)
PROBE = (
    _PRINT
    + """\
from byhand._core import run_case as _rc
for _q, _cs in _j.loads({payload!r}):
    _say({marker!r} + _q + " [" + ",".join(_rc(_q, _c, globals()) for _c in _cs) + "]")
"""
)


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

    def close(self) -> None:
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
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


class Unresponsive(Exception):
    """The kernel neither answered nor died within twice the cell limit, even after an interrupt
    (e.g. its messaging was wrecked by a fork bomb)."""


def _execute(client: NotebookClient, cell, index: int, **kwargs):
    """nbclient's execute_cell under a hard wall-clock bound of our own: nbclient waits forever for
    a reply from a kernel that is alive but no longer answers."""
    limit = 2 * client.timeout + 10

    async def bounded():
        try:
            return await asyncio.wait_for(client.async_execute_cell(cell, index, **kwargs), limit)
        except asyncio.TimeoutError:
            raise Unresponsive(
                f"the kernel stopped answering (no reply within {limit} s, even after an interrupt)"
            ) from None

    return run_sync(bounded)()


RECORD = "import byhand._core as _bc\n_bc.record_results()\ndel _bc\n"


def _silently(client: NotebookClient, code: str) -> None:
    """Run grader code in the kernel before the notebook, leaving no cell behind (a failure here
    is the notebook's own cells' business to show)."""
    cell = nbformat.v4.new_code_cell(code)
    client.nb.cells.append(cell)
    try:
        _execute(client, cell, len(client.nb.cells) - 1, store_history=False)
    except Exception:  # noqa: BLE001 - without recording the probe calls the student's code
        pass
    finally:
        client.nb.cells.pop()


def _kernel_died(exc: Exception) -> bool:
    return isinstance(exc, DeadKernelError) or "Kernel died" in str(exc) or "kernel died" in str(exc)


def run(
    nb: nbformat.NotebookNode, skip: set, per_question: dict, station: Station, check_names=None
) -> RunResult:
    """Run `nb` at `station` (cells whose index is in `skip` are not executed), then probe the
    questions of `per_question` (name -> cases): see `_probe_all`. `check_names`: question -> the
    names its checks look up (a result recorded before one of them was redefined is not used)."""
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
            _silently(client, RECORD)  # the checks keep each case's result for the probe
            clock.lap("kernel start")
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code" or index in skip:
                    continue
                if time.monotonic() - start > limits.notebook_timeout:
                    result.died_at, result.death = (
                        index,
                        (f"the notebook ran past its {limits.notebook_timeout} s limit"),
                    )
                    break
                try:
                    _execute(client, cell, index)
                except CellTimeoutError:
                    result.timed_out.append(index)
                except Unresponsive as exc:
                    result.died_at, result.death = index, str(exc)
                    break
                except Exception as exc:  # noqa: BLE001 - any failure here is the submission's
                    if _kernel_died(exc):
                        result.died_at, result.death = index, _death_reason(km)
                        break
                    raise
                for out in cell.get("outputs", []):
                    if out.get("output_type") == "error":
                        result.cell_errors[index] = (out.get("ename", ""), out.get("evalue", ""))
                        if out.get("ename") in ("CellTimeoutError",) and index not in result.timed_out:
                            result.timed_out.append(index)
            clock.lap("cells")
            if result.died_at is None:
                # the probe talks to the kernel alone: whatever it forked is gone first
                users.kill_user_processes(km.sandbox_uid, keep=getattr(km.provisioner, "pid", None))
                _probe_all(client, per_question, result, check_names or {})
                clock.lap("probe")
    except Exception as exc:  # noqa: BLE001
        if result.died_at is None:
            result.died_at = -1
            result.death = _death_reason(km) if _kernel_died(exc) else f"the kernel could not run: {exc}"
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


def _death_reason(km) -> str:
    code = None
    try:
        proc = getattr(km.provisioner, "process", None)
        code = proc.poll() if proc is not None else None
    except Exception:  # noqa: BLE001
        pass
    if code is not None and code < 0:
        import signal

        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        hint = " (out of memory?)" if name in ("SIGKILL", "SIGSEGV", "SIGABRT") else ""
        return f"the kernel was killed by {name}{hint}"
    if code is not None:
        return f"the kernel exited with status {code} (os._exit, exit() or a crash)"
    return "the kernel died"


def _probe_all(client: NotebookClient, per_question: dict, result: RunResult, names: dict) -> None:
    """Every question's results into `result.probe` (name -> one wire result per case), or the
    reason into `result.probe_errors`. Normally one call: the results the test cells recorded.
    Then one call for every case not recorded, and each question alone only when that call left
    it without results, so that one hanging or crashing function costs only its own question."""
    result.probe = {}
    got = {name: [None] * len(cases) for name, cases in per_question.items()}
    asks = [
        [name, [case_digest(name, c.wire()) for c in cases], sorted(names.get(name, ()))]
        for name, cases in per_question.items()
    ]
    answer = _call(client, RECORDED, asks)
    for name, data in answer.lines.items():
        if isinstance(data, list) and len(data) == len(got[name]):
            got[name] = [r if isinstance(r, dict) else None for r in data]
    todo = {
        name: [i for i, r in enumerate(got[name]) if r is None] for name in per_question if None in got[name]
    }
    if todo and not answer.lost:
        left = _probe(
            client, {name: [per_question[name][i] for i in idx] for name, idx in todo.items()}, result
        )
        for name, idx in todo.items():
            if name in result.probe:
                for i, r in zip(idx, result.probe.pop(name)):
                    got[name][i] = r
        for name in left:
            if result.kernel_lost:
                break
            cases = {name: per_question[name]}
            if _probe(client, cases, result, alone=True):  # silent once (seen under load): again
                result.probe_errors.pop(name, None)
                _probe(client, cases, result, alone=True)
            if name in result.probe:
                got[name] = result.probe.pop(name)
    elif todo:
        result.kernel_lost = True
        result.probe_errors[next(iter(todo))] = answer.why.replace("{name}", next(iter(todo)))
    for name, data in got.items():
        if name not in result.probe_errors and None not in data:
            result.probe[name] = data
    if result.kernel_lost:
        culprit = next(n for n in per_question if n in result.probe_errors)
        for other in per_question:
            if other not in result.probe:
                result.probe_errors.setdefault(other, result.probe_errors[culprit])


@dataclass
class _Answer:
    lines: dict  # question -> its decoded line, or the reason it could not be read (a str)
    errors: list  # the cell's error outputs
    why: str = ""  # the call itself failed ("{name}": the question it was on)
    lost: bool = False  # the kernel died or stopped answering


def _call(client: NotebookClient, code: str, payload) -> _Answer:
    """Run one probe cell (`code` with `payload` and a fresh marker) and read its lines."""
    marker = f"@@probe-{secrets.token_hex(16)}@@"
    cell = nbformat.v4.new_code_cell(code.format(payload=json.dumps(payload), marker=marker))
    cell.metadata[outputs.PROBE_META] = True
    client.nb.cells.append(cell)  # nbclient writes outputs back by index
    why, lost = "", False
    try:
        _execute(client, cell, len(client.nb.cells) - 1, store_history=False)
    except Unresponsive as exc:
        why, lost = f"the grader could not call {{name}}: {exc}", True
    except CellTimeoutError:
        why = f"{{name}} did not finish on the grader's inputs within {client.timeout} s (an infinite loop?)"
    except Exception as exc:  # noqa: BLE001
        if _kernel_died(exc):
            why, lost = f"the kernel died while the grader called {{name}} ({_death_reason(client.km)})", True
        elif "Signature" in str(exc):
            why = (
                "the grader could not call {name}: the kernel's messages were garbled (did the "
                "notebook fork processes it did not wait for?)"
            )
        else:
            why = f"the grader could not call {{name}}: {exc}"
    finally:
        client.nb.cells.pop()
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    lines = {}
    for line in text.split(marker)[1:]:  # the last line of a question counts
        name, _, data = line.split("\n", 1)[0].partition(" ")
        try:
            lines[name] = json.loads(data)
        except ValueError as exc:
            lines[name] = str(exc)
    errors = [o for o in cell.outputs if o.get("output_type") == "error"]
    return _Answer(lines, errors, why, lost)


def _probe(client: NotebookClient, questions: dict, result: RunResult, alone: bool = False):
    """Call the student's code on `questions` (name -> cases) in one cell; results into
    `result.probe`. Several questions: returns the names left without results, to be called alone
    (a dead or unresponsive kernel is recorded against the question it was on). One question
    (`alone`): its failure goes into `result.probe_errors`, and True means the kernel answered
    nothing at all (no output, no error), worth one more call."""
    answer = _call(client, PROBE, [[name, [c.wire() for c in cases]] for name, cases in questions.items()])
    unread = {}
    for name, data in answer.lines.items():
        if name not in questions:
            continue
        if isinstance(data, list) and len(data) == len(questions[name]):
            result.probe[name] = data
        else:
            why = data if isinstance(data, str) else "wrong number of results"
            unread[name] = f"the grader could not read the results of {name} ({why})"
    if not alone:
        missing = [n for n in questions if n not in result.probe and n not in unread]
        if answer.lost and missing:
            result.kernel_lost = True
            result.probe_errors[missing[0]] = answer.why.replace("{name}", missing[0])
            return []
        return [n for n in questions if n not in result.probe]
    (name,) = questions
    if answer.why:  # what went wrong with the call decides, whatever it printed before
        result.probe.pop(name, None)
        result.kernel_lost = answer.lost
        result.probe_errors[name] = answer.why.replace("{name}", name)
        return False
    if name in unread:
        result.probe_errors[name] = unread[name]
        return False
    if name in result.probe:
        return False
    errors = answer.errors
    if errors and errors[0].get("ename") in ("KeyboardInterrupt", "CellTimeoutError"):
        why = f"{name} did not finish on the grader's inputs within {client.timeout} s (an infinite loop?)"
    elif errors:
        why = f"the grader could not call {name} ({errors[0].get('ename')}: {errors[0].get('evalue')})"
    else:
        result.probe_errors[name] = f"the grader could not call {name} (no answer)"
        return True
    result.probe_errors[name] = why
    return False


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
