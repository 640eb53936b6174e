"""The texts shipped in the checks package: there, whole, split without loss, and in the wheel."""

import zipfile

import pytest
from byhand import corpus


@pytest.mark.parametrize("name", ["en", "zh"])
def test_train_and_heldout_make_the_whole_text(name):
    text = corpus.load_text(name)
    train, heldout = corpus.load_text(name, "train"), corpus.load_text(name, "heldout")
    assert train + heldout == text
    assert 0.05 < len(heldout) / len(text) < 0.15, f"got a held-out share of {len(heldout) / len(text):.3f}"
    assert train.endswith("\n\n") and not heldout.startswith("\n")


def test_the_texts_are_what_the_readme_says():
    en, zh = corpus.load_text("en"), corpus.load_text("zh")
    assert len(en.encode()) > 4_000_000 and en.startswith("Genesis 1\nIn the beginning God created")
    assert en.rstrip().endswith("The grace of our Lord Jesus Christ be with you all. Amen.")
    assert en.count("\n\n") == 1189 - 1, "got a chapter count other than the King James Version's 1,189"
    assert len(zh) > 100_000 and "\x1b" not in zh  # colour codes stripped
    assert "床前明月光" in zh or "兰叶春葳蕤" in zh
    cjk = sum("\u4e00" <= c <= "\u9fff" for c in zh)
    assert cjk / len(zh) > 0.7, f"got {cjk / len(zh):.2f} of the characters Chinese"


def test_gpt2_files_are_the_published_ones():
    enc, merges = corpus.gpt2_encoder(), corpus.gpt2_merges()
    assert len(enc) == 50257 and len(merges) == 50000
    assert enc["<|endoftext|>"] == 50256 and enc["!"] == 0
    assert merges[0] == ("Ġ", "t") and all(len(m) == 2 for m in merges)
    assert enc["".join(merges[0])] == 256  # merge of rank r makes token 256 + r


@pytest.mark.parametrize("bad", [("fr", None), ("en", "test")])
def test_unknown_names_are_refused(bad):
    with pytest.raises(ValueError):
        corpus.load_text(*bad)


@pytest.mark.slow  # builds the wheel
def test_the_wheel_carries_the_texts(tmp_path):
    from autograder.tooling import student

    names = zipfile.ZipFile(student.build_wheel(tmp_path)).namelist()
    for f in ("en.txt.xz", "zh.txt.xz", "gpt2_vocab.json.xz", "gpt2_merges.txt.xz", "README.md"):
        assert f"byhand/data/{f}" in names, f"got {sorted(n for n in names if 'data' in n)}"
