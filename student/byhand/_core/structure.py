"""What a module *is*: probes of its structure run where the module lives (`run_steps` calls them):
state_dict keys it lacks or has too many of and how it holds them instead (`_state_problem`),
one parameter object under several names (`_shared_problem`), a module without a forward
(`_forward_of`, `_missing_forward`). They only shape a hint (the words are structure_messages.py's);
the verdict is the grader's either way.
"""

from __future__ import annotations

import torch

# ---------------------------------------------------------------------------------------------
# What a module *is*: probes of its structure, run where the module lives (they only shape a hint;
# the verdict is the grader's either way)

_MAX_NAMES = 12


def _names(items) -> list:
    return [str(n)[:80] for n in list(items)[:_MAX_NAMES]]


def _attr_kind(value) -> str:
    """How an attribute that should hold registered state is held instead."""
    if isinstance(value, torch.nn.Parameter):
        return "parameter"
    if isinstance(value, torch.nn.Module):
        return "module"
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.nn.Module) for v in value):
        return "list of modules"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return "list of tensors"
    if isinstance(value, dict) and any(isinstance(v, torch.nn.Module) for v in value.values()):
        return "dict of modules"
    if value is None:
        return "missing"
    return type(value).__name__[:40]


def _state_problem(module, state: dict):
    """None when `module` has exactly the state dict keys the grader sends; else what differs and,
    for each top-level name, how the module holds it (plain tensor, Python list of modules, ...)."""
    if not isinstance(module, torch.nn.Module):
        return None
    have = set(module.state_dict().keys())
    own_buffers = {name for name, _ in module.named_buffers()}  # a causal mask the answer keeps itself
    missing, extra = sorted(set(state) - have), sorted(have - set(state) - own_buffers)
    if not missing and not extra:
        return None
    attrs = {}
    for key in missing:
        path, owner, prefix = key.split("."), module, []
        for part in path[:-1]:  # follow the registered submodules as far as they go
            sub = getattr(owner, "_modules", {}).get(part)
            if sub is None:
                break
            owner, prefix = sub, prefix + [part]
        name = path[len(prefix)]  # the first name on the path that is not a registered module
        attrs[".".join(prefix + [name])[:80]] = _attr_kind(getattr(owner, name, None))
        if len(attrs) >= _MAX_NAMES:
            break
    for prefix, sub in list(module.named_modules())[:200]:  # state held where nn.Module cannot see it
        for name, value in list(vars(sub).items())[:200]:
            kind = _attr_kind(value)
            if not name.startswith("_") and kind in (
                "tensor",
                "list of modules",
                "list of tensors",
                "dict of modules",
            ):
                attrs.setdefault(f"{prefix}.{name}" if prefix else name, kind)
    return {
        "cls": type(module).__name__[:80],
        "missing": _names(missing),
        "extra": _names(extra),
        "attrs": attrs,
    }


def _shared_problem(module, state: dict):
    """After load_state_dict: None when every loaded tensor is still there; else the groups of names
    that are one and the same parameter (one module used for several), so later keys overwrote earlier."""
    if not isinstance(module, torch.nn.Module):
        return None
    now = module.state_dict()
    lost = [k for k, v in state.items() if k in now and not torch.equal(now[k], v.to(now[k].dtype))]
    if not lost:
        return None
    groups: dict = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(name)
    shared = [_names(g) for g in groups.values() if len(g) > 1][:_MAX_NAMES]
    return {"cls": type(module).__name__[:80], "lost": _names(lost), "shared": shared}


def _forward_of(obj):
    """When `obj` is a module of the student's own class that defines no forward (so calling it runs
    nn.Module's, which raises): its class name and the methods it does define; else None."""
    if not isinstance(obj, torch.nn.Module) or type(obj).forward is not torch.nn.Module.forward:
        return None
    if type(obj).__module__.startswith("torch"):  # nn.ModuleList and friends have no forward on purpose
        return None
    own = [
        n
        for klass in type(obj).__mro__
        if klass not in torch.nn.Module.__mro__
        for n, v in vars(klass).items()
        if callable(v) and not n.startswith("__")
    ]
    return {"cls": type(obj).__name__[:80], "methods": _names(own)}


def _missing_forward(exc: BaseException):
    """The module without a forward behind `exc`, if any: one whose call ran nn.Module's own forward,
    or a submodule of a module on the traceback (a nested call)."""
    tb, seen = exc.__traceback__, 0
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, torch.nn.Module):
            for sub in owner.modules():
                found = _forward_of(sub)
                seen += 1
                if found is not None:
                    return found
                if seen > 2000:
                    return None
        tb = tb.tb_next
    return None
