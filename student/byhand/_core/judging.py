"""Cases, questions and the verdict: `Case` (one input: steps, outputs, facts), `Question` (its cases
and its judge), `judge_result` (one wire result -> a verdict: not done, raised, a structure or
forward fact, or the question's judge on the outputs) and `judge_all` (the first failure, and
the other mistakes later cases show, "also, on ..."), with the cases in order (`ordered_cases`).
Grader and self-check both judge here, in English; only the finished verdict is translated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .. import _limits, i18n
from ..i18n import msg
from .failures import AnswerError, CheckFailure, NotDone
from .known_errors import answer_error_message
from .lines import LINE, hint_line, on_input
from .structure_messages import no_forward_message, structure_message
from .wire import decode

# ---------------------------------------------------------------------------------------------
# Cases, questions and judging


# what a shape error says (torch's and Python's messages), for a case's `raised_hint`
SHAPE_ERRORS = ("unpack", "shape", "size", "dimension", "Expected", "expand", "outer", "index", "match")


@dataclass
class Case:
    """One input for one question. `steps`/`outputs` travel to the kernel; `facts` stay here."""

    label: str  # e.g. "q (2, 3, 5, 8) float32, mask=causal": shown on failure
    steps: list
    outputs: list
    facts: dict = field(default_factory=dict)
    size: int = 0  # smaller cases are judged first: the first failure is the smallest

    def wire(self) -> dict:
        return {"steps": self.steps, "outputs": self.outputs}


@dataclass
class Question:
    """A graded question: its cases (visible and hidden) and the judge that decides each one."""

    name: str
    cases: Callable[[bool], list]  # cases(hidden) -> list[Case]
    judge: Callable[[Case, dict], None]  # raises CheckFailure
    needs: tuple = ()  # the graded names it calls


def judge_result(question: Question, case: Case, result: dict) -> None:
    """Turn one wire result into a verdict (raises CheckFailure/NotDone/AnswerError). In English:
    `judge_all` reads the hints of later failures from this text, and translates only its verdict."""
    if "error" in result:
        if "stopped" in result:
            raise AnswerError(_limits.stopped_message(question.name, result["stopped"]))
        if isinstance(result.get("no_forward"), dict):
            failure = CheckFailure(no_forward_message(question.name, result["no_forward"]))
            failure.fact = True
            raise failure
        if isinstance(result.get("structure"), dict):
            failure = CheckFailure(
                structure_message(question.name, result["structure"]) + on_input(case.label)
            )
            failure.fact = True
            raise failure
        if result.get("not_implemented"):
            raise NotDone(
                msg(
                    "{name}: not done yet. It still raises NotImplementedError: "
                    "replace the stub in its answer cell with your code.",
                    name=question.name,
                )
            )
        # a case whose inputs are the likely cause of a shape error (per-sequence positions, a 2-D x)
        # names them: `raised_hint` = (hint, words one of which the error says)
        hint, words = case.facts.get("raised_hint") or ("", ())
        hint = hint if any(w in str(result["error"]) for w in words) else ""
        raise AnswerError(
            answer_error_message(question.name, result, case.label) + (hint_line(hint) if hint else "")
        )
    outputs = {}
    for name in case.outputs:
        if name not in result.get("outputs", {}):
            raise CheckFailure(
                msg("{name}: no value came back for {output}", name=question.name, output=name)
            )
        outputs[name] = decode(result["outputs"][name])
    try:
        question.judge(case, outputs)
    except CheckFailure as exc:
        raise exc.with_text(i18n.message_of(exc) + on_input(case.label)) from None


@i18n.localized
def judge_all(question: Question, pairs) -> None:
    """Judge (case, result) pairs in order (smallest first). Raise the first failure; when later cases
    show other mistakes (a mask bug shows only on masked inputs), name those too.

    The judging is in English and only the finished verdict is translated (the decorator), exactly
    as the grader judges in English and translates the message it writes: so the self-check and the
    grade give the same lines, the "also, on ..." ones included, in any language."""
    first, extra = None, []
    for case, result in pairs:
        try:
            judge_result(question, case, result)
        except (NotDone, AnswerError):
            if first is None:
                raise
        except CheckFailure as exc:
            if first is None:
                first = exc
                continue
            hint = exc.hint
            repeated = hint == first.hint or hint in str(first)
            # a fact, or a separating probe's hint (after a first failure that names no mistake), or
            # the first mistake and one more ("two mistakes at once: <the first>; and ..."): else the
            # first mistake may be all this failure shows (see CheckFailure.separates)
            known = first.separates or first.fact
            separates = exc.fact or (exc.separates and (not known or bool(first.hint) and first.hint in hint))
            if hint and separates and not repeated and hint not in [h for h, _ in extra]:
                extra.append((hint, case.label))
            if len(extra) >= 2:
                break
        except Exception:  # noqa: BLE001 - a malformed later result never hides the first failure
            if first is None:
                raise
    if first is not None:
        if extra:
            also = i18n.join(
                "", (LINE + msg("also, on {label}: {hint}", label=label, hint=hint) for hint, label in extra)
            )
            raise first.with_text(i18n.message_of(first) + also) from None
        raise first


def ordered_cases(question: Question, hidden: bool) -> list:
    cases = list(question.cases(False))
    if hidden:
        cases += list(question.cases(True))
    return sorted(cases, key=lambda c: c.size)
