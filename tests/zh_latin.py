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
    nan inf pip install byhand notebook data
    arange theta dtype lse dp do dq offset repeat depth torch nh dh hs nats aten gradcheck ms dz dbeta dgamma
    Llama Meta Mistral Qwen Hugging Face FlashAttention Post-norm Pre-norm log-sum-exp
    Transformer PyTorch Python Jupyter Kaiming Xavier LeCun Adam AdamW Glorot Xiong Vaswani
    Frobenius Encoder Linear
    noqa Colab NumPy numpy Function Softmax Dropout Swin output causal attn embed len argmax scheme long params
    Su Shazeer Ainslie Radford Brown Touvron Liu Bengio He Ioffe Szegedy Sennrich Zhang Press Wolf Xiong
    Dao Jiang Yang Bai Team Mistral Qwen Kingma Ba Loshchilov Hutter
    text vocab merges endoftext Tokenizer
    Unicode Rust regex matplotlib Gumbel-max
    route expert experts normalize capacity counts rows keepdim argsort bincount split logsumexp int loss kept
    Switch Mixtral gpt-oss Dai Fedus Lepikhin Riquelme Zoph
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


# ---------------------------------------------------------------------------------------------
# what a reader of a Chinese notebook reads as text: in code, in markdown and in formulas

# a plot's text: the methods that draw it (their string arguments) and the keywords that name it
PLOT_TEXT = frozenset(
    "set_title set_xlabel set_ylabel suptitle title xlabel ylabel text annotate figtext"
    " set_xticks set_yticks set_xticklabels set_yticklabels xticks yticks supxlabel supylabel set_label"
    " colorbar".split()
)
PLOT_KEYWORDS = frozenset({"label", "title", "xlabel", "ylabel"})  # ax.set(xlabel=...) too

_DIM = r"(?:[\w.+\-*/ ]|\([\w.+\-*/ ,]*\))"
SHAPE = re.compile(rf"\({_DIM}*,(?:{_DIM}|,)*\)")  # a tuple of sizes, one level of calls inside


def text_roots(node) -> list:
    """The expressions of one syntax node whose strings a reader reads: what print() is given, an
    assert's message, a plot's title, axis labels, legend entries and annotations."""
    import ast

    if isinstance(node, ast.Assert) and node.msg is not None:
        return [node.msg]
    if isinstance(node, ast.For):
        return _looped_plot_text(node)
    if not isinstance(node, ast.Call):
        return []
    name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
    if name == "print":
        return node.args + [k.value for k in node.keywords if k.arg not in ("sep", "end", "file", "flush")]
    roots = [k.value for k in node.keywords if k.arg in PLOT_KEYWORDS]
    if isinstance(node.func, ast.Attribute) and name in PLOT_TEXT:
        roots += [a for a in node.args if not isinstance(a, ast.Constant) or isinstance(a.value, str)]
    return roots


def _looped_plot_text(loop) -> list:
    """The items of a literal a `for` loop walks whose loop variable is only a plot's text:
    `for ax, title in [(a, "BatchNorm"), ...]: ax.set_title(title)` reads "BatchNorm" (a variable
    the loop also passes to code, `stream_scale(placement)`, is code)."""
    import ast

    if not isinstance(loop.iter, (ast.List, ast.Tuple)):
        return []
    targets = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
    as_text, loads = [], []
    for node in ast.walk(loop):
        if node is not loop and isinstance(node, ast.Call):
            for root in text_roots(node):  # the name itself, or formatted into an f-string's text
                if isinstance(root, ast.JoinedStr):
                    as_text += [v.value for v in root.values if isinstance(v, ast.FormattedValue)]
                else:
                    as_text.append(root)
            as_text = [n for n in as_text if isinstance(n, ast.Name)]
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.append(node)
    # only a variable the loop uses as text and nothing else: `stream_scale(placement)` is code
    shown = {n.id for n in as_text if all(m in as_text for m in loads if m.id == n.id)}
    roots = []
    for i, target in enumerate(targets):
        if isinstance(target, ast.Name) and target.id in shown:
            for item in loop.iter.elts:
                if len(targets) == 1:
                    roots.append(item)
                elif isinstance(item, (ast.Tuple, ast.List)) and len(item.elts) == len(targets):
                    roots.append(item.elts[i])
    return roots


def code_prose(source: str) -> str:
    """What a reader of a code cell reads as text: its comments, docstrings, printed strings, assert
    messages and plot labels, one per line."""
    import ast
    import io
    import tokenize

    comments = [  # a shape in a comment, "(B, nh, T, dh)", is code
        SHAPE.sub(" ", t.string.lstrip("#"))
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.COMMENT
    ]
    strings = []

    def shown(node):  # the text itself, not the arguments of a call or a key that formats it
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.append(node.value)
        elif not isinstance(node, (ast.Call, ast.Subscript)):
            for child in ast.iter_child_nodes(node):
                shown(child)

    tree = ast.parse(source)
    for node in ast.walk(tree):
        for root in text_roots(node):
            shown(root)
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) is not None:
            strings.append(ast.get_docstring(node))
    # a plot label's math is math: $\sqrt{L}$, $d_{\text{head}}$ (its \text{} is checked below)
    return "\n".join(comments + [_without_math(s) for s in strings])


MATH = re.compile(r"\$\$.*?\$\$|\$[^$]+\$|\\\[.*?\\\]", re.S)  # inline math may wrap a line
# a \text{} that is not a subscript's or a superscript's name (d_{\text{head}}, m_\text{new} are names)
TEXT_IN_MATH = re.compile(r"(?<![_^])(?<![_^]\{)\\(?:text|textrm|textit|textbf|mbox)\{([^{}]*)\}")
GLOSS = re.compile(r"([\u4e00-\u9fff]\**)（[A-Za-z][A-Za-z .'/-]*）")
LINK_TARGET = re.compile(r"\]\([^)]*\)|<[^>\n]*>|https?://\S+")


def _without_math(text: str) -> str:
    """`text` with its formulas replaced by the words of their \\text{} (a formula's words are prose)."""
    return MATH.sub(lambda m: " " + " ".join(TEXT_IN_MATH.findall(m.group(0))) + " ", text)


def markdown_prose(text: str) -> str:
    """What a reader of a markdown cell reads as words: no code spans, no link targets or HTML tags,
    no titles of papers and books (in 《》),
    formulas reduced to the words of their \\text{} outside subscripts."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = CODE_SPAN.sub(" ", text)
    text = LINK_TARGET.sub(" ", text)
    text = re.sub(r"《[^》\n]*》", " ", text)  # a title, kept in its language: 《Attention Is All You Need》
    # the English of a term the first time a lesson uses it, right after the Chinese term (the
    # glossary's convention): 编码器（encoder）, **贪心**解码（greedy decoding）
    text = GLOSS.sub(lambda m: m.group(1), text)
    return _without_math(text)
