"""Do lesson 13's router, dispatch and balancing loss agree with Hugging Face's Mixtral given the same
weights?

`transformers.models.mixtral.modeling_mixtral.MixtralSparseMoeBlock` (its gate a bias-free Linear,
its experts SwiGLU `w2(silu(w1(x)) * w3(x))` in a list, top-k with renormalised weights; transformers
4.57: 5.x fuses the experts into one module) and its `load_balancing_loss_func`, which sums the
fractions over the k slots: k times the lesson's loss. The lesson's reference answers are what runs
(tests/lesson_code.py). Skipped where `transformers` is absent, which is everywhere the Makefile
installs: transformers 4.57.6 asks for tokenizers <= 0.23.0 and requirements.txt pins 0.23.3
(lesson 11), so pip refuses the two together. To run it: `pip install transformers==4.57.6` in a
copy of the venv (it downgrades tokenizers), then `pytest tests/test_published_mixtral.py`.
"""

from __future__ import annotations

import pytest
import torch
from lesson_code import lesson_fixture, upper_case_names

# transformers' import takes seconds; lesson 13's own checks, against a plain per-token loop, hold
# the reference in the gate
pytestmark = pytest.mark.full

mixtral = pytest.importorskip("transformers.models.mixtral.modeling_mixtral")
MixtralConfig = pytest.importorskip("transformers").MixtralConfig


lesson = lesson_fixture("lesson", "13_mixture_of_experts", assigns=upper_case_names)


def _block(d, d_ff, e, k, seed):
    torch.manual_seed(seed)
    config = MixtralConfig(hidden_size=d, intermediate_size=d_ff, num_local_experts=e, num_experts_per_tok=k)
    block = mixtral.MixtralSparseMoeBlock(config).eval()
    with torch.no_grad():
        for p in block.parameters():
            p.normal_(0.0, 0.5)  # the default init is tiny: spread the router's probabilities
    return block


@pytest.mark.parametrize("d,d_ff,e,k,seed", [(16, 24, 8, 2, 0), (12, 20, 4, 1, 1), (20, 12, 6, 3, 2)])
def test_route_and_moe_forward_match_mixtral(lesson, d, d_ff, e, k, seed):
    """Given Mixtral's weights, are route's experts and weights and moe_forward's output Mixtral's?"""
    block = _block(d, d_ff, e, k, seed)
    x = torch.randn(3, 11, d, generator=torch.Generator().manual_seed(100 + seed))
    with torch.no_grad():
        y_hf, logits = block(x)
        flat = x.reshape(-1, d)
        w_gate = block.gate.weight.T  # nn.Linear keeps (E, d): the lesson's w_gate is (d, E)
        weights, experts = lesson["route"](flat, w_gate, k)
        probs = torch.softmax(logits.float(), dim=-1)
        w_hf, e_hf = torch.topk(probs, k, dim=-1)
        y = lesson["moe_forward"](flat, w_gate, list(block.experts), k)
    assert torch.equal(experts, e_hf), (
        f"got experts {experts[:3].tolist()}, expected Mixtral's {e_hf[:3].tolist()}"
    )
    torch.testing.assert_close(weights, w_hf / w_hf.sum(-1, keepdim=True), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(y.reshape(y_hf.shape), y_hf, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("e,k", [(8, 2), (4, 1), (6, 3)])
def test_balancing_loss_is_mixtrals_over_k(lesson, e, k):
    """Is Hugging Face's Mixtral balancing loss k times the lesson's (it sums f over the k slots)?"""
    logits = torch.randn(40, e, generator=torch.Generator().manual_seed(e), dtype=torch.float64) * 1.5
    probs = torch.softmax(logits, dim=-1)
    experts = torch.topk(probs, k, dim=-1).indices
    ours = lesson["load_balancing_loss"](probs, experts, e)
    theirs = mixtral.load_balancing_loss_func((logits,), num_experts=e, top_k=k)
    torch.testing.assert_close(theirs.to(torch.float64), k * ours, rtol=1e-6, atol=1e-9)
