"""Do the claims lesson 03_residual makes hold on seeds the notebook does not use?

Each test re-runs the lesson's own experiment code (tests/lesson_code.py) with the reference answers,
on fresh seeds, and asserts the lesson's sentence with the margins measured here (docs/api/03_residual.md
lists each claim, its test and the measured range).
"""

import pytest
import torch
import torch.nn as nn
from lesson_code import definitions, one_thread

SEEDS = range(5, 25)
PROPERTY_SEEDS = range(20)  # dropout, eval(), LayerNorm, no_grad: facts of PyTorch, still 20 draws


@pytest.fixture(scope="module")
def lesson():
    with one_thread():
        yield definitions("03_residual")


@pytest.mark.parametrize("seed", SEEDS)
def test_residual_connection_carries_the_gradient(lesson, seed):
    """Without the residual the first of 50 layers gets < 1e-8 of the last one's gradient; with it,
    > 0.5 of it, and no layer less than 0.1 of the largest?"""
    with one_thread():
        plain, resid = lesson["layer_grad_norms"](False, seed), lesson["layer_grad_norms"](True, seed)
    assert plain[0] / plain[-1] < 1e-8  # measured at most 3.6e-12 on seeds 5-24
    assert resid[0] / resid[-1] > 0.5  # measured at least 2.45
    assert resid.min() / resid.max() > 0.1


@pytest.mark.parametrize("seed", SEEDS)
def test_stream_scale_per_placement(lesson, seed):
    """Post-LN holds the stream at 1, Pre-LN grows it (every 8 blocks, > 1.3x over 24), the hybrid
    follows sqrt(1 + l) (within 20 % at l = 24), and a final LayerNorm brings Pre-LN back to 1?
    (The blocks are the reference SublayerConnection and HybridSublayerConnection.)"""
    with one_thread():
        post, _ = lesson["stream_scale"]("Post-LN", seed)
        pre, h_out = lesson["stream_scale"]("Pre-LN", seed)
        hybrid, _ = lesson["stream_scale"]("hybrid", seed)
    assert (post[1:] - 1).abs().max() < 1e-3
    every8 = pre[::8]
    assert (every8[1:] > every8[:-1]).all() and pre[-1] > 1.3 * pre[0]  # measured at least 1.44x
    assert abs(hybrid[-1] / 25**0.5 - 1) < 0.2  # measured within 12.3 %
    final = nn.LayerNorm(h_out.shape[-1])(h_out).detach()
    assert h_out.std(-1, unbiased=False).mean() > 1.3
    assert abs(final.std(-1, unbiased=False).mean() - 1) < 1e-3


@pytest.mark.parametrize("seed", SEEDS)
def test_ffn_is_position_wise(lesson, seed):
    """Does the FFN commute with shuffling the tokens, and give a token alone its in-sequence output?"""
    torch.manual_seed(seed)
    ffn = lesson["PositionwiseFeedForward"](8, 32)
    x = torch.randn(2, 6, 8)
    perm = torch.randperm(6)
    with torch.no_grad():
        y = ffn(x)
        assert torch.allclose(ffn(x[:, perm]), y[:, perm], atol=1e-6)
        assert torch.allclose(ffn(x[:, 2:3]), y[:, 2:3], atol=1e-6)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
@pytest.mark.parametrize("seed", PROPERTY_SEEDS)
def test_dropout_zeroes_p_and_rescales_in_training_only(seed, p):
    """nn.Dropout(p) in training: about p of the elements zeroed, the rest times 1/(1-p), mean kept;
    in eval: the input itself?"""
    torch.manual_seed(seed)
    drop = nn.Dropout(p)
    x = 2.0 + torch.rand(1000, 1000)
    y = drop(x)
    kept = y != 0
    assert abs((~kept).float().mean() - p) < 0.01  # 1e6 draws: std of the fraction 5e-4
    assert torch.allclose(y[kept] / x[kept], torch.full((), 1 / (1 - p)), rtol=1e-5)
    assert abs(y.mean() / x.mean() - 1) < 0.01
    drop.eval()
    assert torch.equal(drop(x), x)


@pytest.mark.parametrize("seed", PROPERTY_SEEDS)
def test_eval_freezes_no_parameter(lesson, seed):
    """After model.eval(), does every parameter still require grad, get a .grad, and move with a step?"""
    torch.manual_seed(seed)
    net = lesson["PositionwiseFeedForward"](8, 32, dropout=0.1)
    net.eval()
    assert not net.training and all(p.requires_grad for p in net.parameters())
    before = [p.detach().clone() for p in net.parameters()]
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net(torch.randn(4, 8)).pow(2).mean().backward()
    assert all(p.grad is not None for p in net.parameters())
    opt.step()
    assert all(not torch.equal(b, p) for b, p in zip(before, net.parameters()))


@pytest.mark.parametrize("seed", PROPERTY_SEEDS)
def test_layernorm_has_no_running_statistics(seed):
    """LayerNorm: no buffers, train() and eval() give the same output; BatchNorm: buffers, and not?"""
    torch.manual_seed(seed)
    ln, bn = nn.LayerNorm(8), nn.BatchNorm1d(8)
    x = 3.0 + 2.0 * torch.randn(16, 8)
    ln_train, bn_train = ln(x), bn(x)
    ln.eval()
    bn.eval()
    assert not list(ln.buffers()) and torch.equal(ln_train, ln(x))
    assert {n for n, _ in bn.named_buffers()} >= {"running_mean", "running_var"}
    assert not torch.allclose(bn_train, bn(x))


@pytest.mark.parametrize("seed", PROPERTY_SEEDS)
def test_no_grad_changes_no_forward_result(lesson, seed):
    """Under torch.no_grad(): the same numbers (only requires_grad differs), and dropout in training
    mode still drops?"""
    torch.manual_seed(seed)
    net = lesson["PositionwiseFeedForward"](8, 32, dropout=0.5)
    x = torch.randn(64, 8)
    net.eval()
    y = net(x)
    with torch.no_grad():
        y0 = net(x)
    assert torch.equal(y, y0) and y.requires_grad and not y0.requires_grad and y0.grad_fn is None
    net.train()
    with torch.no_grad():
        h = net.dropout(torch.ones(1000, 1000))
    assert abs((h == 0).float().mean() - 0.5) < 0.01
