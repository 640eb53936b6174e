"""Do the claims of lesson 07_decoder hold on seeds the notebook does not use?

The notebook asserts its claims on seeds 0-2 (and nbval re-runs them). Here the same experiment
code, taken from the solution notebook (its plain cells, and the functions, classes and UPPERCASE
constants of its demo cells), runs with the reference answers over sweeps:

- the entropy rate, computed from the grammar, against sentences sampled from it (an independent
  parse gives each sentence's probability);
- the initial loss and the "repeat the current word" of N(0, 1) tied embeddings: 20 seeds (10-29)
  at widths 16, 48 and 96, and GPT-2's plain and nanoGPT's scaled residual initialization;
- training (the lesson's 600 steps, width 48): 20 seeds (100-119) with the lesson's initialization
  and 20 (200-219) with the scaled residual one, a correct answer too: the held-out loss against the
  bigram model and the floor, the agreement rule (and when it appears), what the rule is worth,
  grammatical samples at T = 0.7 and 1.0;
- a short run (300 steps, seeds 100-119): the rule is not reliably learned;
- cached and uncached greedy generation, token for token; the cache's speed-up at 50 to 400 tokens
  (seeds 10-11) and its memory.
"""

import math
import random

import pytest
import torch
from lesson_code import lesson_fixture, one_thread_each_test, upper_case_names

LESSON = "07_decoder"
INIT_SEEDS = range(10, 30)
TRAIN_SEEDS = range(100, 120)
SCALED_SEEDS = range(200, 220)
CACHE_SEEDS = (10, 11)


lesson = lesson_fixture("lesson", LESSON, assigns=upper_case_names, run_plain=True)
_one_thread = one_thread_each_test()


def _scaled_gpt(lesson):
    """The lesson's GPT with nanoGPT's reading of GPT-2's residual scaling: each block's two output
    projections from N(0, (0.02 / sqrt(2 n_layers))^2)."""

    class ScaledGPT(lesson["GPT"]):
        def __init__(self, *args):
            super().__init__(*args)
            for block in self.blocks:
                for w in (block.attn.proj.weight, block.mlp[2].weight):
                    torch.nn.init.normal_(w, std=0.02 / math.sqrt(2 * len(self.blocks)))

    return ScaledGPT


def _train(lesson, seeds, steps=None, gpt=None):
    """{seed: facts of one run}: the lesson's train() (its steps unless given), the rule probed every
    25 steps; `gpt` replaces the lesson's GPT class for the run."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    train = lesson["train"]
    original = train.__globals__["GPT"]
    if gpt is not None:
        train.__globals__["GPT"] = gpt
    cases = lesson["ATTRACTORS"]
    runs = {}
    try:
        for seed in seeds:
            kw = {} if steps is None else {"steps": steps}
            model, _, curve = train(
                seed, probe=lambda m: lesson["agreement_accuracy"](lesson["gpt_next_probs"](m), cases), **kw
            )
            runs[seed] = dict(model=model, test=lesson["held_out_loss"](model, lesson["TEST"]), curve=curve)
    finally:
        train.__globals__["GPT"] = original
        torch.set_num_threads(before)
    return runs


@pytest.fixture(scope="module")
def trained(lesson):
    return _train(lesson, TRAIN_SEEDS)


@pytest.fixture(scope="module")
def trained_scaled(lesson):
    return _train(lesson, SCALED_SEEDS, gpt=_scaled_gpt(lesson))


def _bigram(lesson):
    return -lesson["BIGRAM"][lesson["TEST"][:-1], lesson["TEST"][1:]].mean().item()


def test_entropy_rate_is_what_sampled_sentences_give(lesson):
    """The grammar's entropy rate (1.573 nats/token) within 0.01 of -log p per token of 40000 sampled
    sentences (seed 1000), p from an independent parse of each sentence?"""
    adj, noun, prep, verb_t = lesson["ADJ"], lesson["NOUN"], lesson["PREP"], lesson["VERB_T"]
    transitive = set(verb_t["sg"] + verb_t["pl"])

    def log_p(words):
        def noun_phrase(i):  # log p of the determiner, adjective and noun; the next index
            has_adj = words[i + 1] in adj
            lp = math.log(1 / 2) + (math.log(0.4 / len(adj)) if has_adj else math.log(0.6))
            return lp + math.log(1 / len(noun["sg"])), i + 2 + has_adj

        lp, i = noun_phrase(0)
        lp += math.log(1 / 2)  # the subject's number
        if words[i] in prep:
            sub, i = noun_phrase(i + 1)
            lp += math.log(0.5) + math.log(1 / len(prep)) + math.log(1 / 2) + sub
        else:
            lp += math.log(0.5)
        lp += math.log(0.5) + math.log(1 / 3)  # with an object or not; which verb
        verb, i = words[i], i + 1
        if verb in transitive:
            sub, i = noun_phrase(i)
            lp += math.log(1 / 2) + sub
        assert i == len(words)
        return lp

    rng = random.Random(1000)
    total = tokens = 0.0
    for _ in range(40000):
        s = lesson["sentence"](rng)
        total -= log_p(s[:-1])
        tokens += len(s)
    assert abs(total / tokens - lesson["ENTROPY_RATE"]) < 0.01, (total / tokens, lesson["ENTROPY_RATE"])
    assert abs(lesson["ENTROPY_RATE"] - 1.573) < 0.0005


def test_initial_loss_and_the_repeated_word(lesson):
    """Seeds 10-29, widths 16/48/96: std 0.02 (plain and scaled) starts within 0.1 of ln V; N(0, 1)
    tied embeddings give the input word a logit of 0.8-1.1 d and the top guess > 90% of the time?"""
    V, GPT, TEST = lesson["V"], lesson["GPT"], lesson["TEST"]
    scaled = _scaled_gpt(lesson)
    for d in (16, 48, 96):
        for seed in INIT_SEEDS:
            torch.manual_seed(seed)
            model = GPT(V, d, 4, 2, 32)
            loss = lesson["held_out_loss"](model, TEST)
            torch.nn.init.normal_(model.tok_emb.weight, std=1.0)
            default = lesson["held_out_loss"](model, TEST)
            own, repeats = lesson["own_logit"](model, TEST)
            torch.manual_seed(seed)
            scaled_loss = lesson["held_out_loss"](scaled(V, d, 4, 2, 32), TEST)
            assert abs(loss - math.log(V)) < 0.1 and abs(scaled_loss - math.log(V)) < 0.1, (d, seed, loss)
            assert default > math.log(V) + 2, (d, seed, default)
            assert 0.8 * d < own < 1.1 * d and repeats > 0.9, (d, seed, own, repeats)


@pytest.mark.parametrize("init", ["lesson", "scaled"])
def test_trained_gpt_beats_the_bigram_model_and_nears_the_floor(lesson, request, init):
    """600 steps, seeds 100-119 (and 200-219 scaled): held-out loss > 0.2 below the bigram model's,
    within 0.05 of the entropy rate?"""
    runs = request.getfixturevalue("trained" if init == "lesson" else "trained_scaled")
    bigram, floor = _bigram(lesson), lesson["ENTROPY_RATE"]
    losses = [r["test"] for r in runs.values()]
    print(
        f"{init}: held-out loss {min(losses):.4f}-{max(losses):.4f}, bigram {bigram:.4f}, floor {floor:.4f}"
    )
    for seed, r in runs.items():
        assert r["test"] < bigram - 0.2 and r["test"] - floor < 0.05, (seed, r["test"], bigram, floor)


@pytest.mark.parametrize("init", ["lesson", "scaled"])
def test_agreement_is_learned_late_and_suddenly(lesson, request, init):
    """600 steps, seeds 100-119 (200-219 scaled): the verb's number right > 90% at the end (bigram
    < 10%); below 50% at step 100; from below 50% to above 90% within 100 steps?"""
    runs = request.getfixturevalue("trained" if init == "lesson" else "trained_scaled")
    cases = lesson["ATTRACTORS"]
    bigram = lesson["agreement_accuracy"](
        lambda idx, last: lesson["BIGRAM"][idx[torch.arange(len(idx)), last]].exp(), cases
    )
    assert len(cases) > 100 and bigram < 0.1, (len(cases), bigram)
    for seed, r in runs.items():
        print(
            f"{init} seed {seed}: the verb's number right after 25, 50, ... steps:",
            [round(a, 2) for a in r["curve"]],
        )
    for seed, r in runs.items():
        curve = r["curve"]  # after 25, 50, ... steps
        assert curve[-1] > 0.9 and curve[3] < 0.5, (seed, curve)
        last_low = max(i for i, a in enumerate(curve) if a < 0.5)
        first_high = min(i for i, a in enumerate(curve) if a > 0.9)
        assert first_high - last_low <= 4, (seed, curve)


def test_most_of_the_gain_is_not_agreement(lesson, trained):
    """Seeds 100-119: the rule's worth (ln 2 at the verb of every other sentence) is less than a
    quarter of the gain over the bigram model?"""
    bigram, worth = _bigram(lesson), lesson["AGREEMENT_WORTH"]
    assert abs(worth - 0.5 * math.log(2) / 7.3) < 1e-9, worth
    for seed, r in trained.items():
        assert worth < 0.25 * (bigram - r["test"]), (seed, r["test"], bigram, worth)


def test_samples_are_grammatical(lesson, trained):
    """Seeds 100-119: grammatical sentences > 95% at T = 0.7 and > 90% at T = 1.0, bigram < 40%?"""
    generate, stoi = lesson["generate"], lesson["STOI"]
    prompts = torch.full((200, 1), stoi["."])
    frac = lesson["grammatical_fraction"]
    bigram = frac(lesson["bigram_samples"](200, 31, torch.Generator().manual_seed(5)))
    assert bigram < 0.4, bigram
    for seed, r in trained.items():
        for temp, floor in ((0.7, 0.95), (1.0, 0.9)):
            g = torch.Generator().manual_seed(50 + seed)
            got = frac(generate(r["model"], prompts, 31, temperature=temp, generator=g))
            print(f"seed {seed}, T = {temp}: {got:.3f} grammatical")
            assert got > floor and got > bigram + 0.3, (seed, temp, got)


def test_a_short_run_may_stop_before_the_rule(lesson):
    """300 steps, seeds 100-119: most seeds have the rule (> 90%), some have not learned it (< 50%; the
    lesson: one at 30% here, none on seeds 300-339, where 6 of 40 stopped part-way, at 65-89%); those
    without it still beat the bigram model by more than 0.15 nats per token?"""
    runs = _train(lesson, TRAIN_SEEDS, steps=300)
    final = {seed: r["curve"][-1] for seed, r in runs.items()}
    print("300 steps, the verb's number right:", {k: round(a, 2) for k, a in final.items()})
    print("300 steps, held-out loss:", {k: round(r["test"], 3) for k, r in runs.items()})
    assert sum(a < 0.5 for a in final.values()) >= 1, final
    assert sum(a > 0.9 for a in final.values()) >= len(final) // 2, final
    bigram = _bigram(lesson)
    for seed, r in runs.items():
        if final[seed] < 0.5:
            assert bigram - r["test"] > 0.15, (seed, r["test"], bigram)


def test_cached_equals_uncached_greedy(lesson, trained):
    """Greedy generation with and without the cache, token for token: 4 trained and 16 fresh models (seeds
    20-35; also equal on fresh seeds 600-619)?"""
    generate, test_ids = lesson["generate"], lesson["TEST"]
    prompts = torch.stack([test_ids[i * 37 + 3 : i * 37 + 9] for i in range(10)])  # (10, 6)
    models = [r["model"] for r in list(trained.values())[:4]]
    for seed in range(20, 36):
        torch.manual_seed(seed)
        models.append(lesson["GPT"](lesson["V"], 32, 4, 3, 32).eval())
    for model in models:
        a = generate(model, prompts, 26, temperature=0, use_cache=True)
        b = generate(model, prompts, 26, temperature=0, use_cache=False)
        assert torch.equal(a, b)


def test_cache_speed_up_grows_with_length(lesson):
    """Seeds 10 and 11: uncached over cached CPU time > 3 at 400 tokens, larger than at 50, and far
    below the operation count's factor (< 400 / 4)?"""
    for seed in CACHE_SEEDS:
        torch.manual_seed(seed)
        model = lesson["GPT"](lesson["V"], 64, 4, 2, 512).eval()
        ratio = {}
        for n in (50, 400):
            cached = lesson["generation_seconds"](model, n, True)
            uncached = lesson["generation_seconds"](model, n, False)
            ratio[n] = uncached / cached
        print(f"seed {seed}: speed-up {ratio}")
        assert 3 < ratio[400] < 100 and ratio[400] > ratio[50], (seed, ratio)


def test_cache_memory_is_2_l_b_t_d(lesson):
    """The cache of L blocks for B sequences of T positions holds 2 x L x B x T x d numbers?"""
    torch.manual_seed(0)
    for n_layers, b, t, d in ((2, 1, 17, 16), (3, 4, 9, 24)):
        model = lesson["GPT"](lesson["V"], d, 4, n_layers, 32)
        with torch.no_grad():
            _, cache = model(torch.zeros(b, t, dtype=torch.long))
        assert sum(x.numel() for kv in cache for x in kv) == 2 * n_layers * b * t * d
