"""The bundled example class and the catalogues of mistakes and alternative answers."""

import importlib

from autograder.course import lessons


def answers_for(lesson: str):
    """The example-answers module of a lesson, or None when it has none yet."""
    try:
        return importlib.import_module(f"{__name__}.answers.a{lesson}")
    except ModuleNotFoundError:
        return None


def lessons_with_answers() -> list:
    return [lesson for lesson in lessons() if answers_for(lesson) is not None]


def catalogued(attr: str) -> list:
    """(lesson, name) of every entry of `MISTAKES` or `ALTERNATIVES` (attr), lesson by lesson."""
    return [
        (lesson, name) for lesson in lessons_with_answers() for name in getattr(answers_for(lesson), attr)
    ]


def feedback_problems(spec: dict, message: str) -> list:
    """What is wrong with the feedback `message` for the catalogued mistake `spec` (empty: it names
    the mistake). Every word of `hint` (one, or several when the answer has two bugs at once) must
    be in it, and none of `not_hints` (mistakes it could be confused with but does not make)."""
    words = (spec["hint"],) if isinstance(spec["hint"], str) else tuple(spec["hint"])
    problems = [f"does not name {w!r}" for w in words if w not in message]
    problems += [
        f"names {w!r}, a mistake the answer does not make" for w in spec.get("not_hints", ()) if w in message
    ]
    return problems
