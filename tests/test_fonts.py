"""Chinese plot labels: a CJK font when one is installed, no warning when none is (a warning in a
cell's output is noise to a reader, and stderr in a graded cell costs its points)."""

from __future__ import annotations

import io
import warnings

import matplotlib
import pytest
from byhand import fonts

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(autouse=True)
def _restore():
    saved = dict(matplotlib.rcParams)
    with warnings.catch_warnings():
        yield
    matplotlib.rcParams.update(saved)
    plt.close("all")


def _draw_chinese() -> list:
    """The warnings drawing a plot with Chinese labels raises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        fig, ax = plt.subplots()
        ax.set_title("窗口中的位置")
        ax.plot([0, 1], label="可学习位置编码")
        ax.legend()
        fig.savefig(io.BytesIO(), format="png")
    return [str(w.message) for w in caught]


def test_without_a_cjk_font_a_chinese_plot_warns():
    """The test can fail: on this machine (no CJK font), Chinese labels warn by default."""
    if fonts.installed():
        pytest.skip(f"a CJK font is installed here: {fonts.installed()}")
    assert any("missing from font" in w for w in _draw_chinese())


def test_with_no_cjk_font_the_fallback_is_silent():
    with warnings.catch_warnings():
        assert fonts.use_cjk_font(candidates=("No Such CJK Font",)) is None
        with warnings.catch_warnings(record=True) as caught:
            fig, ax = plt.subplots()
            ax.set_title("窗口中的位置")
            fig.savefig(io.BytesIO(), format="png")
    assert not [w for w in caught if "missing from font" in str(w.message)]


def test_an_installed_font_goes_after_the_latin_one():
    """With a font that is installed (DejaVu Sans stands in for a CJK one: it is the one matplotlib
    ships), it is chosen, after the Latin sans-serif font, and the minus sign no longer needs U+2212."""
    assert fonts.installed(("No Such Font", "DejaVu Sans")) == ["DejaVu Sans"]
    assert fonts.use_cjk_font(candidates=("No Such Font", "DejaVu Sans")) == "DejaVu Sans"
    assert matplotlib.rcParams["font.family"][-1] == "DejaVu Sans"
    assert matplotlib.rcParams["axes.unicode_minus"] is False


def test_the_chinese_setup_cell_turns_the_font_on():
    from autograder.tooling import translations

    assert "fonts.use_cjk_font()" in translations.language_line("zh_CN")
    assert "fonts" not in translations.language_line("fr_FR")
