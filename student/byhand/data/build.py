"""Rebuild the shipped texts from Debian packages (a maintainer's step; nothing runs this at lesson time).

    apt-get download bible-kjv-text fortunes-zh && apt-get install bible-kjv
    python build.py KJV_DUMP FORTUNES_DIR GPT2_ASSETS_DIR

KJV_DUMP is `bible 'gen1:1-rev22:21'` written to a file (the bible-kjv program of Debian's bible-kjv
decodes bible-kjv-text's compressed data); FORTUNES_DIR holds fortunes-zh's files (tang300, song100,
chinese); GPT2_ASSETS_DIR is whisper/assets/gpt2 of the openai-whisper 20230124 source release.
"""

import lzma
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
# Sources in the fortunes file "chinese" that are classical texts (authors dead for centuries);
# the rest of that file (modern books, the Debian code of conduct) is left out.
CLASSICAL = ("《论语》", "《道德经》", "《菜根谭》", "《增广贤文》")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def kjv(dump: str) -> str:
    chapters, verses = [], []
    for line in dump.splitlines():
        if not line.strip():
            continue
        m = re.match(r"^  ?\s*(\d+) (.*)$", line)
        if re.match(r"^[1-3]?\s?[A-Z][A-Za-z ]+ \d+$", line):  # "Genesis 1", "1 Kings 3"
            if verses:
                chapters.append(verses)
            verses = [line]
        elif m and line.startswith(" "):
            verses.append(m.group(2))
        else:  # a wrapped verse continues
            verses[-1] += " " + line.strip()
    chapters.append(verses)
    return "\n\n".join("\n".join(c) for c in chapters) + "\n"


def fortunes(text: str, keep=lambda e: True) -> list[str]:
    out = []
    for entry in text.split("\n%\n"):
        entry = ANSI.sub("", entry).strip("\n%")
        if entry.strip() and keep(entry):
            out.append("\n".join(line.strip() for line in entry.splitlines()))
    return out


def main(kjv_dump, fortunes_dir, gpt2_dir):
    en = kjv(Path(kjv_dump).read_text(encoding="utf-8"))
    d = Path(fortunes_dir)
    zh = fortunes((d / "tang300").read_text(encoding="utf-8"))
    zh += fortunes((d / "song100").read_text(encoding="utf-8"))
    zh += fortunes((d / "chinese").read_text(encoding="utf-8"), lambda e: any(s in e for s in CLASSICAL))
    for name, text in (("en", en), ("zh", "\n\n".join(zh) + "\n")):
        (HERE / f"{name}.txt.xz").write_bytes(
            lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME)
        )
    for f in ("vocab.json", "merges.txt"):
        with open(Path(gpt2_dir) / f, "rb") as src, lzma.open(HERE / f"gpt2_{f}.xz", "wb", preset=9) as dst:
            shutil.copyfileobj(src, dst)


if __name__ == "__main__":
    main(*sys.argv[1:4])
