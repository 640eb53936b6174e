"""The machinery every lesson's checks share.

A check is a list of *cases*. A case is data, not code: a few steps that build inputs, call the
student's graded names and collect the results ("the wire"), plus grader-side facts a *judge* uses
to decide. The same case runs two ways:

* self-check, inside the student's kernel: `check(...)` runs the steps there and judges there;
* trusted verdict, at grading: the grader sends the steps as JSON to the sandboxed kernel, gets the
  results back as plain numbers (dtype, shape, bytes: no pickle), and judges in its own process.

So whatever a submission does to torch, numpy or IPython inside its kernel can change only its own
answers, never a comparison.

Its parts, a module each (this package re-exports every public name: `from byhand._core import ...`):

* wire.py: the wire format, JSON values with tensors as dtype, shape and bytes (`encode`, `decode`);
* steps.py: the steps of a case (`ref`, `let`, `new`, `call`, ...) and `run_steps`, which runs
  them where the student's code lives;
* structure.py: probes of a module's structure (state_dict keys, shared parameters, no forward),
  run beside the steps;
* judging.py: `Case`, `Question`, and the verdict of one result (`judge_result`) and of all
  (`judge_all`);
* lines.py, structure_messages.py, known_errors.py: the words of a failure. lines.py the lines
  every message is built of (`got_expected`, `hint_line`, `on_input`); structure_messages.py a
  module whose structure does not fit; known_errors.py an answer that raised. An exercise's own
  messages are in its judge (`byhand/<lesson>/<exercise>.py`);
* failures.py: the exceptions a failed check raises and how a notebook shows them (`verbose`);
* recording.py: one case run in the kernel (`run_case`), its result kept at grading;
* self_check.py: `check`, what a lesson's test cells call, and `lesson_check`, `by_name`;
* tensors.py: random inputs (`rand`, `gen`, `random_mask`) and what an autograd.Function keeps
  for backward (`apply_recording`, `backward_error`).
"""

from __future__ import annotations

from .failures import _RED, _RESET, FULL_TRACEBACK, AnswerError, CheckFailure, NotDone, verbose
from .judging import SHAPE_ERRORS, Case, Question, judge_all, judge_result, ordered_cases
from .known_errors import KNOWN_ERRORS, answer_error_message, explain_error
from .lines import HINT, LINE, got_expected, hint_line, on_input
from .recording import case_digest, record_results, recorded, run_case
from .self_check import OutdatedChecks, by_name, check, lesson_check
from .steps import call, calling, graded, helper, let, module_device, new, ref, run_steps, seed
from .structure_messages import WHY_SEPARATOR, no_forward_message, structure_message
from .tensors import apply_recording, backward_error, gen, rand, random_mask
from .wire import MAX_WIRE_ELEMENTS, Unsupported, decode, encode

__all__ = [
    "answer_error_message",
    "AnswerError",
    "apply_recording",
    "backward_error",
    "by_name",
    "call",
    "calling",
    "Case",
    "case_digest",
    "check",
    "CheckFailure",
    "decode",
    "encode",
    "explain_error",
    "FULL_TRACEBACK",
    "gen",
    "got_expected",
    "graded",
    "helper",
    "HINT",
    "hint_line",
    "judge_all",
    "judge_result",
    "KNOWN_ERRORS",
    "lesson_check",
    "let",
    "LINE",
    "MAX_WIRE_ELEMENTS",
    "module_device",
    "new",
    "no_forward_message",
    "NotDone",
    "on_input",
    "ordered_cases",
    "OutdatedChecks",
    "Question",
    "rand",
    "random_mask",
    "record_results",
    "recorded",
    "ref",
    "run_case",
    "run_steps",
    "seed",
    "SHAPE_ERRORS",
    "structure_message",
    "Unsupported",
    "verbose",
    "WHY_SEPARATOR",
    "_RED",
    "_RESET",
]
