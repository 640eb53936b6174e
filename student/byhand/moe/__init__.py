"""Checks for lesson 13_mixture_of_experts: the router, grouped dispatch, capacity, the balancing
losses.

The references are float64 functions in `_shared.py`, run in the judge's process on the inputs the
case sent; the catalogued mistakes are the same references with one thing changed, so a hint names
the mistake only when the answer's output is that mistake's. `moe_forward` is also judged by what it
does where it runs (`run_moe`: the rows each expert is called on, the largest tensor it creates),
and `load_balancing_loss` by its gradient (`run_balance`).

A module per exercise, named by it (`route.py`, `moe_forward.py`, `expert_capacity.py`,
`capacity_keep.py`, `load_balancing_loss.py`, `router_z_loss.py`).
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import ref_moe as ref_moe
from ._shared import ref_route as ref_route
from .capacity_keep import _keep_cases, _keep_judge
from .capacity_keep import run_keep as run_keep
from .expert_capacity import _capacity_cases, _capacity_judge
from .load_balancing_loss import _balance_cases, _balance_judge
from .load_balancing_loss import run_balance as run_balance
from .moe_forward import _moe_cases, _moe_judge
from .moe_forward import run_moe as run_moe
from .route import _route_cases, _route_judge
from .router_z_loss import _z_cases, _z_judge

LESSON = "13_mixture_of_experts"
HELPERS = ("run_moe", "run_balance", "run_keep")

QUESTIONS = _core.by_name(
    Question("route", _route_cases, _route_judge),
    Question("moe_forward", _moe_cases, _moe_judge, needs=("route",)),
    Question("expert_capacity", _capacity_cases, _capacity_judge),
    Question("capacity_keep", _keep_cases, _keep_judge),
    Question("load_balancing_loss", _balance_cases, _balance_judge),
    Question("router_z_loss", _z_cases, _z_judge),
)

check = _core.lesson_check(QUESTIONS, "route")
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = [
    "HELPERS",
    "LESSON",
    "QUESTIONS",
    "check",
    "score",
    "ref_moe",
    "ref_route",
    "run_balance",
    "run_keep",
    "run_moe",
]
