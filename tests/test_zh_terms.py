"""One term per concept in the Chinese edition: docs/glossary-zh.md is the source. Its table of
variants ("不用的写法") lists the forms that drifted in beside a term; none may appear in a
translation (every lesson's, lessons added later included), a rubric, a generated Chinese notebook
(its text, code cells and stored outputs), a check message, the site's Chinese pages or the glossary's
own table, except inside the parenthesis that glosses the term itself. And the terms of
the lecture notes the course grew from are named where a learner of those notes looks for them."""

from __future__ import annotations

import re

import pytest

from autograder import course

GLOSSARY = course.ROOT / "docs" / "glossary-zh.md"
VARIANTS_HEADING = "## 不用的写法 / Variants not used"
ZH = course.ROOT / "translations" / "zh_CN"
CATALOGUE = course.ROOT / "student" / "byhand" / "locale" / "zh_CN" / "LC_MESSAGES" / "byhand.po"
NOTEBOOKS = course.NOTEBOOKS / "zh_CN"
SITE = course.ROOT / "site" / "build.py"


def variants() -> list:
    """(compiled pattern, the variant as written, the term to use) from the glossary's variants table."""
    text = GLOSSARY.read_text(encoding="utf-8")
    assert VARIANTS_HEADING in text, f"docs/glossary-zh.md has no {VARIANTS_HEADING!r} section"
    out = []
    for line in text.split(VARIANTS_HEADING, 1)[1].splitlines():
        # a regex's alternatives are written \| inside the table
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) < 2 or not line.startswith("|") or cells[0] in ("variant", "---"):
            continue
        written = cells[0]
        pattern = written[1:-1] if written.startswith("`") and written.endswith("`") else re.escape(written)
        out.append((re.compile(pattern), written.replace("\\|", "|"), cells[1]))
    return out


def _glossed(text: str, start: int, use: str) -> bool:
    """Is position `start` inside the full-width parenthesis（…）that glosses the term to use, right
    after it: 层归一化（LayerNorm；d2l 译作“层规范化”）? A parenthesis after anything else is no gloss:
    （Su et al., 2021）or（运行最大值）is the variant itself."""
    opened = text.rfind("（", 0, start)
    if opened == -1 or text.rfind("）", opened, start) != -1 or "\n" in text[opened:start]:
        return False
    before = text[:opened].rstrip("*")
    terms = [t.strip() for t in re.split(r"\s*/\s*|、", use) if t.strip()]
    return any(before.endswith(t) for t in terms)


CODE = re.compile(r"`[^`\n]*`|\$[^$\n]*\$")


def problems(text: str) -> list:
    """The variants in `text` outside code spans, math and glosses."""
    text = CODE.sub(lambda m: " " * len(m.group(0)), text)
    found = []
    for pattern, written, use in variants():
        for m in pattern.finditer(text):
            if not _glossed(text, m.start(), use):
                line = text[: m.start()].count("\n") + 1
                found.append(f"line {line}: {m.group(0)!r} (use {use}; the variant {written})")
    return found


def _translations(path) -> str:
    """The translations (msgstr) of a gettext catalogue, one per line (not its English ids)."""
    from babel.messages.pofile import read_po

    with open(path, "rb") as f:
        catalogue = read_po(f)
    texts = []
    for message in catalogue:
        if message.id:
            strings = message.string if isinstance(message.string, (tuple, list)) else [message.string]
            texts += [t.replace("\n", " ") for t in strings if t]
    return "\n".join(texts)


def _words_in_code(source: str) -> str:
    """The comments and string literals of a code cell (what it says in words); its identifiers are code
    (`safe_end(buffer, ...)` is no variant of 缓冲区)."""
    import io
    import tokenize

    kinds = {tokenize.COMMENT, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source  # not Python (a magic, a shell line): read it all
    return "\n".join(t.string for t in tokens if t.type in kinds)


def _notebook_text(path) -> str:
    """Everything a reader of a notebook sees: its text cells, its code cells and their stored outputs."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    texts = []
    for cell in nb.cells:
        texts.append(cell.source if cell.cell_type != "code" else _words_in_code(cell.source))
        for out in cell.get("outputs", []):
            texts.append("".join(out.get("text", "")))
            data = out.get("data", {})
            texts += ["".join(data[kind]) for kind in ("text/plain", "text/markdown") if kind in data]
    return "\n".join(texts)


def _site_text(path, lang: str = "zh_CN") -> str:
    """The words of the site's `lang` pages that are not in translations/: `EDITIONS[lang]` in site/build.py."""
    import ast

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "EDITIONS" for t in node.targets):
            editions = ast.literal_eval(node.value)
            return "\n".join(editions[lang].values())
    raise AssertionError(f"{path} has no EDITIONS dictionary")


def text_of(path) -> str:
    """The Chinese a reader sees in `path`: a translation (.md), a generated notebook, a catalogue's
    msgstrs (.po) or the site's build script (its Chinese edition's words)."""
    suffix = path.suffix
    if suffix == ".ipynb":
        return _notebook_text(path)
    if suffix == ".po":
        return _translations(path)
    if suffix == ".py":
        return _site_text(path)
    return path.read_text(encoding="utf-8")


def sources() -> list:
    files = sorted(ZH.rglob("*.md"))
    assert len(files) >= len(course.lessons()), "translations/zh_CN/ holds fewer files than there are lessons"
    return files


def notebooks() -> list:
    files = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert len(files) == len(course.lessons()), "notebooks/zh_CN/ lacks a lesson's notebook (make release)"
    return files


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ZH)))
def test_a_translation_uses_the_glossary_terms(path):
    found = problems(text_of(path))
    assert not found, f"{path.relative_to(course.ROOT)}:\n" + "\n".join(found)


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.name)
def test_a_chinese_notebook_uses_the_glossary_terms(path):
    """What the student opens: the generated notebook, printed outputs included."""
    found = problems(text_of(path))
    assert not found, f"{path.relative_to(course.ROOT)}:\n" + "\n".join(found)


def test_the_site_uses_the_glossary_terms():
    text = text_of(SITE)
    assert "课程" in text, "site/build.py's Chinese edition was not read"
    found = problems(text)
    assert not found, f"{SITE.relative_to(course.ROOT)} (EDITIONS['zh_CN']):\n" + "\n".join(found)


PLANTED = "从检查点载入的模型，计数平局时合并字符对"


@pytest.mark.parametrize("kind", ["notebook", "catalogue", "site", "translation"])
def test_a_planted_variant_fails(kind, tmp_path):
    """Each reader sees a variant planted in a temporary copy of what it reads (the checkout is left alone)."""
    import shutil

    import nbformat

    if kind == "notebook":
        copy = shutil.copy(notebooks()[-1], tmp_path / "planted.ipynb")
        nb = nbformat.read(copy, as_version=4)
        cell = nbformat.v4.new_code_cell("print(1)")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=PLANTED)]
        nb.cells.append(cell)
        nbformat.write(nb, copy)
    elif kind == "catalogue":
        copy = tmp_path / "byhand.po"
        text = CATALOGUE.read_text(encoding="utf-8")
        copy.write_text(text + f'\nmsgid "planted"\nmsgstr "{PLANTED}"\n', encoding="utf-8")
    elif kind == "site":
        copy = tmp_path / "build.py"
        text = SITE.read_text(encoding="utf-8")
        copy.write_text(text.replace('"lessons": "课程"', f'"lessons": "{PLANTED}"'), encoding="utf-8")
    else:
        copy = tmp_path / "planted.md"
        copy.write_text(
            (ZH / "12_training.md").read_text(encoding="utf-8") + "\n" + PLANTED, encoding="utf-8"
        )
    from pathlib import Path

    copy = Path(copy)
    assert not problems(PLANTED.replace("载入", "加载").replace("平局", "并列").replace("字符对", "token 对"))
    found = problems(text_of(copy))
    assert {"载入", "平局", "字符对"} <= {f.split("'")[1] for f in found}, found


def test_the_check_messages_use_the_glossary_terms():
    """The Chinese of byhand.po: the checks' messages, the grader's pages and notes, the setup cell."""
    text = _translations(CATALOGUE)
    assert len(text.splitlines()) > 500, "byhand.po holds fewer translations than the checks' messages"
    found = problems(text)
    assert not found, f"{CATALOGUE.relative_to(course.ROOT)} (msgstr):\n" + "\n".join(found)


def test_the_glossary_table_uses_its_own_terms():
    table = GLOSSARY.read_text(encoding="utf-8").split(VARIANTS_HEADING, 1)[0]
    # the notes column names the other books' terms on purpose: only the Chinese column is checked
    chinese = "\n".join(
        line.split("|")[2] for line in table.splitlines() if line.startswith("|") and line.count("|") >= 4
    )
    assert not problems(chinese)


def test_the_lint_can_fail():
    assert problems("被遮住的分数") and problems("Vaswani et al. 2017") and problems("见第 01 课")
    assert problems("一个小的前馈网络") and not problems("前馈全连接层（逐位置前馈网络）")
    assert not problems("层归一化（LayerNorm；d2l 译作“层规范化”）") and problems("层规范化在这里")
    # a parenthesis is a gloss only right after the term it glosses
    assert problems("RoFormer（Su et al., 2021）") and problems("维护一个最大值（运行最大值）")
    assert not problems("当前最大值（运行最大值）") and problems("融合内核") and not problems("融合算子")
    assert problems("每个批、每个头") and not problems("每个批大小") and problems("位置的偏移")
    # the drifts of issue 55: one word for load, ties, shifted targets, BPE's pair, a stack, "N times fewer"
    assert (
        problems("装入已发布的词表")
        and problems("（Kingma 与 Ba，2015）")
        and not problems("Kingma 和 Ba，2015")
    )
    assert (
        problems("targets 没有平移") and problems("沿时间轴（dim 1）平移") and not problems("整体平移的位置")
    )
    assert problems("更新次数少了大约 18 倍") and problems("Post-LN 的栈") and not problems("调用栈")
    assert problems("钦定版圣经") and problems("两对平局") and not problems("Pre-LN 与 Post-LN，2017")


def test_the_lecture_notes_terms_are_named():
    """Where a learner of the lecture notes looks: the glossary names each of their terms, lesson 2
    ties 层归一化 to 层规范化 and 规范化层 once, lesson 3 calls SublayerConnection 子层连接."""
    glossary = GLOSSARY.read_text(encoding="utf-8").split(VARIANTS_HEADING, 1)[0]
    for term in ("子层连接结构", "规范化层", "层规范化", "前馈全连接层", "子层连接"):
        assert term in glossary, f"docs/glossary-zh.md does not name {term}"
    ln = (ZH / "02_layernorm.md").read_text(encoding="utf-8")
    assert ln.count("层规范化") == 1 and ln.count("规范化层") == 1, "lesson 2 names them once"
    residual = (ZH / "03_residual.md").read_text(encoding="utf-8")
    assert "子层连接" in residual and "SublayerConnection" in residual


def _first_token(text: str):
    """Where a lesson's prose first says "token" (code, math and cell markers left out), or None."""
    prose = re.sub(
        r"<!--.*?-->", lambda m: " " * len(m.group(0)), CODE.sub(lambda m: " " * len(m.group(0)), text)
    )
    return re.search(r"(?<![A-Za-z_])token(?![A-Za-z_])", prose)


@pytest.mark.parametrize("lesson", course.lessons())
def test_token_is_glossed_at_its_first_use_in_every_lesson(lesson):
    """token（词元） the first time each lesson says it (a reader may open any lesson first), then "token"."""
    text = (ZH / f"{lesson}.md").read_text(encoding="utf-8")
    first = _first_token(text)
    if first is None:
        return
    line = text[: first.start()].count("\n") + 1
    assert text[first.end() :].startswith("（词元）"), (
        f"translations/zh_CN/{lesson}.md line {line}: got {text[first.start() : first.end() + 8]!r}, expected token（词元）"
    )


def test_the_token_gloss_check_can_fail():
    assert _first_token("每个 `token` 和 $token$ 都是代码；每个 token（词元）").start() == len(
        "每个 `token` 和 $token$ 都是代码；每个 "
    )
    assert _first_token("没有这个词") is None
