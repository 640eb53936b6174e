"""Chinese plot labels: a CJK font when one is installed, and no warning when none is.

Matplotlib draws each glyph from the first family of `font.family` that has it (fallback since
matplotlib 3.6), so the Latin sans-serif font stays first and the CJK font found here follows it.
With no CJK font, a Chinese label would print one "Glyph ... missing from font(s)" warning per
character into the cell's output; that warning is silenced (the label shows boxes, the notebook's
text says the same) and `use_cjk_font` returns None, so a caller can say so once."""

from __future__ import annotations

import warnings

# Simplified-Chinese fonts in the order a reader would pick them: Noto / Source Han (Linux, pip
# and conda installs), WenQuanYi (older Linux), then the ones macOS and Windows ship.
CJK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans SC",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "PingFang SC",
    "Hiragino Sans GB",
    "Heiti SC",
    "Microsoft YaHei",
    "SimHei",
    "Noto Sans CJK JP",
    "Arial Unicode MS",
)
MISSING_GLYPH = r"Glyph \d+ .* missing from (current )?font"


def installed(candidates=CJK_FONTS) -> list:
    """The fonts of `candidates` matplotlib can use on this machine, in the candidates' order."""
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    return [name for name in candidates if name in names]


def use_cjk_font(candidates=CJK_FONTS):
    """Put the first installed CJK font of `candidates` after matplotlib's Latin sans-serif font and
    return its name; None when matplotlib or every candidate is missing (then missing-glyph warnings
    are silenced instead)."""
    try:
        import matplotlib as mpl
    except ImportError:
        return None
    found = installed(candidates)
    if not found:
        warnings.filterwarnings("ignore", message=MISSING_GLYPH, category=UserWarning)
        return None
    # glyph fallback runs over the families of font.family: the Latin font first, then the CJK one
    latin = installed(mpl.rcParams["font.sans-serif"]) or ["DejaVu Sans"]
    mpl.rcParams["font.family"] = [latin[0], found[0]]
    mpl.rcParams["axes.unicode_minus"] = False  # some CJK fonts have no U+2212 minus sign
    return found[0]
