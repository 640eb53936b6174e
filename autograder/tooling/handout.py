"""`make handout`: the student notebooks as one zip for an LMS, that works as handed out.

The zip holds every lesson's student notebook (English at the top level, each translation under
`<lang>/`), the wheel of the checks they import (`transformer_by_hand-<version>-py3-none-any.whl`)
(beside the notebooks of every language: at the top and in each `<lang>/`) and a README in both
languages whose install line is the one the notebooks use, with a CPU-only install for a laptop.
The notebooks' first cell installs the checks from `BYHAND_SOURCE` when it is set (the course site's
wheel URL, a package on an index); otherwise from the wheel in the zip, by its file name (next to the
notebook in Jupyter; uploaded to Colab's files). The repository's placeholder source
(`git+https://github.com/<org>/<repo>`) is never handed out: given as BYHAND_SOURCE, it is refused.
`make handout LESSONS="09 12"` hands out some lessons; one whose given code holds the graded answer
of a lesson not in it, or not yet due, is refused unless forced (publish.py).
Fixed timestamps: the same notebooks and wheel give the same bytes on every run.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

from autograder.course import BUILD, COURSE_ID, NOTEBOOKS, lessons
from autograder.tooling import publish
from autograder.tooling.student import GIT_URL, build_wheel, install_source, with_install_source

HANDOUT_README = """\
Transformer building blocks, by hand: the student notebooks

{lessons}
The same lessons in Chinese are in zh_CN/ (when translated).

Open a notebook in Jupyter, JupyterLab or Colab. The self-checks import the course's small package
`byhand` (it brings torch, numpy, regex and matplotlib). Install it once in the environment the
notebook runs in:

    pip install "{source}"

On a computer without an NVIDIA GPU (a laptop; Linux or Windows), install PyTorch's CPU build first,
so that pip never downloads CUDA (gigabytes). Installed that way the checks take about 1.1 GB, and
took 7 to 9 minutes on a busy 2-core machine (docs/students.md in the course repository):

    pip install torch --index-url https://download.pytorch.org/whl/cpu
    pip install "{source}"

{where}Fill the cells that say YOUR CODE HERE or YOUR ANSWER HERE, run the self-check below each
exercise, and submit the .ipynb file with its name unchanged.

------------------------------------------------------------------------------------------------
手撕 Transformer：学生版 notebook（中文版在 zh_CN/ 文件夹里）

在 Jupyter、JupyterLab 或 Colab 里打开 notebook。自检需要课程的小包 `byhand`（它会一并安装 torch、
numpy、regex 和 matplotlib），在运行 notebook 的环境里安装一次：

    pip install "{source}"

没有 NVIDIA 显卡的电脑（笔记本；Linux 或 Windows）先装 PyTorch 的 CPU 版，pip 就不会下载 CUDA
（好几 GB）。这样装好的自检约占 1.1 GB，在一台繁忙的双核机器上用了 7～9 分钟（见课程仓库的
docs/students.md）：

    pip install torch --index-url https://download.pytorch.org/whl/cpu
    pip install "{source}"

{where_zh}在写着 YOUR CODE HERE 或 YOUR ANSWER HERE 的单元格里作答，运行每道练习下面的自检，
然后提交 .ipynb 文件，不要改文件名。
"""

WHERE_WHEEL = (
    "The wheel ({wheel}) is in this zip, beside the notebooks of every language (here and in zh_CN/):\n"
    "in Jupyter, run the line in the folder of the notebooks you open; in Colab, upload it first\n"
    "(Files, Upload), then the notebook's first cell installs it by itself.\n\n"
)
WHERE_WHEEL_ZH = (
    "wheel 文件（{wheel}）就在这个 zip 里，zh_CN/ 文件夹里也有一份：在 Jupyter 里，在 zh_CN/ 文件夹里\n"
    "运行上面这行；在 Colab 里，先上传它（文件，上传），notebook 的第一个单元格会自己安装。\n\n"
)


NO_SOURCE = (
    "NOTE: BYHAND_SOURCE is not set: the notebooks install the checks from the wheel in the zip, so a "
    "student must keep it beside the notebooks (Jupyter) or upload it (Colab). For notebooks that install "
    "by themselves anywhere: make handout BYHAND_SOURCE=https://<your site>/downloads/<the wheel>"
)


class HandoutError(ValueError):
    """A handout that would not work for students (the CLI says it in one line)."""


def handout(
    dest: Path | None = None,
    selected: list[str] | None = None,
    force: bool = False,
    config: Path | None = None,
) -> Path:
    """Write the zip (default build/handout/<course>-notebooks.zip): notebooks in every language,
    the checks' wheel beside each language's notebooks and the README; the notebooks install from
    BYHAND_SOURCE or the wheel. `selected` lessons only (all by default); a release that hands out
    a graded answer is refused unless `force` (publish.check_release, deadlines from `config`)."""
    dest = Path(dest or BUILD / "handout" / f"{COURSE_ID}-notebooks.zip")
    names = selected or lessons()
    try:
        publish.check_release(names, force, config)
    except publish.ReleaseRefused as exc:
        raise HandoutError(str(exc)) from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    given = install_source()
    if "<org>" in os.environ.get("BYHAND_SOURCE", ""):
        raise HandoutError(
            f"BYHAND_SOURCE={given} is the placeholder: give the course's wheel URL or index name"
        )
    with tempfile.TemporaryDirectory(prefix="tbb-handout-") as tmp:
        wheel = build_wheel(Path(tmp))
        source = given if given != GIT_URL else wheel.name  # never the placeholder
        where = ("", "") if given != GIT_URL else (WHERE_WHEEL, WHERE_WHEEL_ZH)
        readme = HANDOUT_README.format(
            lessons="\n".join(f"- {n}.ipynb" for n in names) + "\n",
            source=source,
            where=where[0].format(wheel=wheel.name),
            where_zh=where[1].format(wheel=wheel.name),
        )
        files = [("README.txt", readme.encode()), (wheel.name, wheel.read_bytes())]
        for folder in ["", *sorted(p.name for p in NOTEBOOKS.iterdir() if p.is_dir())]:
            if folder and given == GIT_URL:  # the README's line works from this folder too
                files.append((f"{folder}/{wheel.name}", wheel.read_bytes()))
            for n in names:
                path = NOTEBOOKS / folder / f"{n}.ipynb"
                if path.exists():
                    text = with_install_source(path.read_text(encoding="utf-8"), source)
                    files.append((f"{folder}/{n}.ipynb" if folder else f"{n}.ipynb", text.encode()))
        tmp_zip = dest.with_suffix(".zip.tmp")
        with zipfile.ZipFile(tmp_zip, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in files:
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, data)
        tmp_zip.replace(dest)
    return dest
