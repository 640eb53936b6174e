"""Running one case where the student's code lives (`run_case`) and, at grading only, keeping its
result under a digest of its question and inputs (`record_results`, `case_digest`, `recorded`),
so the grader's probe reads what the lesson's test cells computed instead of calling the answer
again. The recording state (`_RECORDED`, `_RECORDING`) lives here and only here.
"""

from __future__ import annotations

import hashlib
import json
import types

from .. import _depends, _limits  # BYHAND-DEPENDS: _depends
from .steps import run_steps

# At grading (the grader's first request to the kernel calls `record_results()`) every case's result
# is kept, under a digest of its question and inputs: the grader's probe after the last cell then
# asks for what the lesson's test cells computed (`recorded`) instead of sending the same inputs to
# call the student's code on them again. Never in a learner's kernel, where an answer fixed after
# its check must be run again. (A submission that turns it off only makes the probe call its code.)
_RECORDED: dict = {}
_RECORDING = [False]


def record_results() -> None:
    _RECORDING[0] = True


def case_digest(name: str, wire: dict) -> str:
    """The name of one case of question `name` (the same in the grader and in the kernel)."""
    return hashlib.sha256((name + "\0" + json.dumps(wire, sort_keys=True)).encode()).hexdigest()


def _identities(namespace: dict) -> dict:
    """The object behind each function and class name of `namespace` (a recorded result is used
    only while the names the checks look up still name the same objects)."""
    return {k: id(v) for k, v in namespace.items() if isinstance(v, (types.FunctionType, type))}


def run_case(name: str, wire: dict, namespace: dict, device=None, reuse: bool = False) -> str:
    """One case of question `name` run against `namespace`: its wire result as JSON text. At
    grading it is recorded, and with `reuse` a result recorded under the same names is returned
    instead (a test cell's hidden check repeats its visible cases)."""
    digest = None
    if device is None and _RECORDING[0]:
        digest = case_digest(name, wire)
        entry = _RECORDED.get(digest)
        if reuse and isinstance(entry, tuple) and entry[1] == _identities(namespace):
            return entry[0]
    seconds = _limits.limit()
    try:  # a case that never returns stops here, not at the cell's limit
        # the earlier answers' verdicts (in_place) are judged before this case's limit starts
        with _depends.in_place(name, namespace), _limits.case_limit(seconds):  # BYHAND-DEPENDS
            text = json.dumps(run_steps(wire["steps"], wire["outputs"], namespace, device))
    except _limits.Stopped:
        text = json.dumps(_limits.stopped_result(seconds))
    if digest is not None:
        _RECORDED[digest] = (text, _identities(namespace))
    return text


def recorded(name: str, digests: list, namespace: dict, names: list) -> str:
    """The recorded results of these cases of `name` as a JSON list; null for a case not recorded,
    or recorded when one of `names` (the names its checks look up) named another object than it
    does now (redefined after its test cell: the probe then calls what is there now)."""
    now = {n: id(namespace[n]) if n in namespace else None for n in names}
    out = []
    for digest in digests:
        entry = _RECORDED.get(digest)
        ok = isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str)
        ok = ok and isinstance(entry[1], dict) and all(entry[1].get(n) == i for n, i in now.items())
        out.append(entry[0] if ok else "null")
    return "[" + ",".join(out) + "]"
