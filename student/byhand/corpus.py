"""Real text shipped with the checks package, so a notebook in Colab has it after one pip install.

`load_text("en")` is the King James Version of the Bible (public domain), `load_text("zh")` classical
Chinese poetry and prose (public domain); `gpt2_encoder()` and `gpt2_merges()` are GPT-2's published
vocabulary and merges (MIT). Sources and licences: byhand/data/README.md.
"""

import functools
import json
import lzma
from importlib import resources

TEXTS = {"en": "en.txt.xz", "zh": "zh.txt.xz"}
SPLITS = (None, "train", "heldout")
HELDOUT_FRACTION = 0.1  # the last tenth, cut at a paragraph boundary


@functools.cache
def _read(filename: str) -> str:
    with resources.files(__package__).joinpath("data", filename).open("rb") as f:
        return lzma.decompress(f.read()).decode("utf-8")


def _cut(text: str) -> int:
    """Where held-out text begins: the first paragraph break after 90% of the characters."""
    at = text.find("\n\n", int(len(text) * (1 - HELDOUT_FRACTION)))
    return len(text) if at < 0 else at + 2


def load_text(name: str, split: str | None = None) -> str:
    """The shipped text `name` ("en" or "zh"): whole, or its "train" part (the first nine tenths,
    ending at a paragraph break) or its "heldout" part (the rest); train + heldout == the whole."""
    if name not in TEXTS:
        raise ValueError(f"unknown text {name!r}; expected one of {sorted(TEXTS)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    text = _read(TEXTS[name])
    if split is None:
        return text
    cut = _cut(text)
    return text[:cut] if split == "train" else text[cut:]


def gpt2_encoder() -> dict[str, int]:
    """GPT-2's published vocabulary (encoder.json, also shipped as vocab.json): token -> id, tokens
    spelled in GPT-2's printable stand-ins for bytes."""
    return json.loads(_read("gpt2_vocab.json.xz"))


def gpt2_merges() -> list[tuple[str, str]]:
    """GPT-2's published merges (vocab.bpe, also shipped as merges.txt), in rank order, spelled in the
    same printable stand-ins; the file's first line is a version comment."""
    lines = _read("gpt2_merges.txt.xz").splitlines()
    return [tuple(line.split(" ")) for line in lines[1:] if line]
