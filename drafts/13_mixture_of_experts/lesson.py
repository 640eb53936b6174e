# %% [markdown]
# # Lesson 13: Mixture of experts, the feed-forward layer of the largest open models
#
# Mixtral 8x7B, DeepSeek-V2 and V3, Qwen3's MoE models, gpt-oss and Llama 4 keep lesson 9's block
# but replace its one feed-forward layer with **many experts**, of which a small **router** picks a
# few for each token. The model holds the parameters of all experts, but a token pays the FLOPs of
# only the few it visits: more parameters for the same compute per token.
#
# You build the parts by hand:
#
# 1. **the router**: top-k experts per token and their weights (`route`);
# 2. **dispatch without waste**: each expert runs once, on its own tokens only (`moe_forward`);
# 3. **capacity**: a fixed number of slots per expert, and the tokens that do not get one
#    (`expert_capacity`, `capacity_keep`);
# 4. **keeping experts busy**: the load-balancing loss and the router z-loss
#    (`load_balancing_loss`, `router_z_loss`);
# 5. **the MoE block**: routed and shared SwiGLU experts in lesson 9's pre-RMSNorm block, and its
#    active against its total parameters.
#
# **Time:** about 90 minutes; running the whole notebook takes under a minute on a 2-core CPU.
# **Prerequisites:** lesson 1 (the softmax) and lesson 9 (SwiGLU, RMSNorm, the pre-norm block); the
# SwiGLU expert is given as code here, so this notebook does not depend on lesson 9's answers.
#
# **How this notebook works.** Cells that say `# YOUR CODE HERE` are yours. Right after each one, a
# self-check cell runs your code on random inputs and tells you what is wrong, with a hint. Run the
# notebook top to bottom (Run > Run All Cells).

# %% [setup]
import importlib.util
import math
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)
torch.set_num_threads(1)

# The self-checks come from the course's package `byhand` (it needs torch, numpy, regex and matplotlib).
BYHAND = "git+https://github.com/<org>/<repo>#subdirectory=student"  # or the .whl from the course site
if "google.colab" in sys.modules and importlib.util.find_spec("byhand") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", BYHAND])  # Colab: install it here
    importlib.invalidate_caches()
try:
    from byhand import moe as checks
except ImportError:
    print(f'Self-checks are off. To turn them on: pip install "{BYHAND}", then restart the kernel.')

    class checks:  # a stand-in: each self-check says it is off, every other cell still runs
        def check(name, *args, **kwargs):
            print(f'{name}: self-checks are off (to turn them on: pip install "{BYHAND}")')

# %% [markdown]
# ## 1. The router
#
# A token $x \in \mathbb{R}^{d}$ meets a gate matrix $W_g \in \mathbb{R}^{d \times E}$, one column
# per expert. Its **router logits** are $x W_g$, its router probabilities their softmax over the $E$
# experts, and the token goes to the $k$ experts of largest probability:
#
# $$p = \operatorname{softmax}(x W_g), \qquad \mathcal{T} = \operatorname{top-}k(p), \qquad
# w_i = \frac{p_i}{\sum_{j \in \mathcal{T}} p_j} \;(i \in \mathcal{T}).$$
#
# Mixtral (Jiang et al., 2024, Section 2.1) and Qwen's MoE models (`norm_topk_prob`) renormalise the
# $k$ weights to sum to 1, as above; Switch Transformer (Fedus et al., 2022), with $k = 1$, and
# DeepSeek's unnormalised variant keep $w_i = p_i$. The softmax comes **before** the top-k: a
# softmax over the $k$ chosen logits alone gives the renormalised weights, but never the
# unnormalised ones.
#
# By hand first, on 4 tokens and 4 experts. Take $x = I$ (token $t$ is the unit vector $e_t$), so
# the logits are the rows of $W_g$; write them as logarithms of small integers and the softmax is
# those integers over their sum:
#
# | token | logits | probabilities | top 2 | weights, renormalised |
# | --- | --- | --- | --- | --- |
# | 0 | $\log(4, 2, 1, 1)$ | $(1/2, 1/4, 1/8, 1/8)$ | 0, 1 | $2/3, 1/3$ |
# | 1 | $\log(1, 1, 1, 1)$ | $(1/4, 1/4, 1/4, 1/4)$ | 0, 1 (ties: lower index) | $1/2, 1/2$ |
# | 2 | $\log(1, 3, 3, 1)$ | $(1/8, 3/8, 3/8, 1/8)$ | 1, 2 | $1/2, 1/2$ |
# | 3 | $\log(1, 1, 2, 4)$ | $(1/8, 1/8, 1/4, 1/2)$ | 3, 2 | $2/3, 1/3$ |
#
# Ties go to the **lower expert index**, so the same input always gives the same experts. Sorting
# with `stable=True` keeps equal values in index order; `torch.topk` promises no order among ties.

# %%
x_hand = torch.eye(4, dtype=torch.float64)  # 4 tokens, d = 4
w_hand = torch.tensor([[4, 2, 1, 1], [1, 1, 1, 1], [1, 3, 3, 1], [1, 1, 2, 4]], dtype=torch.float64).log()
probs_hand = torch.softmax(x_hand @ w_hand, dim=-1)  # (T, d) x (d, E) -> (T, E)
print(probs_hand)
top = torch.sort(probs_hand, dim=-1, descending=True, stable=True)  # equal values keep index order
print("top 2 experts:", top.indices[:, :2].tolist())

# %% [markdown]
# ## Exercise 1: `route`
#
# Write `route(x, w_gate, k, normalize=True)`: `x` is `(T, d)`, `w_gate` is `(d, E)`. Return
# `(weights, experts)`, both `(T, k)`: `experts` the indices (long) of the $k$ most probable
# experts of each token, most probable first, ties toward the lower index; `weights` their
# probabilities, divided by their sum over the $k$ when `normalize`. Same dtype as `x`.


# %% [answer] id=route_answer
def route(x, w_gate, k, normalize=True):
    """x (T, d), w_gate (d, E) -> (weights (T, k), experts (T, k) long)."""
    ### BEGIN SOLUTION
    probs = torch.softmax(x @ w_gate, dim=-1)  # (T, d) x (d, E) -> (T, E)
    top = torch.sort(probs, dim=-1, descending=True, stable=True)  # ties keep the lower index first
    weights, experts = top.values[:, :k], top.indices[:, :k]  # (T, k) each
    if normalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, experts
    ### END SOLUTION


# %% [tests] id=route points=2
# Self-check: the worked example above, ties, k from 1 to E, normalize True and False, float32 and
# float64, random gates whose logits have a non-zero mean.
checks.check("route", globals())
### BEGIN HIDDEN TESTS
checks.check("route", globals(), hidden=True)
### END HIDDEN TESTS

# %%
weights_hand, experts_hand = route(x_hand, w_hand, 2)
print(experts_hand.tolist())
print(weights_hand)
assert experts_hand.tolist() == [[0, 1], [0, 1], [1, 2], [3, 2]], "your route should pick the table's experts"
assert torch.allclose(weights_hand[0], torch.tensor([2 / 3, 1 / 3], dtype=torch.float64))

# %% [markdown]
# ## 2. Dispatch without waste
#
# The layer's output for token $t$ is the weighted sum of its $k$ experts' outputs:
#
# $$y_t = \sum_{i \in \mathcal{T}_t} w_{t,i}\, \operatorname{FFN}_i(x_t).$$
#
# Written as that loop, one token at a time, it is correct and slow. The fast form turns it around:
# **one call per expert, on all the tokens that chose it**. Flatten the $(T, k)$ choices to $T k$
# assignments; `argsort` them by expert, so each expert's assignments are contiguous; `bincount`
# says how many each expert has; `split` cuts the sorted list into one group per expert. Expert
# $e$ runs once on `x[tokens_e]`, and `index_add_` adds its weighted outputs back to their rows.
# Assignment $j$ of the flat list belongs to token $j // k$.
#
# The tiny case first: the 4 tokens above, top 2, so 8 assignments.

# %%
flat_hand = experts_hand.reshape(-1)  # (T*k,) the expert of each assignment
order_hand = torch.argsort(flat_hand, stable=True)  # assignments grouped by expert
print("experts of the assignments:", flat_hand.tolist())
print("sorted by expert:          ", flat_hand[order_hand].tolist())
print("their tokens:              ", (order_hand // 2).tolist())
print("tokens per expert:         ", torch.bincount(flat_hand, minlength=4).tolist())

# %% [markdown]
# Expert 0 runs on tokens 0 and 1, expert 1 on tokens 0, 1 and 2, expert 2 on 2 and 3, expert 3 on
# token 3: $2 + 3 + 2 + 1 = 8 = T k$ rows in all, against $T E = 16$ if every expert ran on every
# token and its output were masked. That factor $E / k$ is the whole point of a sparse layer.
# Building a $(T, E, d)$ tensor of every expert's output costs the same.
#
# ## Exercise 2: `moe_forward`
#
# Write `moe_forward(x, w_gate, experts, k, normalize=True)`: `x (T, d)`, `w_gate (d, E)`,
# `experts` a list of $E$ modules, each mapping `(n, d) -> (n, d)`. Route with your `route`, then
# dispatch as above: each expert is **called once, on exactly the tokens routed to it** (an
# expert with no token need not be called), and no tensor holds all $T \times E \times d$ values.
# Return `y (T, d)`. The check counts the rows each expert is called on and the largest tensor
# your code creates.


# %% [answer] id=moe_forward_answer
def moe_forward(x, w_gate, experts, k, normalize=True):
    """x (T, d), w_gate (d, E), experts: E modules (n, d) -> (n, d). Returns y (T, d)."""
    ### BEGIN SOLUTION
    weights, chosen = route(x, w_gate, k, normalize)  # (T, k) each
    flat = chosen.reshape(-1)  # (T*k,)
    order = torch.argsort(flat, stable=True)  # assignment ids, grouped by expert
    counts = torch.bincount(flat, minlength=len(experts)).tolist()  # assignments per expert
    y = torch.zeros_like(x)
    for e, idx in enumerate(order.split(counts)):
        if len(idx) == 0:
            continue
        tokens = idx // k  # (n_e,) the tokens of expert e
        out = experts[e](x[tokens])  # (n_e, d) -> (n_e, d)
        y.index_add_(0, tokens, out * weights.reshape(-1)[idx, None])
    return y
    ### END SOLUTION


# %% [tests] id=moe_forward points=3
# Self-check: against a per-token loop on random inputs (E from 4 to 8, k from 1 to 3, an expert
# that gets no token, float32 and float64), with the rows each expert is called on and the largest
# tensor your code creates.
checks.check("moe_forward", globals())
### BEGIN HIDDEN TESTS
checks.check("moe_forward", globals(), hidden=True)
### END HIDDEN TESTS

# %% [markdown]
# The per-token loop, which is the definition, gives the same numbers:

# %%
gen = torch.Generator().manual_seed(0)
d_demo, e_demo, t_demo = 16, 6, 40
x_demo = torch.randn(t_demo, d_demo, dtype=torch.float64, generator=gen)
w_demo = torch.randn(d_demo, e_demo, dtype=torch.float64, generator=gen)
experts_demo = [nn.Linear(d_demo, d_demo).double() for _ in range(e_demo)]
with torch.no_grad():
    fast = moe_forward(x_demo, w_demo, experts_demo, 2)
    wts, chosen = route(x_demo, w_demo, 2)
    slow = torch.stack(
        [sum(wts[t, j] * experts_demo[chosen[t, j]](x_demo[t]) for j in range(2)) for t in range(t_demo)]
    )
diff = (fast - slow).abs().max().item()
print(f"largest difference from the per-token loop: {'< 1e-12' if diff < 1e-12 else diff}")
assert diff < 1e-12, "your moe_forward should equal the per-token loop"

# %% [markdown]
# ## 3. Capacity and dropped tokens
#
# On many devices each expert gets a buffer of fixed size, its **capacity** (GShard, Lepikhin et
# al., 2021; Switch Transformer). With $T$ tokens, $k$ choices each and $E$ experts, a perfectly
# balanced router sends $kT/E$ assignments to each expert; the **capacity factor** $c$ leaves room
# above that:
#
# $$C = \left\lceil c \cdot \frac{k\,T}{E} \right\rceil .$$
#
# An expert that gets more than $C$ assignments keeps the first $C$ in **token order** and drops
# the rest. A dropped assignment contributes 0 to its token's output; the block's residual
# connection carries the token through unchanged. By hand: $T = 8$, $E = 4$, $k = 1$, $c = 1.0$
# gives $C = 2$; if tokens 0, 2, 3, 5 and 7 all choose expert 1, expert 1 keeps tokens 0 and 2 and
# drops 3, 5 and 7, whatever their router weights. At $c = 1.25$, $C = \lceil 2.5 \rceil = 3$ and
# token 3 is kept too.
#
# ## Exercise 3: `expert_capacity` and `capacity_keep`
#
# Write `expert_capacity(n_tokens, n_experts, k, capacity_factor) -> int`, the formula above, and
# `capacity_keep(weights, experts, n_experts, capacity)`: `weights` and `experts (T, k)` as `route`
# returns them; return a bool tensor `(T, k)`, True where the assignment is kept, that is, where
# fewer than `capacity` earlier tokens were sent to the same expert. The weights do not decide who
# is dropped here (Switch and GShard keep token order); V-MoE's batch-prioritised routing
# (Riquelme et al., 2021) keeps the largest weights instead, which is why the argument is there.


# %% [answer] id=expert_capacity_answer
def expert_capacity(n_tokens, n_experts, k, capacity_factor):
    """The slots of each expert: ceil(capacity_factor * k * n_tokens / n_experts)."""
    ### BEGIN SOLUTION
    return math.ceil(capacity_factor * k * n_tokens / n_experts)
    ### END SOLUTION


def capacity_keep(weights, experts, n_experts, capacity):
    """weights, experts (T, k) -> kept (T, k) bool: each expert keeps its first `capacity` tokens."""
    ### BEGIN SOLUTION
    one_hot = F.one_hot(experts.reshape(-1), n_experts)  # (T*k, E), token order
    seen_before = one_hot.cumsum(dim=0) - one_hot  # assignments to each expert before this one
    position = (seen_before * one_hot).sum(dim=-1)  # (T*k,) the place in its expert's queue
    return (position < capacity).reshape(experts.shape)
    ### END SOLUTION


# %% [tests] id=expert_capacity points=1
# Self-check: capacity factors 0.5, 1.0 and 1.25, k of 1 and 2, T not a multiple of E.
checks.check("expert_capacity", globals())
### BEGIN HIDDEN TESTS
checks.check("expert_capacity", globals(), hidden=True)
### END HIDDEN TESTS

# %% [tests] id=capacity_keep points=2
# Self-check: the example above, an expert that gets no token, all tokens to one expert, capacity
# 0 and capacity T, k of 1 to 3.
checks.check("capacity_keep", globals())
### BEGIN HIDDEN TESTS
checks.check("capacity_keep", globals(), hidden=True)
### END HIDDEN TESTS

# %%
chosen_hand = torch.tensor([[1], [0], [1], [1], [2], [1], [3], [1]])
for factor in (1.0, 1.25):
    cap = expert_capacity(8, 4, 1, factor)
    kept = capacity_keep(torch.ones(8, 1), chosen_hand, 4, cap)
    dropped = torch.nonzero(~kept[:, 0]).flatten().tolist()
    print(f"capacity factor {factor}: C = {cap}, dropped tokens {dropped}")
expected = [True, True, True, False, True, False, True, False]  # tokens 3, 5 and 7 dropped at C = 2
assert capacity_keep(torch.ones(8, 1), chosen_hand, 4, 2)[:, 0].tolist() == expected

# %% [markdown]
# ## 4. Keeping experts busy
#
# Nothing in the task loss asks the router to spread tokens. If a few experts get ahead early, they
# get more tokens, train faster, get chosen more: the router can **collapse** onto a few experts and
# the others sit idle (and, with capacity, tokens are dropped). Switch Transformer adds the
# **load-balancing loss**, for $E$ experts, with $f_i$ the fraction of the $T k$ assignments that
# go to expert $i$ and $P_i$ the mean router probability of expert $i$ over the $T$ tokens:
#
# $$\mathcal{L}_{\text{balance}} = E \sum_{i=1}^{E} f_i\, P_i, \qquad
# f_i = \frac{1}{T k} \sum_{t} \left|\{ j : \text{expert}_{t,j} = i \}\right|, \qquad
# P_i = \frac{1}{T} \sum_t p_{t,i}.$$
#
# $f$ comes from a top-k, which has no gradient; $P$ carries it. The loss is 1 when both are
# uniform, and larger when the experts that get many tokens also get high probabilities. By hand,
# with $E = 2$, $k = 1$ and two tokens that both go to expert 0 with mean probabilities
# $P = (0.75, 0.25)$: $f = (1, 0)$ and the loss is $2\,(1 \cdot 0.75 + 0 \cdot 0.25) = 1.5$; one token
# to each expert with $P = (0.5, 0.5)$ gives $2\,(0.5 \cdot 0.5 + 0.5 \cdot 0.5) = 1$. (Hugging
# Face's Mixtral code sums $f$ over the $k$ slots, which is $k$ times this.)
#
# ST-MoE (Zoph et al., 2022) adds the **router z-loss**, which keeps the logits small, where the
# softmax and the float formats are well behaved:
#
# $$\mathcal{L}_z = \frac{1}{T} \sum_t \Big(\log \sum_{i} e^{\ell_{t,i}}\Big)^2 .$$
#
# ## Exercise 4: `load_balancing_loss` and `router_z_loss`
#
# `load_balancing_loss(router_probs, experts, n_experts)`: `router_probs (T, E)` (the full
# softmax), `experts (T, k)` long; a scalar tensor, differentiable in `router_probs`.
# `router_z_loss(logits)`: `logits (..., E)`; the mean over every leading position of the squared
# `logsumexp` over the last dim (use `torch.logsumexp`: it stays finite for large logits).


# %% [answer] id=load_balancing_loss_answer
def load_balancing_loss(router_probs, experts, n_experts):
    """router_probs (T, E), experts (T, k) -> scalar: E * sum_i f_i * P_i."""
    ### BEGIN SOLUTION
    counts = torch.bincount(experts.reshape(-1), minlength=n_experts)  # (E,) assignments per expert
    f = counts.to(router_probs.dtype) / experts.numel()  # fraction of the T*k
    P = router_probs.mean(dim=0)  # (E,) mean probability
    return n_experts * (f * P).sum()
    ### END SOLUTION


def router_z_loss(logits):
    """logits (..., E) -> scalar: mean of logsumexp(logits, -1) ** 2."""
    ### BEGIN SOLUTION
    return torch.logsumexp(logits, dim=-1).pow(2).mean()
    ### END SOLUTION


# %% [tests] id=load_balancing_loss points=2
# Self-check: values and gradients against a float64 reference; balanced and collapsed routings,
# k of 1 to 3, an expert with no token.
checks.check("load_balancing_loss", globals())
### BEGIN HIDDEN TESTS
checks.check("load_balancing_loss", globals(), hidden=True)
### END HIDDEN TESTS

# %% [tests] id=router_z_loss points=1
# Self-check: logits of 2 and 3 dims, shifted by a large constant (logsumexp must stay finite).
checks.check("router_z_loss", globals())
### BEGIN HIDDEN TESTS
checks.check("router_z_loss", globals(), hidden=True)
### END HIDDEN TESTS

# %%
T_, E_ = 64, 8
uniform = torch.full((T_, E_), 1 / E_, dtype=torch.float64)
balanced = torch.arange(T_)[:, None] % E_  # every expert gets T/E tokens
collapsed = torch.zeros(T_, 1, dtype=torch.long)  # every token to expert 0
peaked = torch.full((T_, E_), 0.02 / (E_ - 1), dtype=torch.float64)
peaked[:, 0] = 0.98
print(f"balanced, uniform probabilities: {load_balancing_loss(uniform, balanced, E_).item():.3f}")
print(f"collapsed, peaked probabilities: {load_balancing_loss(peaked, collapsed, E_).item():.3f}")
assert abs(load_balancing_loss(uniform, balanced, E_).item() - 1.0) < 1e-12

# %% [markdown]
# What each loss pushes on, measured by autograd on the router logits of 8 tokens and 4 experts
# (top-1): six tokens prefer expert 0, two prefer expert 1, experts 2 and 3 get none. A gradient
# step moves each logit against its gradient, so a positive sum lowers that expert's logits. The
# balancing loss lowers the busy expert's logits and raises the others', the idle ones included.
# The z-loss's gradient is
#
# $$\frac{\partial \mathcal{L}_z}{\partial \ell_{t,i}} = \frac{2}{T}\, \operatorname{logsumexp}(\ell_t)\, p_{t,i} ,$$
#
# positive wherever $\operatorname{logsumexp}(\ell_t) > 0$, as here: it lowers every logit, the most
# probable ones hardest, whichever expert is busy.

# %%
logits = torch.tensor([[4.0, 1.0, 0.0, 0.0]] * 6 + [[0.0, 2.0, 1.0, 0.5]] * 2, dtype=torch.float64)
logits.requires_grad_(True)
probs = torch.softmax(logits, dim=-1)
top1 = probs.argmax(dim=-1, keepdim=True)  # (T, 1)
load_balancing_loss(probs, top1, 4).backward()
push = logits.grad.sum(dim=0)  # (E,) summed over the tokens
print("tokens per expert:", torch.bincount(top1.flatten(), minlength=4).tolist())
print("balancing loss, gradient per expert:", [f"{g:+.4f}" for g in push.tolist()])
assert push[0] > 0 and (push[1:] < 0).all(), "the busy expert's logits go down, the others' up"
logits.grad = None
router_z_loss(logits).backward()
lse = torch.logsumexp(logits.detach(), dim=-1, keepdim=True)
formula = 2 * lse * torch.softmax(logits.detach(), dim=-1) / logits.shape[0]
print("z-loss, gradient of token 0:", [f"{g:+.4f}" for g in logits.grad[0].tolist()])
assert torch.allclose(logits.grad, formula) and (logits.grad > 0).all()

# %% [markdown]
# ## 5. The MoE block
#
# DeepSeekMoE (Dai et al., 2024) splits the experts in two: a few **shared experts** that every
# token goes through, and many small **routed experts** of which the router picks $k$. Each expert
# is lesson 9's SwiGLU, given here. The layer sits where lesson 9's feed-forward sat, after an
# RMSNorm, on the residual stream:
#
# $$h = x + \operatorname{Attn}(\operatorname{RMSNorm}(x)), \qquad
# y = h + \sum_{s} \operatorname{FFN}^{\text{shared}}_s(u) + \sum_{i \in \mathcal{T}(u)} w_i\,
# \operatorname{FFN}_i(u), \quad u = \operatorname{RMSNorm}(h).$$
#
# A dropped assignment adds nothing, so $y = h + \dots$ still holds the token: the residual carries
# it.


# %% [setup]
class SwiGLU(nn.Module):
    """Lesson 9's expert: w2(silu(w1(x)) * w3(x))."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoEFeedForward(nn.Module):
    """Shared experts plus k of n_experts routed ones; capacity_factor None keeps every token."""

    def __init__(self, d_model, d_ff, n_experts, k, n_shared=1, capacity_factor=None, normalize=True):
        super().__init__()
        self.k, self.capacity_factor, self.normalize = k, capacity_factor, normalize
        self.w_gate = nn.Parameter(torch.randn(d_model, n_experts) / math.sqrt(d_model))
        self.experts = nn.ModuleList(SwiGLU(d_model, d_ff) for _ in range(n_experts))
        self.shared = nn.ModuleList(SwiGLU(d_model, d_ff) for _ in range(n_shared))
        self.aux = {}

    def forward(self, u):
        shape = u.shape
        u = u.reshape(-1, shape[-1])  # (B, T, d) -> (B*T, d)
        n_experts = len(self.experts)
        logits = u @ self.w_gate  # (B*T, E)
        weights, chosen = route(u, self.w_gate, self.k, self.normalize)  # (B*T, k) each
        if self.capacity_factor is not None:
            cap = expert_capacity(u.shape[0], n_experts, self.k, self.capacity_factor)
            dropped = ~capacity_keep(weights, chosen, n_experts, cap)
            chosen = chosen.masked_fill(dropped, n_experts)  # expert "n_experts": dropped
        flat = chosen.reshape(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=n_experts + 1).tolist()
        y = sum(f(u) for f in self.shared) if len(self.shared) else torch.zeros_like(u)
        for e, idx in enumerate(order.split(counts)[:n_experts]):  # the last group: dropped
            if len(idx):
                tokens = idx // self.k
                y = y.index_add(0, tokens, self.experts[e](u[tokens]) * weights.reshape(-1)[idx, None])
        self.aux = {
            "logits": logits,
            "probs": torch.softmax(logits, -1),
            "experts": chosen,
            "dropped": int(counts[n_experts]),
        }
        return y.reshape(shape)


class MoEBlock(nn.Module):
    """Lesson 9's pre-RMSNorm block with the MoE feed-forward; attention is torch's own, causal."""

    def __init__(self, d_model, n_heads, d_ff, n_experts, k, n_shared=1, capacity_factor=None):
        super().__init__()
        self.attn_norm = nn.RMSNorm(d_model, eps=1e-6)
        self.attn = nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True)
        self.ffn_norm = nn.RMSNorm(d_model, eps=1e-6)
        self.ffn = MoEFeedForward(d_model, d_ff, n_experts, k, n_shared, capacity_factor)

    def forward(self, x):
        t = x.shape[1]
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)  # True = may not attend
        a = self.attn_norm(x)
        h = x + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
        return h + self.ffn(self.ffn_norm(h))


# %% [markdown]
# With a capacity factor below 1 some assignments must be dropped; a token whose every assignment
# was dropped (here, with $k = 1$) leaves the feed-forward with only the shared experts' output
# added: with no shared expert it leaves the block as $h$, unchanged.

# %%
torch.manual_seed(0)
ffn = MoEFeedForward(d_model=16, d_ff=32, n_experts=4, k=1, n_shared=0, capacity_factor=0.5)
u = torch.randn(1, 24, 16)
with torch.no_grad():
    out = ffn(u)[0]
kept_any = (ffn.aux["experts"] < 4).any(dim=-1)
cap = expert_capacity(24, 4, 1, 0.5)
print(f"dropped assignments: {ffn.aux['dropped']} of 24; capacity {cap} per expert")
print("rows of the dropped tokens are all zero:", bool((out[~kept_any] == 0).all()))
assert ffn.aux["dropped"] > 0 and bool((out[~kept_any] == 0).all())

# %% [markdown]
# ### Active and total parameters
#
# A token uses the router, the shared experts and $k$ routed experts: its **active** parameters.
# The model stores all $E$ routed experts: its **total**. The FLOPs of a matrix multiply are 2 per
# weight per token, so the feed-forward's FLOPs per token follow the active count. At Mixtral
# 8x7B's shape ($d = 4096$, $d_{\text{ff}} = 14336$, $E = 8$, $k = 2$, no shared expert, 32 layers):


# %%
def ffn_parameters(d_model, d_ff, n_experts, k, n_shared):
    """(active, total) parameters of one MoE feed-forward: router, shared and routed SwiGLU experts."""
    expert = 3 * d_model * d_ff
    router = d_model * n_experts
    return router + (n_shared + k) * expert, router + (n_shared + n_experts) * expert


active, total = (32 * n / 1e9 for n in ffn_parameters(4096, 14336, 8, 2, 0))  # 32 layers, billions
print(f"Mixtral 8x7B, feed-forward layers: active {active:.1f} B, total {total:.1f} B parameters")
print(f"their FLOPs per token: {2 * active:.1f} G (a dense layer of the total size: {2 * total:.1f} G)")
small = MoEFeedForward(64, 96, n_experts=8, k=2, n_shared=1)
counted = sum(p.numel() for p in small.parameters())
small_active, small_total = ffn_parameters(64, 96, 8, 2, 1)
assert counted == small_total, "the count should match the module's parameters"
print(f"a small layer (d=64, d_ff=96, 8 routed, 1 shared): active {small_active:,}, total {counted:,}")

# %% [markdown]
# Mixtral's paper gives 13B active and 47B total for the whole model: the feed-forward layers
# computed here are most of both, attention and the embeddings the rest.

# %% [markdown]
# TODO(issue 54, section 6, trained): not written yet, on purpose. The comparison on lesson 12's
# corpus with lesson 12's loop (a dense SwiGLU block, an MoE of the same active parameters, a dense
# block of the same total parameters; expert usage over training with and without the balancing
# loss) goes here once `drafts/13_mixture_of_experts/sweep_trained.py` has run over 20 seeds at the
# sizes and steps this section will name. Every sentence of it is written from what that sweep
# found, and each claim is asserted in the cell that trains (shortened under the test runner, as
# lesson 12's capstone is). Until then this notebook states nothing about training.

# %% [markdown]
# ## Summary
#
# - The router is a softmax over experts and a top-k; renormalising the k weights is a choice
#   (Mixtral yes, Switch no), ties go to the lower index.
# - Dispatch groups the assignments by expert (argsort, bincount, split) so each expert runs once
#   on $T_e$ rows: $T k$ rows in all instead of $T E$.
# - Capacity $\lceil c\,kT/E \rceil$ bounds each expert's work; overflow is dropped in token order
#   and the residual carries the token.
# - The load-balancing loss $E \sum_i f_i P_i$ pushes on the probabilities of busy experts; the
#   z-loss keeps the logits small.
# - An MoE layer's FLOPs follow its active parameters, its memory its total.

# %% [question] id=balance_question
# **Question.** $f_i$ counts tokens and $P_i$ averages probabilities. Why does the load-balancing
# loss multiply the two rather than penalise the counts $f_i$ alone?

# %% [written] id=balance points=2
### BEGIN SOLUTION
# **Model answer.** The counts come from a top-k (an argmax for k = 1), which has no gradient: a loss
# of $f$ alone could not change the router. $P$ is differentiable, and multiplying by $f$ weights
# each expert's probability by how busy it is, so the gradient lowers the probability of the experts
# that get the most tokens hardest (and the loss is smallest, 1, when both are uniform).
#
# **Rubric (2 points).** 1 point: the counts/top-k are not differentiable, so the gradient has to go
# through $P$. 1 point: $f$ weights the push toward the busy experts (or: the product is minimised by
# a uniform routing). 0 for restating the formula.
### END SOLUTION

# %% [question] id=dropped_question
# **Question.** A token dropped at capacity gets no expert at all in that layer. Why does the model
# still work, and what does a dropped token cost it?

# %% [written] id=dropped points=2
### BEGIN SOLUTION
# **Model answer.** The MoE layer adds its output to the residual stream, so a dropped token leaves
# the block as $h$, its value after attention: it is carried on, not lost, and later layers still
# process it. The cost is that this layer's feed-forward did nothing for that token: the computation
# it would have had is skipped, which is why the capacity factor is set above 1 and the balancing
# loss keeps the counts even.
#
# **Rubric (2 points).** 1 point: the residual connection carries the token unchanged (shared experts,
# when present, still apply). 1 point: the cost is the skipped computation for that token in that
# layer (quality), traded against fixed buffers/speed. 0 for "the token is lost".
### END SOLUTION
