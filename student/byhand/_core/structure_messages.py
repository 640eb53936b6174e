"""The failure messages of a module whose structure does not fit (what structure.py's probes found):
`structure_message` (parameters not the ones the exercise names, plain tensors, Python lists of
modules, one module shared by every block, ...) and `no_forward_message` (no method named forward).
"""

from __future__ import annotations

from .. import i18n
from ..i18n import N_, msg
from .lines import got_expected, hint_line


def structure_message(name: str, problem: dict) -> str:
    """Words for a module whose structure the grader's state dict does not fit."""
    cls = str(problem.get("cls", name))
    if problem.get("shared") is not None:
        groups = problem.get("shared") or []
        shown = "; ".join(" = ".join(g[:3]) + (" = ..." if len(g) > 3 else "") for g in groups[:3])
        head = msg(
            "{name}: the weights loaded into {cls} did not stay: {lost} came back different.",
            name=name,
            cls=cls,
            lost=", ".join(problem.get("lost", [])[:3]),
        ) + got_expected(
            msg(
                "one parameter object under several names ({names})", names=shown or msg("shared parameters")
            ),
            msg("a separate module, with its own parameters, for each of them"),
        )
        alias = _aliased_attributes(groups)
        if alias is not None:  # two attributes of one module hold one object: self.w_k = self.w_q
            first, other = alias
            return head + hint_line(
                msg(
                    "self.{first} and self.{other} are one and the same module: each needs its own, "
                    "self.{other} = nn.Linear(...) as for self.{first}, not self.{other} = self.{first}",
                    first=first,
                    other=other,
                )
            )
        return head + hint_line(
            msg(
                "one module is shared by every block ([block] * n, or the same object appended n "
                "times): build a new one per block, nn.ModuleList([Block(...) for _ in range(n)])"
            )
        )
    attrs = problem.get("attrs", {}) or {}
    missing = problem.get("missing", []) or []
    extra = problem.get("extra", []) or []
    by_kind: dict = {}
    for attr, kind in attrs.items():
        by_kind.setdefault(kind, []).append(f"self.{attr}")
    why = []
    for kind, names in by_kind.items():
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        many = len(names) > 1
        if kind == "tensor":
            if many:
                why.append(
                    msg(
                        "{shown} are plain tensors, not registered: wrap each in nn.Parameter(...) (or use nn.Linear)",
                        shown=shown,
                    )
                )
            else:
                why.append(
                    msg(
                        "{shown} is a plain tensor, not registered: wrap each in nn.Parameter(...) (or use nn.Linear)",
                        shown=shown,
                    )
                )
        elif kind == "list of modules":
            if many:
                why.append(
                    msg(
                        "{shown} are Python lists of modules: nn.Module does not register (or move, or save) "
                        "modules inside it, so their parameters are not in state_dict(); use nn.ModuleList(...)",
                        shown=shown,
                    )
                )
            else:
                why.append(
                    msg(
                        "{shown} is a Python list of modules: nn.Module does not register (or move, or save) "
                        "modules inside it, so their parameters are not in state_dict(); use nn.ModuleList(...)",
                        shown=shown,
                    )
                )
        elif kind == "dict of modules":
            if many:
                why.append(
                    msg(
                        "{shown} are Python dicts of modules: nn.Module does not register (or move, or save) "
                        "modules inside it, so their parameters are not in state_dict(); use nn.ModuleDict(...)",
                        shown=shown,
                    )
                )
            else:
                why.append(
                    msg(
                        "{shown} is a Python dict of modules: nn.Module does not register (or move, or save) "
                        "modules inside it, so their parameters are not in state_dict(); use nn.ModuleDict(...)",
                        shown=shown,
                    )
                )
        elif kind == "list of tensors":
            why.append(
                msg("{shown}: a Python list of tensors is not registered; use nn.ParameterList", shown=shown)
            )
        elif kind == "missing":
            if many:
                why.append(msg("there is no {shown}: the exercise names them", shown=shown))
            else:
                why.append(msg("there is no {shown}: the exercise names it", shown=shown))
        elif kind not in ("parameter", "module"):
            if many:
                why.append(
                    msg(
                        "{shown} are a {kind}, not a registered nn.Module or nn.Parameter",
                        shown=shown,
                        kind=kind,
                    )
                )
            else:
                why.append(
                    msg(
                        "{shown} is a {kind}, not a registered nn.Module or nn.Parameter",
                        shown=shown,
                        kind=kind,
                    )
                )
    if not why and extra:
        why.append(
            msg(
                "it has parameters the exercise does not name: the check loads the listed ones and has no "
                "values for the others, so keep exactly the listed parameters (a constant such as a causal mask "
                "may be a buffer, register_buffer)"
            )
        )
    if not why:
        why.append(msg("name the submodules and parameters exactly as the exercise says"))
    lacks, more = ", ".join(missing[:4]), ", ".join(extra[:4])
    if missing and extra:
        got = msg("state_dict() without {lacks}, with extra {more}", lacks=lacks, more=more)
        expected = msg("the keys {lacks} registered in the module, and no {more}", lacks=lacks, more=more)
    elif missing:
        got = msg("state_dict() without {lacks}", lacks=lacks)
        expected = msg("the keys {lacks} registered in the module", lacks=lacks)
    else:  # what it has too many of, said as such: not as keys it should register
        got = msg("state_dict() with extra keys {more}", more=more)
        expected = msg("only the keys the exercise names, without {more}", more=more)
    return (
        msg(
            "{name}: {cls}'s parameters are not the ones the exercise names, so its state_dict does not fit.",
            name=name,
            cls=cls,
        )
        + got_expected(got, expected)
        + hint_line(i18n.join(WHY_SEPARATOR, why))
    )


# between two reasons in a structure message's hint
WHY_SEPARATOR = N_("; ")


def _aliased_attributes(groups: list):
    """When the shared parameters are two differently named attributes of one module (w_q.weight and
    w_k.weight: `self.w_k = self.w_q`), not the same block repeated at several indices (layers.0.x and
    layers.1.x): the two attribute paths; else None."""
    for group in groups:
        paths = [str(n).rsplit(".", 1)[0] for n in group if "." in str(n)]
        if len(paths) < 2:
            continue
        a, b = paths[0], paths[1]
        if any(part.isdigit() for part in set(a.split(".")) ^ set(b.split("."))):
            continue  # the names differ by an index: blocks of a list
        return a, b
    return None


def no_forward_message(name: str, info: dict) -> str:
    import difflib

    cls = str(info.get("cls", name))
    methods = [str(m) for m in info.get("methods", [])]
    close = difflib.get_close_matches("forward", methods, n=1, cutoff=0.6)
    if close:
        hint = msg("`{method}` looks like a misspelling of `forward`: rename it", method=close[0])
    else:
        hint = msg("define forward(self, ...): nn.Module calls it when you call the module")
    return (
        msg(
            "{name}: {cls} has no method named forward, so calling it runs nn.Module's own forward, which "
            "raises NotImplementedError.",
            name=name,
            cls=cls,
        )
        + got_expected(
            msg("methods {methods}", methods=", ".join(methods)) if methods else msg("methods (none)"),
            msg("a method named forward"),
        )
        + hint_line(hint)
    )
