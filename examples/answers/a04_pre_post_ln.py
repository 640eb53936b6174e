"""Example answers for lesson 04_pre_post_ln: the example class, the classic mistakes (Pre-LN and
Post-LN swapped, a missing residual, wrong tensors in block_grad_norms), and correct answers written
differently. Keys are answer-cell ids."""

STACK_OK = """
class ResidualStack(nn.Module):
    def __init__(self, depth, d_model, pre_ln=True):
        super().__init__()
        self.pre_ln = pre_ln
        self.norms = nn.ModuleList([nn.LayerNorm(d_model) for _ in range(depth)])
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(depth)])
        self.head = nn.Linear(d_model, d_model)

    def forward(self, x):
        h = x
        for norm, linear in zip(self.norms, self.linears):
            if self.pre_ln:
                h = h + linear(norm(h))
            else:
                h = norm(h + linear(h))
        return self.head(h)
"""

GRADS_OK = """
def block_grad_norms(stack, x):
    stack.zero_grad()
    stack(x).pow(2).mean().backward()
    return torch.stack([lin.weight.grad.norm() for lin in stack.linears])
"""

ALL_OK = {"ResidualStack_answer": STACK_OK, "block_grad_norms_answer": GRADS_OK}

MISTAKES = {
    "pre_post_swapped": dict(
        cells={"ResidualStack_answer": STACK_OK.replace("if self.pre_ln:", "if not self.pre_ln:")},
        question="ResidualStack",
        hint="swapped",
    ),
    "post_ln_norm_in_branch": dict(
        cells={
            "ResidualStack_answer": STACK_OK.replace("h = norm(h + linear(h))", "h = h + linear(norm(h))")
        },
        question="ResidualStack",
        hint="swapped",
    ),
    "residual_missing": dict(
        cells={"ResidualStack_answer": STACK_OK.replace("h = h + linear(norm(h))", "h = linear(norm(h))")},
        question="ResidualStack",
        hint="residual",
    ),
    "head_missing": dict(
        cells={"ResidualStack_answer": STACK_OK.replace("return self.head(h)", "return h")},
        question="ResidualStack",
        hint="head",
    ),
    "stack_python_lists": dict(
        cells={
            "ResidualStack_answer": STACK_OK.replace(
                "nn.ModuleList([nn.LayerNorm(d_model) for _ in range(depth)])",
                "[nn.LayerNorm(d_model) for _ in range(depth)]",
            ).replace(
                "nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(depth)])",
                "[nn.Linear(d_model, d_model) for _ in range(depth)]",
            )
        },
        question="ResidualStack",
        hint="use nn.ModuleList",
    ),
    "stack_one_linear_shared": dict(
        cells={
            "ResidualStack_answer": STACK_OK.replace(
                "nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(depth)])",
                "nn.ModuleList([nn.Linear(d_model, d_model)] * depth)",
            )
        },
        question="ResidualStack",
        hint="one module is shared by every block",
    ),
    "bias_grads": dict(
        cells={"block_grad_norms_answer": GRADS_OK.replace("lin.weight.grad.norm()", "lin.bias.grad.norm()")},
        question="block_grad_norms",
        hint="bias",
    ),
    "reversed_order": dict(
        cells={
            "block_grad_norms_answer": GRADS_OK.replace(
                "for lin in stack.linears", "for lin in reversed(stack.linears)"
            )
        },
        question="block_grad_norms",
        hint="reverse order",
    ),
    "norm_grads": dict(
        cells={
            "block_grad_norms_answer": GRADS_OK.replace(
                "[lin.weight.grad.norm() for lin in stack.linears]",
                "[n.weight.grad.norm() for n in stack.norms]",
            )
        },
        question="block_grad_norms",
        hint="LayerNorm",
    ),
    "squared_norms": dict(
        cells={
            "block_grad_norms_answer": GRADS_OK.replace(
                "lin.weight.grad.norm()", "lin.weight.grad.pow(2).sum()"
            )
        },
        question="block_grad_norms",
        hint="squared",
    ),
    "sum_loss": dict(
        cells={
            "block_grad_norms_answer": GRADS_OK.replace("stack(x).pow(2).mean()", "stack(x).pow(2).sum()")
        },
        question="block_grad_norms",
        hint=".mean()",
    ),
    "head_included": dict(
        cells={
            "block_grad_norms_answer": GRADS_OK.replace(
                "for lin in stack.linears]", "for lin in [*stack.linears, stack.head]]"
            )
        },
        question="block_grad_norms",
        hint="head",
    ),
}

ALTERNATIVES = {
    "sequential_blocks_and_vector_norm": {
        "ResidualStack_answer": '''
class ResidualStack(nn.Module):
    """Written with indices and a separate helper per wiring; prints a line on construction."""
    def __init__(self, depth, d_model, pre_ln=True):
        super().__init__()
        print(f"building a stack of {depth} blocks")
        self.depth, self.pre = depth, bool(pre_ln)
        self.norms = nn.ModuleList()
        self.linears = nn.ModuleList()
        for _ in range(depth):
            self.norms.append(nn.LayerNorm(d_model, eps=1e-5))
            self.linears.append(nn.Linear(d_model, d_model))
        self.head = nn.Linear(d_model, d_model)

    def _pre(self, i, h):
        return torch.add(h, self.linears[i](self.norms[i](h)))

    def _post(self, i, h):
        return self.norms[i](torch.add(h, self.linears[i](h)))

    def forward(self, x):
        h = x.clone()
        for i in range(self.depth):
            h = self._pre(i, h) if self.pre else self._post(i, h)
        return self.head(h)
''',
        "block_grad_norms_answer": """
import warnings
def block_grad_norms(stack, x):
    for p in stack.parameters():
        p.grad = None
    loss = (stack(x) ** 2).mean()
    grads = torch.autograd.grad(loss, [l.weight for l in stack.linears])
    warnings.warn("computed with torch.autograd.grad")
    return torch.linalg.vector_norm(torch.stack([g.flatten() for g in grads]), dim=1)
""",
    },
    "functional_grads": {
        "block_grad_norms_answer": """
def block_grad_norms(stack, x):
    out = stack(x)
    loss = out.square().sum() / out.numel()
    loss.backward()
    norms = []
    for i in range(len(stack.linears)):
        g = stack.linears[i].weight.grad
        norms.append(torch.sqrt((g * g).sum()))
    return torch.tensor([n.item() for n in norms], dtype=x.dtype)
"""
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {"ResidualStack_answer": STACK_OK},
    "dave_pre_post_swapped": {**ALL_OK, **MISTAKES["pre_post_swapped"]["cells"]},
    "erin_bias_grads": {**ALL_OK, **MISTAKES["bias_grads"]["cells"]},
}

MAX = {"ResidualStack": 2, "block_grad_norms": 2}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {"ResidualStack": 2, "block_grad_norms": 0},
    # block_grad_norms runs the student's own stack: a wrong one is replaced by the reference
    "dave_pre_post_swapped": {"ResidualStack": 0, "block_grad_norms": 2},
    "erin_bias_grads": {"ResidualStack": 2, "block_grad_norms": 0},
}
