"""`make refresh`: everything derived from the sources, redone in one step, in the order they need.

1. the gettext catalogues (`make messages`): the code's ids merged into each `.po`, compiled to `.mo`;
2. the stored outputs of `solutions/` (`make execute`) of each lesson whose notebook or checks changed;
3. the student notebooks, English and every translation (`make release`), of each lesson whose
   notebook, translations or release code changed;
4. the bundled example class (`make examples`) and docs/mistakes.md (`python -m autograder mistakes`)
   when the student notebooks or the example answers changed;
5. the checks package's version and its recorded fingerprint (tests/test_regrade.py): when what the
   wheel ships differs from what its version recorded, the patch version goes up once (0.3.0 ->
   0.3.1) and the new version's fingerprint is recorded, computed after the bump (the version is in
   a file the wheel ships). A version whose line is not yet committed (a refresh earlier since the
   last commit bumped to it, never released) has its line updated instead; `--no-bump` updates the
   current version's line (a version never released).

Incremental: a step is skipped when its inputs are what they were when it was last done: a digest per
step in `refresh.json`, which is committed with what the step wrote, so a fresh clone, a worktree or a
merge knows it too. A branch that changed a lesson's checks and committed them without `make refresh`
leaves that lesson's digest stale, and the next refresh after the merge redoes it (a digest kept
outside the tree could not tell). A conflict in `refresh.json`: take either side, `make refresh`
redoes every step whose digest differs. A step with no digest (a new lesson) counts as fresh when its
inputs and outputs are what the last commit has. `--all` redoes everything. It prints what it redid
and what is left to write by hand (ids to translate, stale translations).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autograder import course

ROOT = course.ROOT
STUDENT = ROOT / "student" / "byhand"
DIGESTS = ROOT / "refresh.json"  # step -> the digest of its inputs when it was last done
REGRADE = ROOT / "tests" / "test_regrade.py"
VERSION_LINE = re.compile(r'^__version__ = "([^"]+)"', re.M)


def checks_fingerprint(root: Path | None = None) -> str:
    """A hash of every file the student wheel ships: the package's modules and its data."""
    root = root or STUDENT
    # what student/pyproject.toml packages: byhand/**/*.py (the lessons' subpackages too), byhand/data/*.xz
    # and byhand/data/README.md, the compiled catalogues byhand/locale/*/LC_MESSAGES/*.mo
    files = sorted(
        [
            *root.rglob("*.py"),
            *root.glob("data/*.xz"),
            root / "data" / "README.md",
            *root.glob("locale/*/LC_MESSAGES/*.mo"),
        ]
    )
    digest = hashlib.sha256()
    for p in files:
        digest.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def recorded_fingerprints(text: str | None = None) -> dict:
    """CHECKS_FINGERPRINTS of tests/test_regrade.py: {version: fingerprint}."""
    text = REGRADE.read_text(encoding="utf-8") if text is None else text
    block = re.search(r"^CHECKS_FINGERPRINTS = \{\n(.*?)^\}", text, re.M | re.S).group(1)
    return dict(re.findall(r'^\s*"([^"]+)": "([0-9a-f]+)"', block, re.M))


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)


def committed(path: Path) -> str | None:
    """The text `path` has in the last commit (None: no commit, no git, or not in it)."""
    done = _git("show", f"HEAD:{path.relative_to(ROOT).as_posix()}")
    return done.stdout if done.returncode == 0 else None


def bump(version: str) -> str:
    major, minor, patch = (version.split(".") + ["0", "0"])[:3]
    return f"{major}.{minor}.{int(patch) + 1}"


def set_version(version: str) -> None:
    init = STUDENT / "__init__.py"
    init.write_text(
        VERSION_LINE.sub(f'__version__ = "{version}"', init.read_text(encoding="utf-8")), encoding="utf-8"
    )
    toml = ROOT / "student" / "pyproject.toml"
    text = re.sub(
        r'^version = "[^"]+"', f'version = "{version}"', toml.read_text(encoding="utf-8"), flags=re.M
    )
    toml.write_text(text, encoding="utf-8")


def record(version: str, fingerprint: str) -> None:
    """Write `version: fingerprint` into CHECKS_FINGERPRINTS (its line replaced, or a new last line)."""
    text = REGRADE.read_text(encoding="utf-8")
    line = re.compile(rf'^(\s*)"{re.escape(version)}": "[0-9a-f]+"', re.M)
    if line.search(text):
        text = line.sub(lambda m: f'{m.group(1)}"{version}": "{fingerprint}"', text, count=1)
    else:
        text = re.sub(
            r"^(CHECKS_FINGERPRINTS = \{\n.*?)^\}",
            lambda m: f'{m.group(1)}    "{version}": "{fingerprint}",  # recorded by make refresh\n}}',
            text,
            count=1,
            flags=re.M | re.S,
        )
    REGRADE.write_text(text, encoding="utf-8")


def version_and_fingerprint(allow_bump: bool = True) -> list[str]:
    """Step 5: the version bumped (when the checks changed since it was released) and recorded."""
    text = (STUDENT / "__init__.py").read_text(encoding="utf-8")
    version = VERSION_LINE.search(text).group(1)
    recorded = recorded_fingerprints()
    if recorded.get(version) == checks_fingerprint():
        return []
    said = []
    head = committed(REGRADE)
    released = head is not None and version in recorded_fingerprints(head)
    if allow_bump and version in recorded and released:
        new = bump(version)
        set_version(new)
        said.append(f"byhand {version} -> {new} (student/pyproject.toml, student/byhand/__init__.py)")
        version = new
    now = checks_fingerprint()  # after the bump: __init__.py is one of the files it hashes
    record(version, now)
    said.append(f'recorded "{version}": "{now}" in tests/test_regrade.py')
    return said


# ---------------------------------------------------------------------------------------------
# the incremental steps


def digest_content(path: Path, data: bytes | None = None) -> bytes:
    """A file's bytes (or `data` in their place) as a digest sees them (also tests/breadth.py's):
    byhand's version line left out."""
    data = path.read_bytes() if data is None else data
    if path == STUDENT / "__init__.py":  # the version alone decides nothing derived from it but the wheel's
        data = VERSION_LINE.sub("", data.decode("utf-8")).encode()
    return data


def digest(paths: list[Path], extra: bytes = b"") -> str:
    h = hashlib.sha256(extra)
    for p in sorted(set(paths)):
        h.update(
            str(p.relative_to(ROOT)).encode()
            + b"\0"
            + (digest_content(p) if p.exists() else b"<none>")
            + b"\0"
        )
    return h.hexdigest()


@dataclass
class Step:
    name: str  # its key in refresh.json
    inputs: Callable[[], list]  # the files it is derived from
    run: Callable[[], list]  # does it; what it says it did
    outputs: tuple = ()  # files it writes that must exist
    extra: Callable[[], bytes] = lambda: b""  # a digest of inputs that are not whole files

    def fresh(self) -> bool:
        if not all(p.exists() for p in self.outputs):
            return False
        paths = self.inputs()
        recorded = read_digests().get(self.name)
        # never done (a new lesson's notebook, committed unexecuted): stale, however committed
        return recorded is not None and recorded == digest(paths, self.extra())

    def done(self) -> None:
        digests = read_digests()
        digests[self.name] = digest(self.inputs(), self.extra())
        write_digests(digests)


def read_digests() -> dict:
    """refresh.json: {step: digest}; empty when there is none."""
    if not DIGESTS.exists():
        return {}
    try:
        return json.loads(DIGESTS.read_text(encoding="utf-8"))
    except ValueError:  # a merge conflict left in it: guessing would call a stale step fresh
        raise SystemExit(
            f"{DIGESTS.name} does not parse (a merge conflict?): take either side "
            f"(git checkout --theirs {DIGESTS.name}); make refresh then redoes every step whose digest differs"
        ) from None


def write_digests(digests: dict) -> None:
    # one step per line, sorted: a merge conflicts only where two branches redid the same step
    DIGESTS.write_text(json.dumps(dict(sorted(digests.items())), indent=0) + "\n", encoding="utf-8")


def check_packages(lesson: str) -> list[Path]:
    """The folders of the lesson's check package and of every other lesson's package it imports
    (lesson 13's moe_forward runs lesson 10's observer), transitively."""
    import byhand

    names = set(byhand.LESSONS.values())
    todo, seen = [byhand.LESSONS[lesson]], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for path in (STUDENT / name).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            todo += [m for m in re.findall(r"^\s*from (?:\.\.|byhand\.)(\w+)", text, re.M) if m in names]
    return sorted(STUDENT / name for name in seen)


def _checks_of(lesson: str) -> list[Path]:
    # what every lesson's checks run on: the packages (check_packages), byhand's top level and _core/
    # (its steps, judging, wire)
    own = [p for pkg in check_packages(lesson) for p in sorted(pkg.rglob("*.py"))]
    return own + sorted(STUDENT.glob("*.py")) + sorted(STUDENT.glob("_core/*.py"))


def _torch_pin() -> bytes:
    """requirements.txt's torch line: its kernels decide the stored outputs (another pin, none of them)."""
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if re.match(r"torch\b", line)).encode()


def _release_words() -> bytes:
    """The translations the release itself writes (setup lines, notes): the catalogue's entries that
    the release code uses, not the checks' messages (a new check message re-releases nothing)."""
    from autograder.tooling import messages

    out = []
    for lang in messages.languages():
        for m in messages.read(lang):
            if m.id and any(str(loc).startswith("autograder/tooling/") for loc, _ in m.locations):
                out.append(f"{lang}\0{m.id}\0{m.string}\0{m.fuzzy}")
    return "\n".join(sorted(map(str, out))).encode()


RELEASE_CODE = tuple(
    ROOT / "autograder" / "tooling" / f
    for f in ("release.py", "translations.py", "student.py", "nbgrader_course.py")
)


def _translation_files(lesson: str) -> list[Path]:
    from autograder.tooling import translations

    return [
        p
        for lang in translations.LANGUAGES
        for p in (
            translations.path_for(lesson, lang),
            translations.code_path(lesson, lang),
            translations.rubrics_path(lesson, lang),
        )
    ]


def steps(lessons: list[str]) -> list[Step]:
    from autograder.tooling import translations

    def execute(lesson):
        def run():
            from autograder.tooling.execute import execute_solution

            secs = execute_solution(course.SOLUTIONS / f"{lesson}.ipynb")
            return [f"executed solutions/{lesson}.ipynb ({secs:.0f} s)"]

        return Step(
            f"execute-{lesson}",
            lambda: [course.SOLUTIONS / f"{lesson}.ipynb", *_checks_of(lesson)],
            run,
            extra=_torch_pin,
        )

    def release_one(lesson):
        def run():
            from autograder.tooling import release

            return [f"wrote {p.relative_to(ROOT)}" for p in release.release([lesson])]

        outputs = (course.NOTEBOOKS / f"{lesson}.ipynb",) + tuple(
            course.NOTEBOOKS / lang / f"{lesson}.ipynb" for lang in translations.LANGUAGES
        )
        return Step(
            f"release-{lesson}",
            lambda: [course.SOLUTIONS / f"{lesson}.ipynb", *_translation_files(lesson), *RELEASE_CODE],
            run,
            outputs,
            _release_words,
        )

    def examples_inputs():
        return [
            *sorted(course.NOTEBOOKS.glob("*.ipynb")),
            *sorted((ROOT / "examples" / "answers").glob("*.py")),
            *(ROOT / "examples" / f for f in ("written.py", "build.py", "__init__.py")),
        ]

    def examples_run():
        from autograder.tooling.checkout import examples

        examples()
        from examples.build import build

        build()
        return []  # build() says what it wrote

    def mistakes_of(lesson):
        return Step(
            f"mistakes-{lesson}",
            lambda: [
                ROOT / "examples" / "answers" / f"a{lesson}.py",
                ROOT / "examples" / "catalogue.py",
                *_checks_of(lesson),
            ],
            lambda: [f"wrote docs/mistakes.md ({lesson})"],
        )

    return [
        *(execute(lesson) for lesson in lessons),
        *(release_one(lesson) for lesson in lessons),
        Step("examples", examples_inputs, examples_run, (ROOT / "examples" / "expected_grades.csv",)),
        *(mistakes_of(lesson) for lesson in lessons),
    ]


def mistakes_page(stale: list[str]) -> None:
    """docs/mistakes.md (`python -m autograder mistakes`) with the hints of the `stale` lessons
    recomputed (each runs the lesson's self-check on every catalogued mistake) and the other
    lessons' rows kept from the page."""
    from autograder.tooling.checkout import examples

    examples()
    from examples import answers_for, catalogue, lessons_with_answers

    shown = catalogue.documented_hints() if catalogue.DOC.exists() else {}
    parts = [catalogue.HEADER]
    for lesson in lessons_with_answers():
        parts.append(f"\n## {lesson}\n\n| mistake | question | hint the student reads |\n| --- | --- | --- |")
        for name, spec in answers_for(lesson).MISTAKES.items():
            if lesson in stale or (lesson, name) not in shown:
                hint = catalogue.hint_for(lesson, name).replace("|", "\\|").replace("\n", " ")
            else:
                hint = shown[(lesson, name)].replace("|", "\\|")
            parts.append(f"| `{name}` | `{spec['question']}` | {hint} |")
    catalogue.DOC.write_text("\n".join(parts) + "\n", encoding="utf-8")


def refresh(everything: bool = False, allow_bump: bool = True, say: Callable = print) -> list[str]:
    """Redo what is stale (everything with `everything`); what it did, line by line."""
    from autograder.tooling import messages, translations

    did = []

    def tell(lines):
        for line in lines:
            say(line)
        did.extend(lines)

    pot = messages.template()
    tell([f"wrote {p.relative_to(ROOT)}" for p in messages.update(pot=pot)])
    stale_mistakes = []
    for step in steps(course.lessons()):
        if not everything and step.fresh():
            continue
        if step.name.startswith("mistakes-"):
            stale_mistakes.append(step)
            continue
        tell(step.run())
        step.done()
    if stale_mistakes:
        mistakes_page([s.name.removeprefix("mistakes-") for s in stale_mistakes])
        for step in stale_mistakes:
            tell(step.run())
            step.done()
    tell(version_and_fingerprint(allow_bump))
    if not did:
        say("nothing to redo: every derived file is up to date")
    for lang in messages.languages():  # what is left to write by hand
        ids = messages.untranslated(lang, pot)
        if ids:
            say(
                f"{lang}: {len(ids)} message ids to translate (student/byhand/locale/{lang}/LC_MESSAGES/byhand.po):"
            )
            for i in ids:
                say(f"  {i!r}")
    for lang in translations.LANGUAGES:
        for lesson in course.lessons():
            st = translations.status(lesson, lang)
            stale = translations.stale_code(lesson, lang)
            if st.current and not stale:
                continue
            say(
                f"{lang}/{lesson}: translations to write (python -m autograder translations): "
                f"{len(st.missing)} missing, {len(st.stale)} stale, {len(st.untranslated)} untranslated, "
                f"{len(stale)} code cells stale"
            )
    return did
