"""Asking the kernel: grader code run in it without a cell of the notebook's (`silently`), one
cell under a hard wall-clock bound (`execute`), and the probe after the last cell (`probe_all`): the
results the test cells recorded, by digest, then the student's code called on the cases left.
The kernel answers with plain data after a one-time marker; the grader judges it (judge/grade.py).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass

import nbformat
from byhand._core import case_digest
from byhand.i18n import N_, Msg, message_of, msg
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from autograder.run import outputs

# The probe, in two steps that each print one line per question as soon as it is ready:
# RECORDED asks for the results the lesson's test cells already computed (the cases named by their
# digests: a few bytes), PROBE calls the student's code on the cases given in full (kilobytes to
# megabytes of inputs), only for the cases RECORDED did not have. Each question of PROBE runs under
# its own wall-clock alarm (`question_timeout`): a function that never returns is stopped there, its
# line says {"stopped": seconds it ran}, and the next question is called in the same cell (nbclient's cell
# limit, raised to cover every question, is only the backstop for code that swallows the alarm).
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
import signal as _sg, time as _t
class _Stopped(BaseException):  # not an Exception: the runner's `except Exception` lets it through
    pass
def _stop(*_a):
    raise _Stopped()
_sg.signal(_sg.SIGALRM, _stop)
for _q, _cs in _j.loads({payload!r}):
    _t0 = _t.monotonic()
    try:
        try:
            _sg.setitimer(_sg.ITIMER_REAL, {limit!r})
            _r = "[" + ",".join(_rc(_q, _c, globals()) for _c in _cs) + "]"
        finally:
            _sg.setitimer(_sg.ITIMER_REAL, 0)
    except _Stopped:
        _r = _j.dumps({{"stopped": round(_t.monotonic() - _t0, 1)}})
    _say({marker!r} + _q + " " + _r)
_sg.signal(_sg.SIGALRM, _sg.SIG_DFL)
"""
)


STOPPED = N_(
    "{name} was stopped after {s} s on the grader's inputs, the limit for one question (an infinite "
    "loop, or too slow for them?)"
)


class Unresponsive(Exception):
    """The kernel neither answered nor died within twice the cell limit, even after an interrupt
    (e.g. its messaging was wrecked by a fork bomb)."""


def execute(client: NotebookClient, cell, index: int, **kwargs):
    """nbclient's execute_cell under a hard wall-clock bound of our own: nbclient waits forever for
    a reply from a kernel that is alive but no longer answers."""
    limit = 2 * client.timeout + 10

    async def bounded():
        try:
            return await asyncio.wait_for(client.async_execute_cell(cell, index, **kwargs), limit)
        except asyncio.TimeoutError:
            raise Unresponsive(
                msg("the kernel stopped answering (no reply within {s} s, even after an interrupt)", s=limit)
            ) from None

    return run_sync(bounded)()


RECORD = "import byhand._core as _bc\n_bc.record_results()\ndel _bc\n"
# each case a test cell runs stops at the limit of one question (byhand/_limits.py)
CASE_LIMIT = "import byhand._limits as _bl\n_bl.set_limit({seconds!r})\ndel _bl\n"


def silently(client: NotebookClient, code: str) -> None:
    """Run grader code in the kernel before the notebook, leaving no cell behind (a failure here
    is the notebook's own cells' business to show)."""
    cell = nbformat.v4.new_code_cell(code)
    client.nb.cells.append(cell)
    try:
        execute(client, cell, len(client.nb.cells) - 1, store_history=False)
    except Exception:  # noqa: BLE001 - without recording the probe calls the student's code
        pass
    finally:
        client.nb.cells.pop()


def kernel_died(exc: Exception) -> bool:
    return isinstance(exc, DeadKernelError) or "Kernel died" in str(exc) or "kernel died" in str(exc)


def death_reason(km) -> str:
    """Why the kernel died (a `Msg`), from its exit status when the provisioner kept it."""
    code = None
    try:
        proc = getattr(km.provisioner, "process", None)
        code = proc.poll() if proc is not None else None
    except Exception:  # noqa: BLE001
        pass
    if code is not None and code < 0:
        import signal

        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        if name in ("SIGKILL", "SIGSEGV", "SIGABRT"):
            return msg("the kernel was killed by {signal} (out of memory?)", signal=name)
        return msg("the kernel was killed by {signal}", signal=name)
    if code is not None:
        return msg("the kernel exited with status {code} (os._exit, exit() or a crash)", code=code)
    return N_("the kernel died")


def probe_all(
    client: NotebookClient, per_question: dict, result, names: dict, question_timeout: int = 30
) -> None:
    """Every question's results into `result.probe` (name -> one wire result per case), or the
    reason into `result.probe_errors`. Normally one call: the results the test cells recorded.
    Then one call for every case not recorded, and each question alone only when that call left
    it without results, so that one hanging or crashing function costs only its own question:
    at most `question_timeout` seconds of calls, then "stopped after N s" in its message."""
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
    for data in got.values():  # a case stopped at its limit in a test cell decides its question:
        stopped = next((r for r in data if r is not None and "stopped" in r), None)  # not called again
        data[:] = [stopped if r is None and stopped is not None else r for r in data]
    todo = {
        name: [i for i, r in enumerate(got[name]) if r is None] for name in per_question if None in got[name]
    }
    if todo and not answer.lost:
        left = _probe(
            client,
            {name: [per_question[name][i] for i in idx] for name, idx in todo.items()},
            result,
            limit=question_timeout,
        )
        for name, idx in todo.items():
            if name in result.probe:
                for i, r in zip(idx, result.probe.pop(name)):
                    got[name][i] = r
        for name in left:
            if result.kernel_lost:
                break
            cases = {name: per_question[name]}
            if _probe(client, cases, result, alone=True, limit=question_timeout):  # silent once: again
                result.probe_errors.pop(name, None)
                _probe(client, cases, result, alone=True, limit=question_timeout)
            if name in result.probe:
                got[name] = result.probe.pop(name)
    elif todo:
        result.kernel_lost = True
        result.probe_errors[next(iter(todo))] = _named(answer.why, next(iter(todo)))
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
    why: str = ""  # the call itself failed (a `Msg`; its field `name`: the question it was on, `_named`)
    lost: bool = False  # the kernel died or stopped answering


def _call(client: NotebookClient, code: str, payload, limit: int | None = None) -> _Answer:
    """Run one probe cell (`code` with `payload` and a fresh marker) and read its lines. `limit`:
    seconds per question (PROBE's alarm); the cell's own limit then covers every question."""
    marker = f"@@probe-{secrets.token_hex(16)}@@"
    cell = nbformat.v4.new_code_cell(code.format(payload=json.dumps(payload), marker=marker, limit=limit))
    cell.metadata[outputs.PROBE_META] = True
    client.nb.cells.append(cell)  # nbclient writes outputs back by index
    why, lost = "", False
    cell_limit = client.timeout
    if limit is not None:  # the backstop: never shorter than before, long enough for every question
        client.timeout = max(cell_limit, len(payload) * limit + 10)
    try:
        execute(client, cell, len(client.nb.cells) - 1, store_history=False)
    except Unresponsive as exc:
        why, lost = msg("the grader could not call {name}: {why}", name="{name}", why=message_of(exc)), True
    except CellTimeoutError:
        why = msg(
            "{name} did not finish on the grader's inputs within {s} s (an infinite loop, or too slow for them?)",
            name="{name}",
            s=client.timeout,
        )
    except Exception as exc:  # noqa: BLE001
        if kernel_died(exc):
            why = msg(
                "the kernel died while the grader called {name} ({why})",
                name="{name}",
                why=death_reason(client.km),
            )
            lost = True
        elif "Signature" in str(exc):
            why = msg(
                "the grader could not call {name}: the kernel's messages were garbled (did the "
                "notebook fork processes it did not wait for?)",
                name="{name}",
            )
        else:
            why = msg("the grader could not call {name}: {why}", name="{name}", why=str(exc))
    finally:
        client.timeout = cell_limit
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


def _probe(client: NotebookClient, questions: dict, result, alone: bool = False, limit: int = 30):
    """Call the student's code on `questions` (name -> cases) in one cell; results into
    `result.probe`. Several questions: returns the names left without results, to be called alone
    (a dead or unresponsive kernel is recorded against the question it was on). One question
    (`alone`): its failure goes into `result.probe_errors`, and True means the kernel answered
    nothing at all (no output, no error), worth one more call. A question stopped by its `limit`
    gets "stopped after N s" in `result.probe_errors` and is not called again."""
    answer = _call(
        client, PROBE, [[name, [c.wire() for c in cases]] for name, cases in questions.items()], limit
    )
    unread = {}
    for name, data in answer.lines.items():
        if name not in questions:
            continue
        if isinstance(data, dict) and "stopped" in data:
            result.probe_errors[name] = msg(STOPPED, name=name, s=limit)
        elif isinstance(data, list) and len(data) == len(questions[name]):
            result.probe[name] = data
        else:
            why = data if isinstance(data, str) else N_("wrong number of results")
            unread[name] = msg("the grader could not read the results of {name} ({why})", name=name, why=why)
    if not alone:
        missing = [n for n in questions if n not in result.probe and n not in unread]
        if answer.lost and missing:
            result.kernel_lost = True
            result.probe_errors[missing[0]] = _named(answer.why, missing[0])
            return []
        return [n for n in questions if n not in result.probe and n not in result.probe_errors]
    (name,) = questions
    if answer.why:  # what went wrong with the call decides, whatever it printed before
        result.probe.pop(name, None)
        result.kernel_lost = answer.lost
        result.probe_errors[name] = _named(answer.why, name)
        return False
    if name in unread:
        result.probe_errors[name] = unread[name]
        return False
    if name in result.probe_errors:  # stopped by its limit
        return False
    if name in result.probe:
        return False
    errors = answer.errors
    if errors and errors[0].get("ename") in ("KeyboardInterrupt", "CellTimeoutError"):
        why = msg(
            "{name} did not finish on the grader's inputs within {s} s (an infinite loop, or too slow for them?)",
            name=name,
            s=client.timeout,
        )
    elif errors:
        why = msg(
            "the grader could not call {name} ({error})",
            name=name,
            error=f"{errors[0].get('ename')}: {errors[0].get('evalue')}",
        )
    else:
        result.probe_errors[name] = msg("the grader could not call {name} (no answer)", name=name)
        return True
    result.probe_errors[name] = why
    return False


def _named(why, name: str):
    """A call's failure (`_Answer.why`) on the question `name`."""
    if isinstance(why, Msg) and why.msgid is not None:
        return msg(why.msgid, **{**why.fields, "name": name})
    return why.replace("{name}", name)
