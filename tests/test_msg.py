"""A check message built from a catalogue id (byhand.i18n.Msg): it is its English text, it keeps its
id and fields through `+` and `join`, and it is rendered in another language through the gettext
catalogue, its `Msg` fields translated and its plain fields copied as data."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest
from byhand import _core, _judge, i18n
from byhand.i18n import N_, Msg, msg

LANG = "zh_CN"
SHAPE = "{what} has the wrong shape."  # an id of the catalogue (byhand._judge.expect_tensor)


def test_a_message_is_its_english_text():
    m = msg(SHAPE, what="weights")
    assert m == "weights has the wrong shape."
    assert isinstance(m, str) and "wrong" in m
    assert (m.msgid, m.fields) == (SHAPE, {"what": "weights"})


def test_a_message_is_rendered_from_its_id_with_its_data_copied():
    where = "in your code: {cell}, line {line}"  # an id of the catalogue (answer_error_message)
    got = i18n.localize(msg(where, cell="In [3]", line=7), LANG)
    translation = i18n.translations(LANG).gettext(where)
    assert translation != where, f"got no {LANG} translation of {where!r}"
    assert got == translation.format(cell="In [3]", line=7)
    assert i18n.localize(msg(where, cell="In [3]", line=7), "en") == "in your code: In [3], line 7"


def test_a_field_that_is_a_message_is_translated_too():
    inner = msg("the forward output of {who}", who="Fn")
    got = i18n.localize(msg(SHAPE, what=inner), LANG)
    assert "Fn" in got and "forward" not in got, got


def test_concatenation_keeps_both_sides_structure():
    head = msg(SHAPE, what="x")
    for joined in (
        head + _core.got_expected((2, 3), (2, 4)),
        "" + head + _core.LINE + msg("on input: {label}", label="x"),
    ):
        assert isinstance(joined, Msg) and joined.msgid is None
        assert all(isinstance(p, Msg) or not p.strip() for p in joined.parts), joined.parts
        zh = i18n.localize(joined, LANG)
        assert zh.count("\n") == str(joined).count("\n")
        assert not i18n.untranslated(joined, LANG), i18n.untranslated(joined, LANG)
    both = i18n.join("; ", [N_("use out-of-place ops"), msg(SHAPE, what="x")])
    assert str(both) == "use out-of-place ops; x has the wrong shape."
    assert "out-of-place" not in i18n.localize(both, LANG)


def test_an_f_string_flattens_a_message_to_english():
    flat = f"{msg(SHAPE, what='x')}"
    assert type(flat) is str and i18n.untranslated("  " + flat + " zzz", LANG)


def test_a_failure_keeps_its_message_and_hint():
    hint = N_("use out-of-place ops")
    failure = _core.CheckFailure(msg(SHAPE, what="x") + _core.hint_line(hint))
    assert isinstance(i18n.message_of(failure), Msg)
    assert failure.hint == "use out-of-place ops" and isinstance(failure.hint, Msg)
    assert str(failure) == "x has the wrong shape.\n  hint: use out-of-place ops"


def test_two_mistakes_at_once_name_both_in_the_language():
    pairs = _judge.with_pairs(
        [(N_("use out-of-place ops"), {"a": 1}), (N_(SHAPE), {"b": 2})], lambda **kw: kw
    )
    both = pairs[-1][0]
    assert str(both).startswith("two mistakes at once: use out-of-place ops; and ")
    assert "mistakes" not in i18n.localize(both, LANG)


def test_a_message_pickles_with_its_id_and_fields():
    """A message that crosses a process (a submission's notes, sent to a grading worker) is still
    rendered in the notebook's language there; a field that is no plain data goes as its text."""
    m = msg(SHAPE, what=N_("the output")) + _core.LINE + msg("got:      {got}", got=object())
    for back in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert back == m and isinstance(back, Msg) and back.msgid is None
        assert [getattr(p, "msgid", p) for p in back.parts] == [getattr(p, "msgid", p) for p in m.parts]
        assert i18n.localize(back, LANG) == i18n.localize(m, LANG)
    diagnosis = pickle.loads(pickle.dumps(_judge.Diagnosis(N_("use out-of-place ops"))))
    assert type(diagnosis) is _judge.Diagnosis and diagnosis.msgid == "use out-of-place ops"


@pytest.mark.parametrize("value", [3, (2, 3), "torch.float32"])
def test_data_fields_are_copied_as_they_are(value):
    zh = i18n.localize(msg("got:      {got}", got=value), LANG)
    assert zh.endswith(str(value)) and zh != f"got:      {value}"


def test_the_class_report_names_a_mistake_as_the_feedback_said_it(tmp_path):
    from autograder.judge import grade
    from autograder.record.report import write_report

    q, english, said = "causal_mask", "zz a hint with 7 in it", "带数字 7 的提示"
    graded = [
        grade.Graded(
            student,
            "01_attention",
            [grade.Row(student, "01_attention", q, 0, 2, "failed", "消息")],
            hints=[(q, english, said)],
            lang=LANG,
        )
        for student in ("ann", "bo")
    ]
    page = write_report(tmp_path, graded).read_text(encoding="utf-8")
    assert said in page and english not in page
    # a grade saved before the grader kept what it said: the catalogue's lookup by the English
    old = [grade.Graded("cy", "01_attention", graded[0].rows, hints=[(q, english)], lang=LANG)]
    assert english in write_report(tmp_path / "old", old).read_text(encoding="utf-8")


def test_a_language_is_its_gettext_catalogue():
    """A language is known by its compiled catalogue (locale/<lang>/LC_MESSAGES/byhand.mo), and the
    class report's hint lookup is the catalogue's: no regular expression translates anything."""
    from autograder.judge import grade

    before = i18n.language()
    try:
        assert i18n.language(LANG) == LANG
    finally:
        i18n.language(before)
    with pytest.raises(ModuleNotFoundError):
        i18n.language("xx_XX")
    assert grade.known_language(LANG) and not grade.known_language("xx_XX")
    assert not grade.known_language("../zh_CN")
    hint = "use out-of-place ops"
    assert i18n.hint(hint, LANG) == i18n.translations(LANG).gettext(hint) != hint
    assert i18n.hint("zz no such hint", LANG) == "zz no such hint"
    assert not list((Path(i18n.__file__).parent).glob("messages_*.py")), "a catalogue of regular expressions"


def test_what_stays_english_is_reported():
    """An id the catalogue lacks stays English and is reported; a plain field is data, unless it is
    prose in a field that names something (it should have been a `Msg`)."""
    missing = i18n.msg("zz an id nobody translated {x}", x=1)
    assert i18n.localize(missing, LANG) == str(missing)
    assert i18n.untranslated(missing, LANG) == [str(missing)]
    data = i18n.msg("on input: {label}", label="q (2, 3) torch.float32")
    assert i18n.untranslated(data, LANG) == [] and "q (2, 3) torch.float32" in i18n.localize(data, LANG)
    prose = i18n.msg("on input: {label}", label="fresh parameters, x (2, 3)")
    assert i18n.untranslated(prose, LANG) == ["fresh parameters, x (2, 3)"]
    glued = "the sum was " + i18n.msg("on input: {label}", label="x")
    assert i18n.untranslated(glued, LANG) == ["the sum was "]


@pytest.mark.parametrize("kind", ["tensor of dtype torch.complex64", "generator", "missing attribute (no w)"])
def test_an_output_the_wire_does_not_carry_is_named_in_the_language(kind):
    """A student's output that is no tensor or number (`_core.Unsupported`), shown in a "got:" line:
    its English as before, its words from the catalogue, the type's name kept."""
    shown = repr(_core.Unsupported(kind))
    assert shown == f"<a {kind}>" and isinstance(shown, Msg)
    zh = i18n.localize(shown, LANG)
    assert zh != shown and not i18n.untranslated(shown, LANG), zh
    assert kind.split()[-1].strip(")") in zh, zh
