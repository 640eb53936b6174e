"""Written answers of the example class (by student folder), graded by hand: in the example class
they are `needs grading` (answered) or `failed` with "not done yet" (left as the stub).

A lesson that adds a written question (a markdown answer cell with points, see
docs/authoring-lessons.md) needs nothing here: its answer stays unanswered in the example class.
"""

WRITTEN = {
    "01_attention": {
        "written_sqrt_dk": {
            "alice": (
                "The dot product of two vectors with unit-variance entries has variance $d_k$, so at "
                "$d_k = 512$ the scores are about 23 in size and the softmax saturates: one key gets "
                "almost all the weight and the gradients vanish. Dividing by $\\sqrt{d_k}$ keeps the "
                "variance at 1."
            ),
            "erin": "To normalize the scores so that they are smaller.",
        },
        "written_masked_row": {
            "alice": "All scores are -inf, so softmax gives 0/0 = NaN, which spreads to the loss and every gradient.",
        },
    },
    "02_layernorm": {
        "written_layernorm_bugs": {
            "alice": (
                "x.std() divides by d-1 (unbiased), visible when d is small; eps is added outside the "
                "square root, visible when a token's variance is close to eps."
            ),
        },
    },
    "03_residual": {
        "written_residual_gradient": {
            "alice": (
                "The gradient is a product of 50 Jacobians that each shrink it; with a residual each "
                "Jacobian is I + dF/dx and the identity carries the gradient down."
            ),
        },
    },
    "04_pre_post_ln": {
        "written_grad_direction": {
            "alice": (
                "Each LayerNorm divides the gradient by the std of h + F(h), above 1, and the residual's "
                "(I + W)^T grows it back by about as much, so the stream's gradient stays about flat. "
                "The square loss's gradient lines up with the top blocks' inputs, so they get more; in "
                "Pre-LN every branch adds to the gradient on its way down, so the bottom blocks get most."
            ),
        },
    },
    "05_init": {
        "written_xavier_relu": {
            "alice": (
                "ReLU halves the second moment. Kaiming's variance 2/fan_in doubles it back (factor 1 "
                "per layer); Xavier's 1/512 leaves a factor 1/2, so the std falls by (1/sqrt 2)^50."
            ),
        },
    },
    "06_transformer_block": {
        "written_positional": {
            "alice": (
                "Attention and the FFN are permutation-equivariant, so without positions a token's "
                "output does not depend on where it is, but reversing needs each position's mirror."
            ),
        },
    },
    "10_flash_attention": {
        "written_online_softmax": {
            "alice": (
                "a_1 holds exp(s_j - m_1) v_j, measured against the old max, while the new terms and l are "
                "against m_2; unrescaled, the first block's keys weigh e^(m_2 - m_1) = e times too much."
            ),
        },
        "written_cpu_time": {
            "alice": (
                "(L/64)^2 iterations of small ops each pay Python and dispatch overhead, and small matmuls "
                "use the CPU poorly. A fused kernel does the loop in one launch in on-chip SRAM and never "
                "writes the L^2 scores to memory."
            ),
        },
    },
}


def written_for(lesson: str, folder: str) -> dict:
    """grade_id -> answer text of one student folder for one lesson."""
    return {gid: by[folder] for gid, by in WRITTEN.get(lesson, {}).items() if folder in by}
