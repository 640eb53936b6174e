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
