"""Where a built course site tells students to install the checks from.

Reads a site as `make book` leaves it (build/site): every notebook it serves for download (both
languages, the copies Sphinx puts under `_downloads/`), every lesson page's first code cell as the
browser shows it (the setup cell's `BYHAND = "..."` line, from the HTML), and every page's and
notebook's text for the repository's placeholder source (`<org>/<repo>`).

    python tests/site_sources.py build/site https://course.example/downloads/<the wheel>

prints one line per place that does not install from that source and exits 1 if there is any.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

BYHAND_LINE = re.compile(r'^BYHAND = "([^"\n]*)"', re.M)
FIRST_CODE = re.compile(r'<div class="cell_input[^"]*">.*?<pre>(.*?)</pre>', re.S)
PLACEHOLDER = "&lt;org&gt;/&lt;repo&gt;"


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def served_notebooks(site: Path) -> list[Path]:
    return sorted(site.glob("_downloads/**/*.ipynb"))


def lesson_pages(site: Path) -> list[Path]:
    return sorted([*site.glob("lessons/*.html"), *site.glob("*/lessons/*.html")])


def wrong_sources(site: Path, source: str) -> list[str]:
    """Each place of the built site that does not install the checks from `source`, as
    "<path>: got <what it installs from>"; empty when every one does."""
    wrong = []
    for path in served_notebooks(site):
        nb = json.loads(path.read_text(encoding="utf-8"))
        setup = [c for c in nb["cells"] if "setup" in (c.get("metadata", {}).get("tags") or [])]
        got = BYHAND_LINE.findall("".join(setup[0]["source"])) if setup else []
        if got != [source]:
            wrong.append(f"{path.relative_to(site)}: got the setup cell installing from {got or 'nothing'}")
        if "<org>" in path.read_text(encoding="utf-8"):
            wrong.append(f"{path.relative_to(site)}: got the placeholder <org>/<repo> in it")
    for path in lesson_pages(site):
        page = path.read_text(encoding="utf-8")
        first = FIRST_CODE.search(page)
        got = BYHAND_LINE.findall(_text(first.group(1))) if first else []
        if got != [source]:
            wrong.append(
                f"{path.relative_to(site)}: got the first code cell installing from {got or 'nothing'}"
            )
    for path in sorted(site.rglob("*.html")):
        if PLACEHOLDER in path.read_text(encoding="utf-8"):
            wrong.append(f"{path.relative_to(site)}: got the placeholder <org>/<repo> on the page")
    return wrong


def main(argv: list[str]) -> int:
    site, source = Path(argv[0]), argv[1]
    notebooks, pages = served_notebooks(site), lesson_pages(site)
    wrong = wrong_sources(site, source)
    print("\n".join(wrong))
    print(
        f"{len(notebooks)} served notebooks, {len(pages)} lesson pages: "
        + (f"{len(wrong)} not installing from {source}" if wrong else f"every one installs from {source}")
    )
    return 1 if wrong or not notebooks or not pages else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
