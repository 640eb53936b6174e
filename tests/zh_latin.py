"""English prose left in Chinese output: a Latin-script word outside code that is not an identifier.

Code is anything in backticks, and any token that reads as code: with a digit, `_`, `.`, `(`, `=`
or `[`, in camelCase or CamelCase past its first letter (LayerNorm, nn.Linear, Pre-LN), or in ALL
CAPS (GPT, FFN); a token right after `=` or a quote, or right before `(` or `[`, is an argument, a call or an index. What is left is a plain word; it must be on the allow-list below (one-letter names, the
names of the exercises' parameters and arguments, proper names). Anything else is English prose.
"""

from __future__ import annotations

import re

# Plain words that are code or names in this course: parameters and arguments the exercises name,
# dtype and mode words that are PyTorch's own spelling, people, libraries, units.
ALLOWED = frozenset(
    """
    dy dx dq dk dv dw db dS dP dweight dbias rstd mu sigma ctx id ids dim Lq Lk rms positions top-k
    weight weights bias eps mask dropout momentum training eval train sublayer cache idx logits dlogits target
    logit tokens token probs inputs targets scores temperature lengths query key value norm running
    lr linears norms head stack block mlp sa ff fan top layer autograd generate foward
    softmax matmul tanh relu gelu sigmoid rsqrt sqrt exp log ln std var mean max min sum cat sin cos
    reshape view transpose unsqueeze triu tril append zeros ones
    float float32 float64 int64 bool none None True False self forward backward
    nan inf pip install byhand notebook
    arange theta dtype lse dp do dq offset repeat depth torch nh dh hs nats aten gradcheck ms dz dbeta dgamma
    Llama Meta Mistral Qwen Hugging Face FlashAttention Post-norm Pre-norm log-sum-exp
    Transformer PyTorch Python Jupyter Kaiming Xavier LeCun Adam AdamW Glorot Xiong Vaswani
    Frobenius Encoder Linear
    text vocab merges endoftext Tokenizer
    """.split()
)

# a token: letters with the characters code is made of
TOKEN = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z][A-Za-z0-9_.]*(?:-[A-Za-z0-9_.]+)*")
CODE_SPAN = re.compile(r"`[^`]*`")


def _is_code(token: str) -> bool:
    if any(c.isdigit() or c in "_.(=[" for c in token):
        return True
    if token.isupper() and len(token) > 1:  # GPT, FFN, KV
        return True
    return any(c.isupper() for c in token[1:])  # LayerNorm, ReLU, kv_Cache


def latin_words(text: str) -> list:
    """The English words in `text` (a Chinese message, page or CSV cell): not code, not allowed."""
    found = []
    for line in text.splitlines():
        line = CODE_SPAN.sub(" ", line)
        for m in TOKEN.finditer(line):
            token = m.group(0)
            before = line[m.start() - 1] if m.start() else " "
            after = line[m.end()] if m.end() < len(line) else " "
            # an argument's value, a quoted string, a call, an index
            if before in "=-'\"<" or after in "='\"([":
                continue
            if len(token) > 1 and not _is_code(token) and token not in ALLOWED:
                found.append(token)
    return found
