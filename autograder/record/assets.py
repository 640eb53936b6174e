"""The feedback pages' offline assets: MathJax 3 from the site's npm package and its configuration,
copied once into `OUT/feedback/_assets/` (no page loads anything from outside)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.course import ROOT

ASSETS = "_assets"  # OUT/feedback/_assets: MathJax and its configuration, shared by every page
SITE = ROOT / "site"
MATHJAX_ES5 = SITE / "node_modules" / "mathjax" / "es5"
# what a page needs of MathJax 3: the combined component, its fonts, and the "safe" extension
MATHJAX_FILES = ("tex-chtml-full.js", "ui/safe.js", "output/chtml/fonts/woff-v2")
MATHJAX_CONFIG = """\
window.MathJax = {
  tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']],
        processEscapes: true, packages: {'[-]': ['require']}},
  loader: {load: ['ui/safe']},
  options: {enableMenu: false}
};
"""


def mathjax_es5() -> Path | None:
    """MathJax 3 from npm (site/package-lock.json, the site's copy), installed once with `npm ci`
    under the site's lock; None when npm is missing (the pages then show the TeX as text)."""
    if (MATHJAX_ES5 / MATHJAX_FILES[0]).exists():
        return MATHJAX_ES5
    npm = shutil.which("npm")
    if npm is None or not (SITE / "package-lock.json").exists():
        return None
    with open(SITE / ".npm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (MATHJAX_ES5 / MATHJAX_FILES[0]).exists():
            proc = subprocess.run(
                [npm, "ci", "--prefix", str(SITE), "--no-audit", "--no-fund", "--loglevel=error"],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                print(f"warning: npm ci for MathJax failed: {proc.stderr[-500:]}", file=sys.stderr)
                return None
    return MATHJAX_ES5


def install_assets(feedback: Path) -> bool:
    """Put MathJax and its configuration into `feedback/_assets/` (once). False when MathJax is
    not available (no npm): pages still work, math shows as TeX."""
    dest = Path(feedback) / ASSETS
    dest.mkdir(parents=True, exist_ok=True)
    config = dest / "mathjax-config.js"
    if not config.exists() or config.read_text() != MATHJAX_CONFIG:
        config.write_text(MATHJAX_CONFIG)
    if (dest / "mathjax" / MATHJAX_FILES[0]).exists():
        return True
    es5 = mathjax_es5()
    if es5 is None:
        print("warning: no npm, so no local MathJax: feedback pages show math as TeX", file=sys.stderr)
        return False
    for rel in MATHJAX_FILES:
        src, dst = es5 / rel, dest / "mathjax" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copyfile(src, dst)
    return True


# nbgrader's formgrader page (nbgrader 0.9.6) loads MathJax 2 from a CDN through nbconvert's
# `mathjax()` macro and drives it with MathJax 2's API (formgrade.js), so offline it shows raw TeX.
# A grading output folder carries MathJax 2 (npm `mathjax@2.7.9`, aliased `mathjax2` in
# site/package.json) and a `mathjax()` macro that loads it; `make formgrader` puts that macro's
# folder first on JUPYTER_PATH, where nbconvert looks for its base templates.
FORMGRADER_ASSETS = "formgrader_assets"
MATHJAX2 = SITE / "node_modules" / "mathjax2"
MATHJAX2_FILES = (
    "MathJax.js",
    "config/TeX-AMS_CHTML-full.js",
    "config/Safe.js",
    "extensions",
    "jax/output/CommonHTML",
    "jax/input/TeX",
    "jax/element",
    "localization/en",
    "fonts/HTML-CSS/TeX/woff",
)
# relative to a formgrader page, {base}/formgrader/submissions/<id>/, so any base URL works
MATHJAX2_MACRO = """\
{#- Written by `make grade`: formgrader's math typeset by the MathJax 2 in this folder, offline. -#}
{%- macro mathjax(url="") -%}
<script type="text/x-mathjax-config">
MathJax.Hub.Config({tex2jax: {inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]], processEscapes: true},
                   showMathMenu: false});
</script>
<script src="../../../files/formgrader_assets/mathjax2/MathJax.js?config=TeX-AMS_CHTML-full,Safe"></script>
{%- endmacro %}
"""


def formgrader_template_dir(out: Path) -> Path:
    """The folder `make formgrader` puts first on JUPYTER_PATH."""
    return Path(out) / FORMGRADER_ASSETS / "share"


def install_formgrader_assets(out: Path) -> bool:
    """MathJax 2 and the macro that loads it, in `out/formgrader_assets/` (once). False when the
    site's npm packages are not installed (formgrader then shows TeX as text, as before)."""
    dest = Path(out) / FORMGRADER_ASSETS
    macro = formgrader_template_dir(out) / "nbconvert" / "templates" / "base" / "mathjax.html.j2"
    macro.parent.mkdir(parents=True, exist_ok=True)
    if not macro.exists() or macro.read_text() != MATHJAX2_MACRO:
        macro.write_text(MATHJAX2_MACRO)
    if (dest / "mathjax2" / "MathJax.js").exists():
        return True
    if (
        not (MATHJAX2 / "MathJax.js").exists()
        and shutil.which("npm")
        and (SITE / "package-lock.json").exists()
    ):
        with open(SITE / ".npm.lock", "w") as lock:  # a checkout installed before mathjax2 was added
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (MATHJAX2 / "MathJax.js").exists():
                cmd = [
                    shutil.which("npm"),
                    "ci",
                    "--prefix",
                    str(SITE),
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                ]
                subprocess.run(cmd, capture_output=True, text=True)
    if not (MATHJAX2 / "MathJax.js").exists():
        print("warning: no npm, so no local MathJax 2: formgrader shows math as TeX", file=sys.stderr)
        return False
    for rel in MATHJAX2_FILES:
        src, dst = MATHJAX2 / rel, dest / "mathjax2" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copyfile(src, dst)
    return True
