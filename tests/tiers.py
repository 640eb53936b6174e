"""Which entries of the catalogue each target runs: `make test-fast` a sample, the rest by marker.

The catalogue (examples/answers) holds hundreds of mistakes. A change to a check most often breaks
its own question, so `make test-fast` keeps one mistake of each question (or one entry of each
lesson), the cheapest one measured (`CHEAPEST`; the first in the catalogue when none is listed),
and the others carry a marker: `breadth` (the gate, `make test`, still runs them) or `full` (only
`make test-full`). The test ids are `<lesson>-<name>` whatever the tier.

A question whose hidden cases cost seconds of CPU whatever the answer, or for its only mistake
(`HIDDEN_COSTS`: an optimizer run for hundreds of steps, a trainer timed against another), keeps
in `make test-fast` only the tests that run its visible cases; a test that runs the hidden cases
too says so (`tiered(..., hidden=True)`): its sample of such a question is `breadth` (the gate)
and its other mistakes `full` (every mistake's visible check stays in the gate, marked `breadth`).

How the costs were measured: `python tests/mistake_costs.py LESSON...` (CPU seconds of each mistake's
visible and hidden checks, and of each question's reference): docs/testing.md.
"""

from __future__ import annotations

import pytest

from examples import answers_for, catalogued

# (lesson, question) -> the mistake `make test-fast` takes for it, where the first catalogued one costs
# more than another (CPU of its visible + hidden checks, tests/mistake_costs.py, 2026-12-07)
CHEAPEST = {
    ("10_flash_attention", "flash_attention_forward"): "fwd_ragged_query_block_dropped",  # 0.8 s, first 2.0
    ("10_flash_attention", "flash_attention_backward"): "bwd_full_p",  # 1.7 s, first 2.7
    ("11_tokenizer", "train_bpe_naive"): "naive_str_tokens",  # 0.9 s, first 1.4
}
# lesson -> its entry for a sample of one mistake per lesson (`first_of="lesson"`)
CHEAPEST_OF_LESSON = {
    "10_flash_attention": "fn_no_none_for_is_causal",  # 0.15 s, first 2.0
    "11_tokenizer": "encode_highest_rank_first",  # 0.8 s, first 1.4
}
# questions whose hidden cases cost seconds of CPU for every answer, or for their only mistake
HIDDEN_COSTS = {
    ("11_tokenizer", "train_bpe"),  # its one mistake (counts gone stale): 3.3 s hidden, 0.8 visible
    ("11_tokenizer", "train_bpe_speed"),  # the trainer timed against the naive one: 8 s hidden
    ("12_training", "AdamW"),  # hundreds of optimizer steps per case
}


def tiered(
    attr: str, *, first_of: str = "question", rest=pytest.mark.breadth, beyond_question=None, hidden=False
) -> list:
    """pytest params (lesson, name) of every entry of `MISTAKES` or `ALTERNATIVES` (attr), in
    catalogue order. The sample entry of each `first_of` ("question" or "lesson"; an alternative has
    no question of its own, so its lesson) has no mark: the one `CHEAPEST` (or `CHEAPEST_OF_LESSON`)
    names, else the first. The others are marked `rest`, and those that are not the sample of their
    question `beyond_question` instead, when it is given. `hidden`: the test runs the hidden cases,
    so the sample of a question in `HIDDEN_COSTS` is marked `rest` too, and its others `full`."""
    entries = catalogued(attr)
    question_of = {
        (lesson, name): (lesson, answers_for(lesson).MISTAKES[name]["question"])
        if attr == "MISTAKES"
        else None
        for lesson, name in entries
    }
    sample_of_question, sample_of_lesson = {}, {}
    for lesson, name in entries:
        question = question_of[lesson, name]
        if question is not None:
            sample_of_question.setdefault(question, name)
        sample_of_lesson.setdefault(lesson, name)
    for table, samples in ((CHEAPEST, sample_of_question), (CHEAPEST_OF_LESSON, sample_of_lesson)):
        for key, name in table.items():
            if attr == "MISTAKES" and key in samples:
                lesson = key[0] if isinstance(key, tuple) else key
                assert (lesson, name) in question_of, (
                    f"tests/tiers.py names {lesson}:{name}, not in the catalogue"
                )
                if table is CHEAPEST:
                    assert question_of[lesson, name] == key, (
                        f"tests/tiers.py: {lesson}:{name} is not of {key[1]}"
                    )
                samples[key] = name
    params = []
    for lesson, name in entries:
        question = question_of[lesson, name]
        if first_of == "question" and question is not None:
            sampled = sample_of_question[question] == name
        else:
            sampled = sample_of_lesson[lesson] == name
        costly = hidden and question in HIDDEN_COSTS
        if sampled and not costly:
            marks = ()
        elif costly and sample_of_question[question] != name:
            marks = (pytest.mark.full,)
        elif beyond_question is not None and question is not None and sample_of_question[question] != name:
            marks = (beyond_question,)
        else:
            marks = (rest,)
        params.append(pytest.param(lesson, name, marks=marks, id=f"{lesson}-{name}"))
    return params
