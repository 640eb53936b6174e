"""What is wrong with the Chinese of one check message: lines byhand's catalogue does not translate
(student/byhand/locale/zh_CN/LC_MESSAGES/byhand.po), English sentences left in the localized text, numbers lost."""

from __future__ import annotations

import re

from byhand import i18n

LANG = "zh_CN"
ENGLISH_WORDS = re.compile(r"\b(?:the|is|should|not|your|got|expected|hint|input|raised|with|and)\b")


def untranslated(text: str) -> list:
    """The lines of an English check message that have no Chinese."""
    return [line.strip() for line in i18n.untranslated(text, LANG)]


def localization_problems(text: str) -> list:
    """What the localized message gets wrong: unchanged, an English sentence left, a number lost."""
    zh = i18n.localize(text, LANG)
    if zh == text:
        return ["the localized message is the English one"]
    problems = []
    for en_line, zh_line in zip(text.split("\n"), zh.split("\n")):
        if "on input:" in en_line:  # the input's label is data (shapes, dtypes, code)
            continue
        if ENGLISH_WORDS.search(re.sub(r"`[^`]*`", "", zh_line)):
            problems.append(f"English left in {zh_line!r}")
        problems += [
            f"{number} lost from {zh_line!r}"
            for number in re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?", en_line)
            if number not in zh_line
        ]
    return problems
