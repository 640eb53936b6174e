"""简体中文 (zh_CN) catalogue of the check messages; see byhand/i18n.py.

LINES: whole-line frames (regex over a stripped line -> format template). A group whose name starts
with `t_` is itself translated through PIECES; other groups are copied (numbers, shapes, code).
PIECES: the sentences inserted into frames (hints, names of what is checked). Terms follow
docs/glossary-zh.md. Exact sentences are written with E(...) (escaped English text).

The first pattern that matches a line decides it (no backtracking into another split), so the
specific frames come before the general ones ("hint: two mistakes at once: ..." before "hint: ...").
A case label is data (shapes, dtypes, code): it is copied, and quoted as code where it sits inside a
translated sentence ("also, on <label>: <hint>").
"""

import re


def E(text: str) -> str:
    return re.escape(text)


CODE = r"(?P<c>[A-Za-z_][\w.]*(?:\([^()]*\))?(?:\[[^\]]*\])?)"

# A case label inside "also, on <label>: <hint>": everything up to the first ": " that is not part of
# the label itself (a few labels contain ": ", always followed by one of these words).
LABEL = (
    r"(?P<label>(?:[^:]|:(?! )|: (?=the time axis is dim \d+: )|: (?=its layers: )"
    r"|: (?=\d+ copies of the row )|(?<=calls): )*)"
)

LINES = [
    (
        r"(?P<q>\S+): not done yet\. It still raises NotImplementedError: "
        r"replace the stub in its answer cell with your code\.",
        "{q}：尚未完成。它仍然抛出 NotImplementedError：请把答案单元格里的占位代码换成你的实现。",
    ),
    (r"(?P<q>\S+): all (?P<n>\d+) visible cases pass\.", "{q}：全部 {n} 个可见用例通过。"),
    (
        r"(?P<q>\S+): all (?P<n>\d+) cases, hidden ones included, pass\.",
        "{q}：全部 {n} 个用例（含隐藏用例）通过。",
    ),
    (r"(?P<q>\S+): no value came back for (?P<n>\S+)", "{q}：{n} 没有返回任何值"),
    (r"on input: (?P<label>.*)", "输入：{label}"),
    (
        r"also, on " + LABEL + r": two mistakes at once: (?P<t_a>.+?); and (?P<t_b>.+)",
        "另外，在输入 `{label}` 上：同时有两处错误：其一，{t_a}；其二，{t_b}",
    ),
    (r"also, on " + LABEL + r": (?P<t_h>.+)", "另外，在输入 `{label}` 上：{t_h}"),
    (
        r"hint: two mistakes at once: (?P<t_a>.+?); and (?P<t_b>.+)",
        "提示：同时有两处错误：其一，{t_a}；其二，{t_b}",
    ),
    (r"hint: (?P<t_h>.*)", "提示：{t_h}"),
    # got / expected lines that carry words, before the general ones (which copy the value)
    (
        r"got: *state_dict\(\) without nothing, with extra (?P<x>.*)",
        "你的结果：state_dict() 不缺键，但多出了 {x}",
    ),
    (
        r"got: *state_dict\(\) without (?P<m>.*), with extra (?P<x>.*)",
        "你的结果：state_dict() 缺少 {m}，多出了 {x}",
    ),
    (r"got: *state_dict\(\) without (?P<m>.*)", "你的结果：state_dict() 缺少 {m}"),
    (r"expected: the keys (?P<k>.*) registered in the module", "期望结果：模块里注册了键 {k}"),
    (
        r"got: *one parameter object under several names \((?P<s>.*)\)",
        "你的结果：同一个参数对象挂在多个名字下（{s}）",
    ),
    (
        E("expected: a separate module, with its own parameters, for each of them"),
        "期望结果：每个名字各有一个独立的模块，带着它自己的参数",
    ),
    (r"got: *methods (?P<m>.*)", "你的结果：方法 {m}"),
    (E("expected: a method named forward"), "期望结果：一个名为 forward 的方法"),
    (r"got: *there is no (?P<a>self\.\w+)", "你的结果：没有 {a}"),
    (
        r"expected: (?P<a>self\.\w+) = nn\.Linear\(\.\.\.\), an attribute of the module",
        "期望结果：{a} = nn.Linear(...)，作为模块的一个属性",
    ),
    (r"expected: a tensor of shape (?P<s>.*)", "期望结果：形状为 {s} 的张量"),
    (
        r"got: *(?P<n>\d+) tensors, (?P<f>\d+) the size of x, (?P<e>\d+) numbers",
        "你的结果：{n} 个张量，其中 {f} 个与 x 一样大，共 {e} 个数",
    ),
    (
        r"expected: at most one tensor the size of x \((?P<n>\d+) numbers\) plus per-row statistics and "
        r"weight, (?P<b>\d+) numbers in all",
        "期望结果：至多一个与 x 一样大的张量（{n} 个数），加上逐行统计量和 weight，总共 {b} 个数",
    ),
    (r"got: *loss (?P<l>\S+) on random tokens", "你的结果：在随机 token 上的损失为 {l}"),
    (
        r"expected: ln V = ln (?P<v>\d+) = (?P<l>\S+) \(within (?P<m>\S+)\)",
        "期望结果：ln V = ln {v} = {l}（误差在 {m} 以内）",
    ),
    (
        r"expected: (?P<v>\[.*\]) \(each within (?P<s>\S+) standard deviations\)",
        "期望结果：{v}（每一项都在 {s} 个标准差以内）",
    ),
    (r"got: *min (?P<a>-?\d+), max (?P<b>-?\d+)", "你的结果：最小 {a}，最大 {b}"),
    (r"expected: (?P<v>\[.*\]) \+ (?P<n>\d+) new tokens", "期望结果：{v} + {n} 个新 token"),
    (r"expected: torch\.int64 \(a LongTensor\)", "期望结果：torch.int64（LongTensor）"),
    (r"expected: a list of (?P<n>\d+) pairs", "期望结果：由 {n} 个二元组组成的列表"),
    (
        r"expected: (?P<v>\S+) \((?P<c>init_std\(.*\)), within (?P<p>\S+)\)",
        "期望结果：{v}（{c}，误差在 {p} 以内）",
    ),
    (r"got: *(?P<v>.*)", "你的结果：{v}"),
    (r"expected: (?P<v>.*)", "期望结果：{v}"),
    (
        r"largest difference (?P<d>\S+) at index (?P<i>\(.*?\)): got (?P<g>\S+), expected (?P<e>\S+)",
        "最大差异 {d}，位于索引 {i}：你的结果 {g}，期望结果 {e}",
    ),
    (r"first difference at index (?P<i>.*)", "第一个不同之处位于索引 {i}"),
    (r"(?P<t_what>.+?) is not what it should be\.", "{t_what}不正确。"),
    (r"(?P<t_what>.+?) has the wrong shape\.", "{t_what}的形状不对。"),
    (r"(?P<t_what>.+?) has the wrong dtype\.", "{t_what}的 dtype 不对。"),
    (r"(?P<t_what>.+?) should keep the input dtype\.", "{t_what}应保持输入的 dtype。"),
    (r"(?P<t_what>.+?) should be a tensor, got (?P<v>.*)", "{t_what}应该是一个张量，实际得到 {v}"),
    (r"(?P<t_what>.+?) contains NaN\.", "{t_what}中有 NaN。"),
    (
        r"(?P<t_what>.+?) contains NaN at real \(non-padding\) positions\.",
        "{t_what}在真实（非填充）位置上有 NaN。",
    ),
    (r"(?P<t_what>.+?) should be token ids\.", "{t_what}应该是 token id。"),
    (
        r"(?P<t_what>.+?) should be a pair (?P<p>\(.*?\)), got (?P<v>.*)",
        "{t_what}应是一个二元组 {p}，实际得到 {v}",
    ),
    (
        r"(?P<q>.+?) should return a pair (?P<p>\(.*?\)), got (?P<v>.*)",
        "{q} 应返回一个二元组 {p}，实际得到 {v}",
    ),
    (
        r"(?P<q>.+?) should return three tensors (?P<p>\(.*?\)), got (?P<v>.*)",
        "{q} 应返回三个张量 {p}，实际得到 {v}",
    ),
    # a raised error is the answer's own text: quoted as code
    (r"(?P<q>\S+) raised (?P<err>.*) \(line (?P<l>\d+)\)", "{q} 抛出了异常（第 {l} 行）：`{err}`"),
    (r"(?P<q>\S+) raised (?P<err>.*)", "{q} 抛出了异常：`{err}`"),
    (
        r"the backward pass of LayerNormFunction raised (?P<err>.*)",
        "LayerNormFunction 的反向传播抛出了异常：`{err}`",
    ),
    # a module whose structure the grader's state dict does not fit (byhand._core.structure_message)
    (
        r"(?P<q>\S+): (?P<c>\S+)'s parameters are not the ones the exercise names, so its state_dict does not "
        r"fit\.",
        "{q}：{c} 的参数与练习规定的不一致，所以它的 state_dict 对不上。",
    ),
    (
        r"(?P<q>\S+): the weights loaded into (?P<c>\S+) did not stay: (?P<l>.*) came back different\.",
        "{q}：加载进 {c} 的权重没有保持住：读回来的 {l} 变了。",
    ),
    (
        r"(?P<q>\S+): (?P<c>\S+) has no method named forward, so calling it runs nn\.Module's own forward, "
        r"which raises NotImplementedError\.",
        "{q}：{c} 没有名为 forward 的方法，所以调用它时运行的是 nn.Module 自带的 forward，"
        "而它会抛出 NotImplementedError。",
    ),
    (r"(?P<x>\w+(?:\.\w+)+) is missing\.", "{x} 不存在。"),
    (r"(?P<x>\w+(?:\.\w+)+) is wrong\.", "{x} 不对。"),
    (
        r"(?P<q>\S+) returned (?P<n>\d+) norms, expected (?P<m>\d+) \(one per block\)\.",
        "{q} 返回了 {n} 个范数，期望 {m} 个（每个块一个）。",
    ),
    (
        r"(?P<w>\S+) is not a learnable parameter \(requires_grad is False\): wrap it in nn\.Parameter\(\.\.\.\)",
        "{w} 不是可学习参数（requires_grad 为 False）：请用 nn.Parameter(...) 包起来",
    ),
    (
        r"(?P<q>\S+) should return the layer it was given \(return layer\), got something without a "
        r"\.weight \(did you forget the return\?\)",
        "{q} 应返回传入的那一层（return layer），实际得到的对象没有 .weight（是不是忘了 return？）",
    ),
    (r"(?P<w>\S+) should be all zeros\.", "{w} 应该全为 0。"),
    (
        E("the weights have the right std but are not normally distributed."),
        "权重的标准差对了，但不是正态分布。",
    ),
    (
        E(
            "your result contains NaN. A query row whose keys are all masked gives softmax(-inf, ..., -inf) = NaN."
        ),
        "你的结果里有 NaN。一个查询行的所有键都被掩码时，softmax(-inf, ..., -inf) = NaN。",
    ),
    (
        r"(?P<q>\S+) modified its input (?P<n>\S+) in place: a backward function must leave its inputs as they "
        r"are \(use out-of-place ops\)",
        "{q} 原地修改了它的输入 {n}：反向函数必须保持输入不变（请用非原地运算）",
    ),
    (
        r"generate modified its input idx in place: build a new tensor with torch\.cat",
        "generate 原地修改了它的输入 idx：请用 torch.cat 构造一个新张量",
    ),
    (r"(?P<q>\S+) modified its input (?P<n>\S+) in place", "{q} 原地修改了它的输入 {n}"),
    (r"(?P<q>\S+) modified the given cache's (?P<n>\w+) in place", "{q} 原地修改了传入缓存中的 {n}"),
    # lesson 07_decoder
    (
        r"shift_targets shifted along the batch dim: inputs (?P<a>\(.*?\)), expected (?P<b>\(.*?\))\.",
        "shift_targets 沿批维做了平移：inputs 的形状是 {a}，期望是 {b}。",
    ),
    (
        E("shift_targets shifted the wrong way: your targets are the tokens *before* each input."),
        "shift_targets 平移的方向反了：你的 targets 是每个输入*之前*的 token。",
    ),
    (
        E(
            "shift_targets returned targets equal to the inputs: the targets are not shifted, so the model "
            "would learn to copy its input."
        ),
        "shift_targets 返回的 targets 与 inputs 相同：targets 没有平移，模型只会学着照抄它的输入。",
    ),
    (
        r"shift_targets returned a tensor of the full length T\+1 = (?P<n>\d+)\.",
        "shift_targets 返回了完整长度 T+1 = {n} 的张量。",
    ),
    (
        E("changing only the last token changed your outputs at earlier positions: they look at the future."),
        "只改动最后一个 token，你在更早位置上的输出就变了：它们看到了未来。",
    ),
    (
        E(
            "the output weight is not tied to the token embedding: after loading two different matrices, your "
            "model.head.weight and model.tok_emb.weight differ, so they are two separate matrices."
        ),
        "输出层权重没有与 token 嵌入共享：加载两个不同的矩阵之后，你的 model.head.weight 和 "
        "model.tok_emb.weight 不相等，所以它们是两个独立的矩阵。",
    ),
    (
        E("GPT's new_cache should be a list with one (k, v) per block."),
        "GPT 的 new_cache 应是一个列表，每个块一个 (k, v)。",
    ),
    (
        E("GPT's new_cache should be a list with one (k, v) per block"),
        "GPT 的 new_cache 应是一个列表，每个块一个 (k, v)",
    ),
    (
        E("a fresh GPT should predict (nearly) the uniform distribution."),
        "刚初始化的 GPT 应当预测（近似）均匀分布。",
    ),
    (
        E("sample_next is not deterministic here."),
        "sample_next 在这里应给出确定的结果，但你的结果不对。",
    ),
    (
        E("sample_next gave a different answer the second time on a deterministic input"),
        "在确定性的输入上，sample_next 第二次给出了不同的答案",
    ),
    (
        r"(?P<q>sample_next|generate) (?:returned|produced) ids outside the vocabulary \[0, (?P<v>\d+)\)\.",
        "{q} 给出了词表 [0, {v}) 之外的 id。",
    ),
    (
        E("sample_next gave different draws with the same seeded generator: it does not use it."),
        "用同一个设了种子的生成器，sample_next 却给出了不同的采样：它没有用这个生成器。",
    ),
    (
        r"sample_next draws with the wrong frequencies \((?P<n>\d+) draws\)\.",
        "sample_next 采样出的频率不对（共采样 {n} 次）。",
    ),
    (E("generate should return token ids."), "generate 应返回 token id。"),
    (
        E("generate's output should start with the prompt idx, then the new tokens."),
        "generate 的输出应先是提示词 idx，然后才是新 token。",
    ),
    (
        E(
            "generate gave different tokens with the same seeded generator: pass generator= on to sample_next "
            "(and temperature, top_k)"
        ),
        "用同一个设了种子的生成器，generate 却给出了不同的 token：请把 generator= 传给 sample_next"
        "（temperature 和 top_k 也要传）",
    ),
    (
        E("generate with greedy decoding (temperature 0 or top_k=1) gave other tokens than the reference."),
        "贪心解码（temperature 0 或 top_k=1）时，generate 生成的 token 与参考答案不同。",
    ),
    # lesson 08_backward
    (
        r"LayerNormFunction saves the whole graph: its forward built an autograd graph \(tensors saved by ops "
        r"inside forward, or kept with a grad_fn\), so the primitive ops' intermediates stay in memory "
        r"\((?P<n>\d+) tensors, (?P<b>\d+) bytes\)\.",
        "LayerNormFunction 保存了整张计算图：它的 forward 构建了 autograd 图（forward 内部的运算保存了张量，"
        "或留下了带 grad_fn 的张量），所以各个基本运算的中间结果都留在内存里（{n} 个张量，{b} 字节）。",
    ),
    (
        E("LayerNormFunction saves more than its backward needs."),
        "LayerNormFunction 保存的东西超出了 backward 的需要。",
    ),
    (
        E(
            "LayerNormFunction's backward got the right gradients, yet its forward kept no tensor for it "
            "(neither saved nor on ctx)."
        ),
        "LayerNormFunction 的 backward 算出了正确的梯度，但它的 forward 没有为它留下任何张量"
        "（既没有保存，也没有放在 ctx 上）。",
    ),
    (
        E("the grader could not apply LayerNormFunction (no results came back)"),
        "评分器无法调用 LayerNormFunction（没有返回任何结果）",
    ),
    (
        r"(?P<n>\w+)\.grad is None after backward: backward must return a gradient for (?P=n) "
        r"\(return dx, dweight, dbias, None\)",
        "backward 之后 {n}.grad 是 None：backward 必须为 {n} 返回梯度（return dx, dweight, dbias, None）",
    ),
    # grader-side lines appended to a check's message
    (
        r"note: (?P<q>\S+) uses your (?P<n>.+?), which fails? (?:its|their) own check: fix that first",
        "注意：{q} 用到了你的 {n}，而它本身的检查没有通过：请先修好它",
    ),
    (r"the test cell timed out after (?P<s>\S+) s", "测试单元格运行超过 {s} 秒，已超时"),
    (
        r"your functions pass the grader's checks, but the notebook's own test cell failed: (?P<e>.*)",
        "你的函数通过了评分器的检查，但笔记本自带的测试单元格失败了：{e}",
    ),
]

# Why a module's state dict does not fit (byhand._core.structure_message): one reason per kind of
# attribute, joined with "; " when there are two kinds. <S> is the list of attributes.
SHOWN = r"self\.[\w.]+(?:, self\.[\w.]+)*(?:, \.\.\.)?"
_NOT_REGISTERED = (
    r" of modules: nn\.Module does not register \(or move, or save\) modules inside it, so their parameters "
    r"are not in state_dict\(\); use "
)
_WHY = [
    (
        r"<S> (?:are plain tensors|is a plain tensor), not registered: wrap each in nn\.Parameter\(\.\.\.\) "
        r"\(or use nn\.Linear\)",
        "{S} 是普通张量，没有注册：请逐个用 nn.Parameter(...) 包起来（或改用 nn.Linear）",
    ),
    (
        r"<S> (?:are Python lists|is a Python list)" + _NOT_REGISTERED + r"nn\.ModuleList\(\.\.\.\)",
        "{S} 是装着模块的 Python 列表：nn.Module 不会注册（也不会移动、保存）其中的模块，"
        "所以它们的参数不在 state_dict() 里；请用 nn.ModuleList(...)",
    ),
    (
        r"<S> (?:are Python dicts|is a Python dict)" + _NOT_REGISTERED + r"nn\.ModuleDict\(\.\.\.\)",
        "{S} 是装着模块的 Python 字典：nn.Module 不会注册（也不会移动、保存）其中的模块，"
        "所以它们的参数不在 state_dict() 里；请用 nn.ModuleDict(...)",
    ),
    (
        r"<S>: a Python list of tensors is not registered; use nn\.ParameterList",
        "{S}：装着张量的 Python 列表不会被注册；请用 nn.ParameterList",
    ),
    (r"there is no <S>: the exercise names them", "没有 {S}：练习规定了要有它们"),
    (r"there is no <S>: the exercise names it", "没有 {S}：练习规定了要有它"),
    (
        r"<S> (?:are|is) a (?P<kind<I>>.+?), not a registered nn\.Module or nn\.Parameter",
        "{S} 是 {K}，不是已注册的 nn.Module 或 nn.Parameter",
    ),
]


def _why(i: int) -> list:
    return [
        (
            p.replace("<S>", f"(?P<s{i}>{SHOWN})").replace("<I>", str(i)),
            t.replace("{S}", f"{{s{i}}}").replace("{K}", f"{{kind{i}}}"),
        )
        for p, t in _WHY
    ]


STRUCTURE = [(a + "; " + b, ta + "；" + tb) for a, ta in _why(1) for b, tb in _why(2)] + _why(1)

PIECES = STRUCTURE + [
    (E("generate's output"), "generate 的输出"),
    # names of what a check compares
    (r"the std of (?P<x>\S+)", "{x} 的标准差"),
    (r"(?P<x>\S+) after all calls", "所有调用之后的 {x} "),
    (r"(?P<x>\S+) output \(call (?P<i>\d+) of (?P<n>\d+)\)", "{x} 的输出（第 {i} 次调用，共 {n} 次）"),
    (r"(?P<x>\S+) output at the real positions", "{x} 在真实（非填充）位置上的输出"),
    (r"(?P<x>\S+) output", "{x} 的输出"),
    (r"(?P<x>\S+) logits", "{x} 的 logits "),
    (E("weights"), "注意力权重 weights "),
    # names of what a check compares (lessons 07, 08)
    (r"(?P<x>\S+) output (?P<y>\w+) with a cache", "使用缓存时 {x} 的输出 {y} "),
    (r"(?P<x>\S+) output (?P<y>\w+)", "{x} 的输出 {y} "),
    (r"(?P<x>\S+) logits with a cache", "使用缓存时 {x} 的 logits "),
    (r"(?P<x>\S+) logits at the real positions", "{x} 在真实（非填充）位置上的 logits "),
    (r"(?P<n>\w+) from (?P<f>\w+)'s backward", "{f} 的 backward 返回的 {n} "),
    (r"(?P<n>\w+) from (?P<f>\w+)", "{f} 返回的 {n} "),
    (E("dx (the gradient w.r.t. x)"), "dx（对 x 的梯度）"),
    (r"new_cache \(no cache given\): (?P<n>\w+)", "new_cache（未传入缓存时）中的 {n} "),
    (r"new_cache\[(?P<i>\d+)\] \(block (?P=i)\): (?P<n>\w+)", "new_cache[{i}]（第 {i} 个块）中的 {n} "),
    (r"new_cache: (?P<n>\w+)", "new_cache 中的 {n} "),
    (r"new_cache\[(?P<i>\d+)\] \(block (?P=i)\)", "new_cache[{i}]（第 {i} 个块）"),
    (E("new_cache (no cache given)"), "new_cache（未传入缓存时）"),
    (E("the forward output of LayerNormFunction"), "LayerNormFunction 前向的输出"),
    (E("nn.init.zeros_(layer.bias)"), "nn.init.zeros_(layer.bias)"),
    (CODE, "{c} "),
    # hints
    (
        E(
            "Post-LN normalizes the sum, norm(x + sublayer(x)); yours normalizes the sublayer's output before "
            "adding the residual (x + norm(sublayer(x)))"
        ),
        "Post-LN 归一化的是相加之和 norm(x + sublayer(x))；你的实现在加上残差之前归一化了子层的输出"
        "（x + norm(sublayer(x))）",
    ),
    (
        E(
            "Pre-LN and Post-LN are swapped: norm_first=True is x + sublayer(norm(x)) (Pre-LN), "
            "norm_first=False is norm(x + sublayer(x)) (Post-LN)"
        ),
        "Pre-LN 和 Post-LN 弄反了：norm_first=True 是 x + sublayer(norm(x))（Pre-LN），"
        "norm_first=False 是 norm(x + sublayer(x))（Post-LN）",
    ),
    (
        r"Pre-LN and Post-LN are swapped: pre_ln=(?P<v>\w+) asks for (?P<a>\S+), yours computes (?P<b>\S+)\. "
        + E(
            "Pre-LN is h + linears[i](norms[i](h)) (the norm inside the branch); Post-LN is "
            "norms[i](h + linears[i](h)) (the norm after the sum)"
        ),
        "Pre-LN 和 Post-LN 弄反了：pre_ln={v} 要求 {a}，你的实现算的是 {b}。Pre-LN 是 "
        "h + linears[i](norms[i](h))（归一化在分支内部）；Post-LN 是 norms[i](h + linears[i](h))（归一化在求和之后）",
    ),
    (
        r"Pre-LN and Post-LN are swapped: pre_norm=(?P<v>\w+) asks for (?P<a>\S+), yours computed (?P<b>\S+)",
        "Pre-LN 和 Post-LN 弄反了：pre_norm={v} 要求 {a}，你的实现算的是 {b}",
    ),
    (
        E("True above the diagonal means 'may attend to the future': use torch.tril, not triu"),
        "对角线上方为 True 意味着“可以看到未来”：请用 torch.tril，而不是 triu",
    ),
    (
        E(
            "a fully masked row must give weights 0 and output 0: e.g. torch.nan_to_num the weights, or zero the "
            "rows with mask.any(-1) == False"
        ),
        "全被遮住的行必须得到权重 0 和输出 0：例如对权重用 torch.nan_to_num，或把 mask.any(-1) == False "
        "的行置零",
    ),
    (
        E("eps is added to the rms, outside the sqrt: divide by sqrt(mean(x^2) + eps)"),
        "eps 加在了 rms 上、sqrt 之外：应除以 sqrt(mean(x^2) + eps)",
    ),
    (
        E("eps is added to the std, outside the sqrt: divide by sqrt(var + eps), not sqrt(var) + eps"),
        "eps 加在了标准差上、sqrt 之外：应除以 sqrt(var + eps)，而不是 sqrt(var) + eps",
    ),
    (
        E(
            "in eval mode (training=False) normalise with running_mean and running_var, not with the batch "
            "statistics"
        ),
        "评估模式（training=False）下应使用 running_mean 和 running_var 归一化，而不是当前批次的统计量",
    ),
    (
        E(
            "in eval mode dropout must do nothing: use nn.Dropout (it follows module.eval()), or "
            "F.dropout(h, p, training=self.training)"
        ),
        "评估模式下 dropout 不应起任何作用：请用 nn.Dropout（它跟随 module.eval()），或 "
        "F.dropout(h, p, training=self.training)",
    ),
    (
        E(
            "layer.weight still has nn.Linear's default init (std 1/sqrt(3 fan_in)): fill the layer's own weight "
            "in place"
        ),
        "layer.weight 仍是 nn.Linear 的默认初始化（std 1/sqrt(3 fan_in)）：请原地填充这一层自己的权重",
    ),
    (
        E(
            "masked scores are set to 0 instead of -inf: exp(0) = 1 still gives masked keys weight; use "
            "float('-inf')"
        ),
        "被掩码的注意力分数设成了 0 而不是 -inf：exp(0) = 1，被掩码的键仍会得到权重；请用 float('-inf')",
    ),
    (
        E(
            "momentum is the weight of the NEW statistic: running = (1 - momentum) * running + momentum * "
            "batch_stat"
        ),
        "momentum 是“新”统计量的权重：running = (1 - momentum) * running + momentum * batch_stat",
    ),
    (
        E("norm1 and norm2 are swapped: norm1 goes with the attention sublayer, norm2 with the feed-forward"),
        "norm1 和 norm2 弄反了：norm1 配注意力子层，norm2 配前馈全连接层",
    ),
    (
        r"only linears\[i\]\.weight for i in range\(depth\): the head is not a block",
        "只取 i in range(depth) 的 linears[i].weight：输出头 head 不是一个块",
    ),
    (
        E("pre_norm should default to True (Pre-LN): __init__(self, d_model, dropout=0.0, pre_norm=True)"),
        "pre_norm 的默认值应为 True（Pre-LN）：__init__(self, d_model, dropout=0.0, pre_norm=True)",
    ),
    (
        E(
            "running_var is updated with the biased batch variance; PyTorch updates it with the unbiased one: "
            "var(0, unbiased=False) * N / (N - 1)"
        ),
        "running_var 用有偏的批次方差更新了；PyTorch 用无偏方差更新它：var(0, unbiased=False) * N / (N - 1)",
    ),
    (
        E(
            "self_attn mixes the batch, not the sequence: nn.MultiheadAttention expects (L, B, d) unless it is "
            "built with batch_first=True"
        ),
        "self_attn 在批次维上做了混合，而不是在序列维上：除非用 batch_first=True 构建，"
        "nn.MultiheadAttention 期望输入 (L, B, d)",
    ),
    (
        E("sin and cos are swapped: even features 2i hold sin(p * w_i), odd features 2i+1 hold cos(p * w_i)"),
        "sin 和 cos 弄反了：偶数特征 2i 放 sin(p * w_i)，奇数特征 2i+1 放 cos(p * w_i)",
    ),
    (
        E("that is GELU; the Transformer's FFN uses ReLU: torch.relu (or x.clamp(min=0))"),
        "这是 GELU；Transformer 的前馈全连接层用的是 ReLU：torch.relu（或 x.clamp(min=0)）",
    ),
    (
        E(
            "that is the hybrid placement x + dropout(norm(sublayer(x))); Pre-LN normalises the sublayer's input: "
            "x + dropout(sublayer(norm(x)))"
        ),
        "这是混合式 x + dropout(norm(sublayer(x)))；Pre-LN 归一化的是子层的输入：x + dropout(sublayer(norm(x)))",
    ),
    (
        E(
            "the FFN uses GELU: this block (like nn.TransformerEncoderLayer's default) uses ReLU, "
            "linear2(relu(linear1(x)))"
        ),
        "前馈全连接层用了 GELU：这个块（与 nn.TransformerEncoderLayer 的默认一样）用 ReLU，"
        "linear2(relu(linear1(x)))",
    ),
    (
        E("the ReLU between linear1 and linear2 is missing: FFN(x) = linear2(relu(linear1(x)))"),
        "缺少 linear1 和 linear2 之间的 ReLU：FFN(x) = linear2(relu(linear1(x)))",
    ),
    (
        E("the ReLU is applied after w2: it goes between the layers, w2(relu(w1(x)))"),
        "ReLU 放在了 w2 之后：它应在两层之间，w2(relu(w1(x)))",
    ),
    (
        E(
            "the ReLU is missing: without it the two linear layers collapse into one linear map; use "
            "w2(relu(w1(x)))"
        ),
        "缺少 ReLU：没有它，两个线性层会退化成一个线性映射；请用 w2(relu(w1(x)))",
    ),
    (
        E(
            "the affine parameters are applied in the wrong order: (x_hat + bias) * weight; it is x_hat * weight "
            "+ bias"
        ),
        "仿射参数的顺序错了：(x_hat + bias) * weight；应为 x_hat * weight + bias",
    ),
    (
        E("the affine parameters are ignored: multiply by weight and add bias after normalising"),
        "忽略了仿射参数：归一化之后要乘以 weight 再加上 bias",
    ),
    (
        E(
            "the batch is normalised with the unbiased variance (divides by N-1); F.batch_norm normalises with "
            "the biased one, x.var(0, unbiased=False), and uses the unbiased one only to update running_var"
        ),
        "批次用无偏方差（除以 N-1）做了归一化；F.batch_norm 用有偏方差 x.var(0, unbiased=False) 归一化，"
        "只在更新 running_var 时才用无偏方差",
    ),
    (
        E("the blocks are Pre-LN although norm_first=False: pass norm_first to every EncoderBlock"),
        "虽然 norm_first=False，各块却是 Pre-LN：请把 norm_first 传给每个 EncoderBlock",
    ),
    (
        E("the eps passed to __init__ is not used: store it (self.eps = eps) and use it in forward"),
        "传给 __init__ 的 eps 没有被使用：把它存下来（self.eps = eps），并在 forward 中使用",
    ),
    (
        E(
            "the final LayerNorm is missing: a Pre-LN stack never normalizes its residual stream, so Encoder "
            "must end with self.norm(x) after the last block"
        ),
        "缺少最后的 LayerNorm：Pre-LN 堆叠从不归一化它的残差流，所以 Encoder 必须在最后一个块之后以 "
        "self.norm(x) 结尾",
    ),
    (
        E("the frequency base is 1000: it is 10000, w_i = 1 / 10000^(2i/d_model)"),
        "频率的底数用了 1000：应为 10000，w_i = 1 / 10000^(2i/d_model)",
    ),
    (
        E(
            "the frequency base is wrong: yours is w_i = 1 / 10000^(i/d_model) with i the pair index; the "
            "exponent is 2i/d_model (2i is the even feature's index: torch.arange(0, d_model, 2))"
        ),
        "频率写错了：你的是 w_i = 1 / 10000^(i/d_model)，其中 i 是成对的序号；指数应为 2i/d_model"
        "（2i 是偶数特征的下标：torch.arange(0, d_model, 2)）",
    ),
    (E("the head is missing: forward(x) = head(h_depth)"), "缺少输出头 head：forward(x) = head(h_depth)"),
    (E("the loss is stack(x).pow(2).sum(): use .mean()"), "损失用的是 stack(x).pow(2).sum()：请用 .mean()"),
    (
        E(
            "the mask polarity is inverted: True means 'may attend', so fill the scores where the mask is False "
            "with -inf"
        ),
        "掩码的含义反了：True 表示“可以关注”，所以应把掩码为 False 处的注意力分数填成 -inf",
    ),
    (
        E("the norms are in reverse order: entry i is block i (linears[i]), from the input to the output"),
        "范数的顺序反了：第 i 项是第 i 个块（linears[i]），从输入到输出",
    ),
    (
        E(
            "the padding mask polarity is inverted: pad_mask is True for real tokens, while "
            "nn.MultiheadAttention's key_padding_mask is True for the positions to ignore: pass ~pad_mask"
        ),
        "填充掩码的含义反了：pad_mask 对真实 token 为 True，而 nn.MultiheadAttention 的 key_padding_mask "
        "对要忽略的位置为 True：请传入 ~pad_mask",
    ),
    (
        E(
            "the positional encoding is missing: add positional_encoding(max_len, d_model)[:L] to the token "
            "embeddings"
        ),
        "缺少位置编码：把 positional_encoding(max_len, d_model)[:L] 加到 token 嵌入上",
    ),
    (
        E(
            "the residual adds the normalised x: normalise a copy for the sublayer, and add the raw x, "
            "x + dropout(sublayer(norm(x)))"
        ),
        "残差加上的是归一化后的 x：给子层用归一化后的副本，残差加原始的 x，x + dropout(sublayer(norm(x)))",
    ),
    (
        E("the residual connection around the feed-forward sublayer is missing: add its input back"),
        "前馈全连接子层外的残差连接缺失了：把它的输入加回去",
    ),
    (
        E(
            "the residual connection is missing around both sublayers: each sublayer's output is added to its "
            "input x"
        ),
        "两个子层外的残差连接都缺失了：每个子层的输出都要加到它的输入 x 上",
    ),
    (E("the residual path is missing: add the block's input x back"), "缺少残差通路：把块的输入 x 加回去"),
    (
        E("the residual path is missing: each block adds its branch to h (h + ...), it does not replace h"),
        "缺少残差通路：每个块把它的分支加到 h 上（h + ...），而不是替换 h",
    ),
    (
        E(
            "the running buffers were not updated in place: running_mean = ... only rebinds a local name; write "
            "into the tensor (running_mean.mul_(1 - momentum).add_(momentum * mean), or running_mean.copy_(...)) "
            "under torch.no_grad()"
        ),
        "running 缓冲区没有被原地更新：running_mean = ... 只是重新绑定了一个局部变量名；请在 torch.no_grad() "
        "下写入张量本身（running_mean.mul_(1 - momentum).add_(momentum * mean)，或 running_mean.copy_(...)）",
    ),
    (
        E("the scores are divided by d_k: divide by sqrt(d_k), the std of q.k"),
        "注意力分数除以了 d_k：应除以 sqrt(d_k)，即 q.k 的标准差",
    ),
    (
        E("the scores are not scaled: divide q @ k^T by sqrt(d_k)"),
        "注意力分数没有缩放：把 q @ k^T 除以 sqrt(d_k)",
    ),
    (
        E(
            "the scores are scaled by sqrt(d_model); each head has d_head = d_model / n_heads dims, so scale by "
            "sqrt(d_head)"
        ),
        "注意力分数按 sqrt(d_model) 缩放了；每个头只有 d_head = d_model / n_heads 维，所以应按 sqrt(d_head) 缩放",
    ),
    (
        r"the std of your weights is sqrt\(2 / (?P<o>\d+)\) = sqrt\(2 / fan_out\): nn\.Linear\((?P<i>\d+), "
        r"(?P=o)\)\.weight has shape \(out_features, in_features\) = \((?P=o), (?P=i)\), so fan_in = "
        r"weight\.shape\[1\] = (?P=i), not weight\.shape\[0\]\. Kaiming's fan_in mode needs fan_in "
        r"\(not fan_out\)",
        "你的权重标准差是 sqrt(2 / {o}) = sqrt(2 / fan_out)：nn.Linear({i}, {o}).weight 的形状是 "
        "(out_features, in_features) = ({o}, {i})，所以 fan_in = weight.shape[1] = {i}，而不是 weight.shape[0]。"
        "Kaiming 的 fan_in 模式需要 fan_in（不是 fan_out）",
    ),
    (
        E(
            "these are squared norms: the Frobenius norm is the square root of the sum of squares (tensor.norm())"
        ),
        "这些是范数的平方：Frobenius 范数是平方和的平方根（tensor.norm()）",
    ),
    (
        E("these are the gradients of the LayerNorms (norms[i].weight.grad): take linears[i].weight.grad"),
        "这些是 LayerNorm 的梯度（norms[i].weight.grad）：应取 linears[i].weight.grad",
    ),
    (
        E("these are the norms of linears[i].bias.grad: take linears[i].weight.grad"),
        "这些是 linears[i].bias.grad 的范数：应取 linears[i].weight.grad",
    ),
    (
        E(
            "this is the widely copied tutorial LayerNorm: x.std() is the unbiased std (divides by d-1) and eps "
            "is added outside the sqrt. Use the population variance (x.var(-1, unbiased=False, keepdim=True)) "
            "and divide by sqrt(var + eps)"
        ),
        "这是被广泛照抄的教程版 LayerNorm：x.std() 是无偏标准差（除以 d-1），而且 eps 加在了 sqrt 之外。"
        "请用总体方差（x.var(-1, unbiased=False, keepdim=True)），并除以 sqrt(var + eps)",
    ),
    (
        E(
            "use a normal draw (nn.init.normal_, weight.normal_), not a uniform one (xavier_uniform_, "
            "kaiming_uniform_) or a truncated normal"
        ),
        "请从正态分布采样（nn.init.normal_、weight.normal_），不要用均匀分布（xavier_uniform_、"
        "kaiming_uniform_）或截断正态分布",
    ),
    (
        E(
            "with dropout=1.0 in training mode every hidden unit is dropped, so the output should be w2.bias "
            "alone; yours did not drop anything: apply self.dropout (an nn.Dropout(dropout)) to relu(w1(x))"
        ),
        "训练模式下 dropout=1.0 会丢弃所有隐藏单元，所以输出应只剩 w2.bias；你的实现什么都没丢弃：请对 "
        "relu(w1(x)) 应用 self.dropout（一个 nn.Dropout(dropout)）",
    ),
    (
        E(
            "with dropout=1.0 in training mode only the sublayer's output is dropped; yours dropped everything: "
            "the dropout wraps sublayer(...) only, before the residual is added"
        ),
        "训练模式下 dropout=1.0 只丢弃子层的输出；你的实现把全部都丢弃了：dropout 只包住 sublayer(...)，"
        "在加上残差之前",
    ),
    (
        E(
            "with dropout=1.0 in training mode the output should be w2.bias alone; yours is 0: the dropout goes "
            "between the layers, w2(dropout(relu(w1(x)))), not after w2"
        ),
        "训练模式下 dropout=1.0 时输出应只剩 w2.bias；你的是 0：dropout 应放在两层之间，"
        "w2(dropout(relu(w1(x))))，而不是 w2 之后",
    ),
    (
        r"you normalised over dims (?P<d>\(.*?\)): "
        + E("LayerNorm normalises each token over its features, the last dim only (mean(-1, keepdim=True))"),
        "你在维度 {d} 上做了归一化：LayerNorm 对每个 token 在它的特征上归一化，只在最后一维（mean(-1, keepdim=True)）",
    ),
    (
        E(
            "you reshaped (B, L, d) straight to (B, H, L, d_head): that mixes tokens into heads. View as "
            "(B, L, H, d_head), then transpose(1, 2)"
        ),
        "你把 (B, L, d) 直接 reshape 成了 (B, H, L, d_head)：这会把不同 token 混进各个头。"
        "应先 view 成 (B, L, H, d_head)，再 transpose(1, 2)",
    ),
    (
        E("you subtracted the mean: that is LayerNorm. RMSNorm only re-scales: x / sqrt(mean(x^2) + eps)"),
        "你减去了均值：那是 LayerNorm。RMSNorm 只做缩放：x / sqrt(mean(x^2) + eps)",
    ),
    (
        E(
            "you used the unbiased variance (x.var() / x.std() divide by d-1 by default); LayerNorm uses the "
            "population variance: x.var(-1, unbiased=False, keepdim=True)"
        ),
        "你用了无偏方差（x.var() / x.std() 默认除以 d-1）；LayerNorm 用的是总体方差："
        "x.var(-1, unbiased=False, keepdim=True)",
    ),
    (
        E(
            "your block ignores the padding mask: pass key_padding_mask=~pad_mask to self_attn, so no token "
            "attends to padding"
        ),
        "你的块忽略了填充掩码：把 key_padding_mask=~pad_mask 传给 self_attn，这样没有 token 会关注到填充位置",
    ),
    (
        E(
            "your std is 2 / sqrt(fan_in): the ReLU gain of 2 multiplies the variance, not the std: "
            "std = sqrt(2 / fan_in)"
        ),
        "你的标准差是 2 / sqrt(fan_in)：ReLU 的增益 2 乘在方差上，而不是标准差上：std = sqrt(2 / fan_in)",
    ),
    (
        E("your std is sqrt(1 / fan_in) (LeCun): Xavier averages the two fans, sqrt(2 / (fan_in + fan_out))"),
        "你的标准差是 sqrt(1 / fan_in)（LeCun）：Xavier 取两个 fan 的平均，sqrt(2 / (fan_in + fan_out))",
    ),
    (
        E(
            "your std is sqrt(1 / fan_in): the ReLU gain is missing. ReLU zeroes half of the signal, so Kaiming "
            "doubles the variance: std = sqrt(2 / fan_in)"
        ),
        "你的标准差是 sqrt(1 / fan_in)：缺少 ReLU 增益。ReLU 会把一半信号置零，所以 Kaiming 把方差加倍："
        "std = sqrt(2 / fan_in)",
    ),
    (
        r"your std is sqrt\(2 / fan_out\) = sqrt\(2 / (?P<o>\d+)\): Kaiming's default \(fan_in mode\) uses "
        r"fan_in = (?P<i>\d+), the number of inputs each output sums over",
        "你的标准差是 sqrt(2 / fan_out) = sqrt(2 / {o})：Kaiming 的默认设置（fan_in 模式）用 fan_in = {i}，"
        "即每个输出要求和的输入个数",
    ),
    (
        E(
            "your table has all the sines first, then all the cosines: interleave them, sin in the even features "
            "0::2 and cos in the odd features 1::2"
        ),
        "你的表先放了所有 sin，再放所有 cos：应交错排列，sin 放在偶数特征 0::2，cos 放在奇数特征 1::2",
    ),
    (
        E("your weights sum to 1 over the queries (dim -2), not the keys: check the softmax dim"),
        "你的权重是在查询维（dim -2）上和为 1，而不是在键维上：检查 softmax 的 dim",
    ),
    # hints: structure and forward of a module (byhand._core)
    (
        r"`(?P<m>[^`]+)` looks like a misspelling of `forward`: rename it",
        "`{m}` 看起来是 `forward` 拼错了：请改名为 `forward`",
    ),
    (
        E("define forward(self, ...): nn.Module calls it when you call the module"),
        "请定义 forward(self, ...)：调用模块时，nn.Module 调用的就是它",
    ),
    (
        E("it has parameters or buffers the exercise does not name: keep exactly the listed ones"),
        "它有练习没有规定的参数或缓冲区：只保留列出的那些",
    ),
    (
        E("name the submodules and parameters exactly as the exercise says"),
        "子模块和参数的名字要与练习规定的完全一致",
    ),
    (
        E(
            "one module is shared by every block ([block] * n, or the same object appended n times): build a "
            "new one per block, nn.ModuleList([Block(...) for _ in range(n)])"
        ),
        "所有块共用了同一个模块（[block] * n，或者把同一个对象 append 了 n 次）：请为每个块新建一个，"
        "nn.ModuleList([Block(...) for _ in range(n)])",
    ),
    # hints: lesson 01_attention
    (
        E(
            "a row with no allowed key got uniform weights 1/Lk instead of 0: filling masked scores with a large "
            "finite number (-1e9, torch.finfo.min) leaves softmax(-1e9, ..., -1e9) = 1/Lk, because -1e9 is "
            "finite. Fill with float('-inf') and turn the NaN rows into 0 (torch.nan_to_num), or zero the "
            "weights of rows where mask.any(-1) is False"
        ),
        "没有任何可关注键的一行得到了均匀权重 1/Lk，而不是 0：用一个很大的有限数（-1e9、torch.finfo.min）"
        "填充被掩码的注意力分数，会得到 softmax(-1e9, ..., -1e9) = 1/Lk，因为 -1e9 是有限的。请用 "
        "float('-inf') 填充，再把 NaN 行变成 0（torch.nan_to_num），或者把 mask.any(-1) 为 False 的行的权重置零",
    ),
    (
        E("the mask is ignored: fill the scores where mask is False with -inf"),
        "掩码被忽略了：把 mask 为 False 处的注意力分数填成 -inf",
    ),
    (
        E(
            "your MultiHeadAttention ignores its mask argument: its output is the same with the mask and without "
            "it. Pass mask on to scaled_dot_product_attention (unsqueeze a (B, Lq, Lk) mask to (B, 1, Lq, Lk) so "
            "it is shared by all heads)"
        ),
        "你的 MultiHeadAttention 忽略了 mask 参数：有没有掩码，它的输出都一样。请把 mask 传给 "
        "scaled_dot_product_attention（把 (B, Lq, Lk) 的掩码 unsqueeze 成 (B, 1, Lq, Lk)，让所有头共用）",
    ),
    # hints: lesson 02_layernorm
    (E("bias is missing: y = x_hat * weight + bias"), "缺少 bias：y = x_hat * weight + bias"),
    # hints: lesson 03_residual
    (
        r"there is no (?P<a>self\.\w+): the exercise names the layers self\.w1 and self\.w2 \(layers kept in a "
        r"Python list are neither named nor registered\)",
        "没有 {a}：练习规定这两层叫 self.w1 和 self.w2（放在 Python 列表里的层既没有这些名字，也不会被注册）",
    ),
    (
        E("w1 = nn.Linear(d_model, d_ff) and w2 = nn.Linear(d_ff, d_model)"),
        "w1 = nn.Linear(d_model, d_ff)，w2 = nn.Linear(d_ff, d_model)",
    ),
    (
        r"Pre-LN and Post-LN are swapped: pre_norm=(?P<v>\w+) asks for (?P<a>\S+), yours computed (?P<b>\S+) "
        + E("(with a zero sublayer, Pre-LN must return x unchanged and Post-LN must return LN(x))"),
        "Pre-LN 和 Post-LN 弄反了：pre_norm={v} 要求 {a}，你的实现算的是 {b}"
        "（子层为零时，Pre-LN 必须原样返回 x，Post-LN 必须返回 LN(x)）",
    ),
    (
        E(
            "the residual path is missing: add the block's input x back (with a zero sublayer, a Pre-LN block "
            "must return x itself)"
        ),
        "缺少残差通路：把块的输入 x 加回去（子层为零时，Pre-LN 块必须返回 x 本身）",
    ),
    (
        r"with dropout=1\.0 in training mode the sublayer's output is entirely dropped, so the block should "
        r"return (?P<r>x|LN\(x\)); yours dropped nothing: apply self\.dropout \(an nn\.Dropout\(dropout\)\) to "
        r"the sublayer's output",
        "训练模式下 dropout=1.0 会把子层的输出全部丢弃，所以块应返回 {r}；你的实现什么都没丢弃：请对子层的输出"
        "应用 self.dropout（一个 nn.Dropout(dropout)）",
    ),
    (
        E(
            "that is the hybrid placement x + dropout(norm(sublayer(x))); Post-LN normalises the sum: "
            "norm(x + dropout(sublayer(x)))"
        ),
        "这是混合式 x + dropout(norm(sublayer(x)))；Post-LN 归一化的是相加之和：norm(x + dropout(sublayer(x)))",
    ),
    (
        r"expected (?P<f>.+?) with self\.norm = nn\.LayerNorm\(d_model\)",
        "应为 {f}，其中 self.norm = nn.LayerNorm(d_model)",
    ),
    (
        E(
            "that is Pre-LN, x + dropout(sublayer(norm(x))): the hybrid normalizes the sublayer's output, "
            "x + dropout(norm(sublayer(x)))"
        ),
        "这是 Pre-LN，x + dropout(sublayer(norm(x)))：混合式归一化的是子层的输出，x + dropout(norm(sublayer(x)))",
    ),
    (
        E(
            "that is Post-LN, norm(x + dropout(sublayer(x))): the hybrid adds the raw x after normalizing the "
            "sublayer's output, x + dropout(norm(sublayer(x)))"
        ),
        "这是 Post-LN，norm(x + dropout(sublayer(x)))：混合式是先归一化子层的输出，再加上原始的 x，"
        "x + dropout(norm(sublayer(x)))",
    ),
    (
        E("the residual path is missing: add the block's input x back, x + dropout(norm(sublayer(x)))"),
        "缺少残差通路：把块的输入 x 加回去，x + dropout(norm(sublayer(x)))",
    ),
    (
        E(
            "with dropout=1.0 in training mode the normalized sublayer output is entirely dropped, so the block "
            "should return x; yours dropped nothing: apply self.dropout after self.norm"
        ),
        "训练模式下 dropout=1.0 会把归一化后的子层输出全部丢弃，所以块应返回 x；你的实现什么都没丢弃："
        "请在 self.norm 之后应用 self.dropout",
    ),
    (
        E(
            "the dropout is applied before the norm, x + norm(dropout(sublayer(x))): with dropout=1.0 that gives "
            "x + norm.bias, not x. Dropout comes last, x + dropout(norm(sublayer(x)))"
        ),
        "dropout 放在了归一化之前，x + norm(dropout(sublayer(x)))：dropout=1.0 时结果是 x + norm.bias，"
        "而不是 x。dropout 应放在最后，x + dropout(norm(sublayer(x)))",
    ),
    (
        E(
            "with dropout=1.0 in training mode only the update is dropped; yours dropped everything: the dropout "
            "wraps norm(sublayer(x)) only, before x is added"
        ),
        "训练模式下 dropout=1.0 只丢弃更新量；你的实现把全部都丢弃了：dropout 只包住 norm(sublayer(x))，"
        "在加上 x 之前",
    ),
    # hints: lesson 05_init
    (
        r"you returned the variance (?P<v>.+?): the std is its square root",
        "你返回的是方差 {v}：标准差是它的平方根",
    ),
    # hints: lesson 06_transformer_block
    (
        E("the padding mask does not reach the blocks: call every block with pad_mask"),
        "填充掩码没有传到各个块：调用每个块时都要传入 pad_mask",
    ),
    (
        r"your (?P<w>\w+) ignores its pad_mask argument: its output is the same with the mask and without it\. "
        + E(
            "Pass the mask on (key_padding_mask=~pad_mask for nn.MultiheadAttention, pad_mask for each block)"
        ),
        "你的 {w} 忽略了 pad_mask 参数：有没有掩码，它的输出都一样。请把掩码传下去"
        "（对 nn.MultiheadAttention 传 key_padding_mask=~pad_mask，对每个块传 pad_mask）",
    ),
    (
        E(
            "nn.MultiheadAttention's key_padding_mask is True for positions to *ignore*, the opposite of "
            "pad_mask: pass key_padding_mask=~pad_mask (with the polarity inverted, a full-length sequence has "
            "every key ignored, and that gives NaN)"
        ),
        "nn.MultiheadAttention 的 key_padding_mask 对要*忽略*的位置为 True，与 pad_mask 正好相反：请传入 "
        "key_padding_mask=~pad_mask（含义反了的话，一个满长度的序列的所有键都会被忽略，结果就是 NaN）",
    ),
    (
        E("look for a division by zero or a log of a negative number"),
        "找找有没有除以零，或者对负数取 log",
    ),
    # hints: lesson 07_decoder
    (
        E("shift along the time axis, dim 1: tokens[:, :-1] and tokens[:, 1:]"),
        "沿时间轴（dim 1）平移：tokens[:, :-1] 和 tokens[:, 1:]",
    ),
    (
        E(
            "position t reads token t and predicts token t+1: inputs = tokens[:, :-1], targets = tokens[:, 1:]"
        ),
        "位置 t 读入 token t，预测 token t+1：inputs = tokens[:, :-1]，targets = tokens[:, 1:]",
    ),
    (E("targets = tokens[:, 1:] (the next token)"), "targets = tokens[:, 1:]（下一个 token）"),
    (
        E("targets = tokens[:, 1:] (the next token at each position)"),
        "targets = tokens[:, 1:]（每个位置的下一个 token）",
    ),
    (E("inputs = tokens[:, :-1]"), "inputs = tokens[:, :-1]"),
    (
        r"targets are not shifted: inputs = tokens\[:, :-1\], targets = tokens\[:, 1:\], both \(B, T\) = "
        r"(?P<s>\(.*\))",
        "targets 没有平移：inputs = tokens[:, :-1]，targets = tokens[:, 1:]，两者都是 (B, T) = {s}",
    ),
    (
        E(
            "your attention ignores the causal mask: the query at position t may attend only to keys 0..t "
            "(with a cache: 0..T_past + t)"
        ),
        "你的注意力忽略了因果掩码：位置 t 的查询只能关注键 0..t（使用缓存时：0..T_past + t）",
    ),
    (
        E(
            "the causal mask is inverted: each query attends to the future (keys t..T-1), not to the past "
            "(keys 0..t). True on and below the diagonal means 'may attend'"
        ),
        "因果掩码反了：每个查询关注的是未来（键 t..T-1），而不是过去（键 0..t）。对角线及其下方为 True，"
        "表示“可以关注”",
    ),
    (
        E("apply the causal mask: the query at t may attend to keys 0..t only"),
        "请加上因果掩码：位置 t 的查询只能关注键 0..t",
    ),
    (
        E("the scores are not scaled: divide q @ k^T by sqrt(d_head)"),
        "注意力分数没有缩放：把 q @ k^T 除以 sqrt(d_head)",
    ),
    (
        E(
            "the scores are divided by sqrt(d_model): each head has d_head = d_model // n_heads features, divide "
            "by sqrt(d_head)"
        ),
        "注意力分数除以了 sqrt(d_model)：每个头只有 d_head = d_model // n_heads 个特征，应除以 sqrt(d_head)",
    ),
    (
        E(
            "q, k and v are read from the wrong parts of qkv(x): it stacks q, k, v in that order "
            "(qkv(x).split(d_model, dim=-1))"
        ),
        "q、k、v 从 qkv(x) 中取错了部分：它按 q、k、v 的顺序堆叠（qkv(x).split(d_model, dim=-1)）",
    ),
    (
        E(
            "the heads are split by a view without the transpose: (B, T, d) -> (B, T, H, d_head) -> "
            "transpose(1, 2) -> (B, H, T, d_head)"
        ),
        "拆分头时只做了 view 而没有转置：应为 (B, T, d) -> (B, T, H, d_head) -> transpose(1, 2) -> (B, H, T, d_head)",
    ),
    (
        E(
            "with a cache, the positions of your causal mask restart at 0: the new query t is at absolute "
            "position T_past + t and may attend to keys 0..T_past + t (mask[t, j] = j <= T_past + t)"
        ),
        "使用缓存时，你的因果掩码的位置从 0 重新开始了：新的查询 t 位于绝对位置 T_past + t，可以关注键 "
        "0..T_past + t（mask[t, j] = j <= T_past + t）",
    ),
    (
        E(
            "the cache is concatenated in the wrong order: the cached (earlier) keys and values come first, then "
            "the new ones: torch.cat([past_k, k], dim=2)"
        ),
        "缓存拼接的顺序反了：先是缓存里（较早的）键和值，然后才是新的：torch.cat([past_k, k], dim=2)",
    ),
    (
        E(
            "a query with every key masked gives NaN: the causal mask is inverted (the last query has no future "
            "key), or the mask's positions ignore the cache"
        ),
        "一个查询的所有键都被掩码时会得到 NaN：要么因果掩码反了（最后一个查询没有未来的键），要么掩码的位置"
        "没有考虑缓存",
    ),
    (
        E(
            "the cache holds the keys and values of every position so far, k and v straight from qkv(x) split "
            "into heads (unscaled), earlier positions first"
        ),
        "缓存存放的是到目前为止每个位置的键和值：k 和 v 直接取自 qkv(x) 拆分成头之后的结果（不缩放），"
        "较早的位置在前",
    ),
    (
        E(
            "the cache is laid out as (B, T, n_heads, d_head): the heads are not transposed to dim 1; keep k and "
            "v as (B, n_heads, T, d_head) and concatenate along the time axis, dim 2"
        ),
        "缓存的布局是 (B, T, n_heads, d_head)：头没有被转置到 dim 1；请让 k 和 v 保持 (B, n_heads, T, d_head)，"
        "并沿时间轴 dim 2 拼接",
    ),
    (
        E(
            "the cache is laid out as (B, T, d_model): it is cached before the heads are split; keep k and v as "
            "(B, n_heads, T, d_head) and concatenate along the time axis, dim 2"
        ),
        "缓存的布局是 (B, T, d_model)：它是在拆分头之前缓存的；请让 k 和 v 保持 (B, n_heads, T, d_head)，"
        "并沿时间轴 dim 2 拼接",
    ),
    (
        E(
            "the cache is laid out as (B, n_heads, d_head, T): k is cached transposed; keep k and v as "
            "(B, n_heads, T, d_head) and concatenate along the time axis, dim 2"
        ),
        "缓存的布局是 (B, n_heads, d_head, T)：k 是转置之后才缓存的；请让 k 和 v 保持 (B, n_heads, T, d_head)，"
        "并沿时间轴 dim 2 拼接",
    ),
    (
        E(
            "the cache is concatenated on the wrong axis; keep k and v as (B, n_heads, T, d_head) and "
            "concatenate along the time axis, dim 2"
        ),
        "缓存在错误的轴上做了拼接；请让 k 和 v 保持 (B, n_heads, T, d_head)，并沿时间轴 dim 2 拼接",
    ),
    (
        E(
            "compare step by step: q, k, v = qkv(x).split(d_model, -1), heads (B, n_heads, T, d_head), "
            "scores / sqrt(d_head), causal mask, softmax over the keys, merge the heads, proj"
        )
        + E("; with a cache, concatenate the past k, v before the new ones along dim 2"),
        "逐步对照：q, k, v = qkv(x).split(d_model, -1)，拆成头 (B, n_heads, T, d_head)，scores / sqrt(d_head)，"
        "因果掩码，在键上做 softmax，合并头，proj；使用缓存时，沿 dim 2 把过去的 k、v 拼在新的之前",
    ),
    (
        E(
            "compare step by step: q, k, v = qkv(x).split(d_model, -1), heads (B, n_heads, T, d_head), "
            "scores / sqrt(d_head), causal mask, softmax over the keys, merge the heads, proj"
        ),
        "逐步对照：q, k, v = qkv(x).split(d_model, -1)，拆成头 (B, n_heads, T, d_head)，scores / sqrt(d_head)，"
        "因果掩码，在键上做 softmax，合并头，proj",
    ),
    (
        E(
            "the final LayerNorm ln_f is missing: a Pre-LN stack normalizes its residual stream once, after the "
            "last block, before the output layer"
        ),
        "缺少最后的 LayerNorm ln_f：Pre-LN 堆叠只在最后一个块之后、输出层之前对残差流做一次归一化",
    ),
    (
        E("the position embeddings are missing: x = tok_emb(idx) + pos_emb(positions)"),
        "缺少位置嵌入：x = tok_emb(idx) + pos_emb(positions)",
    ),
    (
        E("your blocks are Post-LN: the GPT block is Pre-LN, x = x + attn(ln1(x)); x = x + mlp(ln2(x))"),
        "你的块是 Post-LN：GPT 的块是 Pre-LN，x = x + attn(ln1(x)); x = x + mlp(ln2(x))",
    ),
    (
        E("the MLP uses ReLU: GPT's uses GELU, mlp = Linear(d, 4d) -> GELU -> Linear(4d, d)"),
        "MLP 用了 ReLU：GPT 的 MLP 用 GELU，mlp = Linear(d, 4d) -> GELU -> Linear(4d, d)",
    ),
    (
        E(
            "with a cache, your positions restart at 0: the new tokens are at positions T_past..T_past + T - 1 "
            "(T_past = kv_cache[0][0].shape[2]), both for pos_emb and for the causal mask"
        ),
        "使用缓存时，你的位置从 0 重新开始了：新 token 位于位置 T_past..T_past + T - 1"
        "（T_past = kv_cache[0][0].shape[2]），pos_emb 和因果掩码都是如此",
    ),
    (
        E(
            "with a cache, the position embeddings restart at 0: the new tokens are at positions "
            "T_past..T_past + T - 1, with T_past = kv_cache[0][0].shape[2]"
        ),
        "使用缓存时，位置嵌入从 0 重新开始了：新 token 位于位置 T_past..T_past + T - 1，其中 "
        "T_past = kv_cache[0][0].shape[2]",
    ),
    (
        E(
            "first make CausalSelfAttention pass its check; then x = tok_emb(idx) + pos_emb(positions), each "
            "block x = x + attn(ln1(x)); x = x + mlp(ln2(x)), then ln_f, then head"
        )
        + E("; with a cache, give block i its kv_cache[i], and start the positions at T_past"),
        "先让 CausalSelfAttention 通过它的检查；然后 x = tok_emb(idx) + pos_emb(positions)，每个块 "
        "x = x + attn(ln1(x)); x = x + mlp(ln2(x))，再接 ln_f，最后是 head；使用缓存时，把 kv_cache[i] 交给"
        "第 i 个块，位置从 T_past 开始",
    ),
    (
        E(
            "first make CausalSelfAttention pass its check; then x = tok_emb(idx) + pos_emb(positions), each "
            "block x = x + attn(ln1(x)); x = x + mlp(ln2(x)), then ln_f, then head"
        ),
        "先让 CausalSelfAttention 通过它的检查；然后 x = tok_emb(idx) + pos_emb(positions)，每个块 "
        "x = x + attn(ln1(x)); x = x + mlp(ln2(x))，再接 ln_f，最后是 head",
    ),
    (
        E("make them one parameter: self.head.weight = self.tok_emb.weight"),
        "让它们成为同一个参数：self.head.weight = self.tok_emb.weight",
    ),
    (
        E(
            "initialize the weights small, as GPT-2 does: nn.init.normal_(std=0.02) for the embeddings and Linear "
            "weights, zero biases. nn.Embedding's default N(0, 1), shared with the tied output layer, makes the "
            "logits about sqrt(d_model) large"
        ),
        "像 GPT-2 那样把权重初始化得小一些：嵌入和 Linear 的权重用 nn.init.normal_(std=0.02)，偏置置零。"
        "nn.Embedding 默认的 N(0, 1) 又被共享权重的输出层共用，会让 logits 大到约 sqrt(d_model) 的量级",
    ),
    (
        E("torch.multinomial(probs, 1) gives (B, 1): take [:, 0] (or .squeeze(-1))"),
        "torch.multinomial(probs, 1) 得到的是 (B, 1)：取 [:, 0]（或 .squeeze(-1)）",
    ),
    (
        E("temperature 0 means greedy: return logits.argmax(-1) (dividing by 0 is not defined)"),
        "temperature 0 表示贪心解码：返回 logits.argmax(-1)（除以 0 没有定义）",
    ),
    (
        E(
            "top_k=1 keeps only the largest logit, so every draw is logits.argmax(-1): set the other logits to "
            "-inf before the softmax (0 still gives them probability)"
        ),
        "top_k=1 只保留最大的 logit，所以每次采样都是 logits.argmax(-1)：在 softmax 之前把其余 logits 设为 -inf"
        "（设为 0 仍会给它们概率）",
    ),
    (
        E("your top-k keeps the smallest logits: keep the k largest (torch.topk(logits, k))"),
        "你的 top-k 保留的是最小的 logits：应保留最大的 k 个（torch.topk(logits, k)）",
    ),
    (
        E("your top-k keeps the k smallest logits: keep the k largest, torch.topk(logits, k)"),
        "你的 top-k 保留的是最小的 k 个 logits：应保留最大的 k 个，torch.topk(logits, k)",
    ),
    (
        E(
            "sample one index of the last dim per row (the top-k indices must be mapped back to vocabulary ids "
            "with gather)"
        ),
        "每一行在最后一维上采样一个下标（top-k 的下标要用 gather 映射回词表里的 id）",
    ),
    (
        E("pass generator=generator to torch.multinomial (or to torch.rand)"),
        "把 generator=generator 传给 torch.multinomial（或 torch.rand）",
    ),
    (
        E(
            "the temperature is applied after the softmax (or not at all): softmax(logits) / T renormalizes to "
            "softmax(logits). Divide the logits: softmax(logits / T)"
        ),
        "温度用在了 softmax 之后（或者根本没用）：softmax(logits) / T 重新归一化后还是 softmax(logits)。"
        "应该除的是 logits：softmax(logits / T)",
    ),
    (
        E(
            "the logits are multiplied by the temperature: divide them, softmax(logits / T) (a high T flattens "
            "the distribution)"
        ),
        "logits 乘以了温度：应该除以温度，softmax(logits / T)（T 越高，分布越平）",
    ),
    (
        E("top-k is not applied: only the k largest logits may ever be drawn"),
        "没有应用 top-k：只有最大的 k 个 logits 才可能被采到",
    ),
    (
        r"tokens outside the top (?P<k>\d+) were drawn \((?P<l>\[.*?\])\): set the other logits to -inf before "
        r"the softmax \(setting them to 0 still gives them probability\)",
        "采到了前 {k} 名之外的 token（{l}）：在 softmax 之前把其余 logits 设为 -inf（设为 0 仍会给它们概率）",
    ),
    (
        E(
            "your top-k probabilities are not renormalized: the kept tokens must be drawn with p_i / (sum of the "
            "kept p), so they sum to 1 (softmax over the k kept logits only)"
        ),
        "你的 top-k 概率没有重新归一化：保留下来的 token 要按 p_i / (保留的 p 之和) 采样，使它们的和为 1"
        "（只在保留的 k 个 logits 上做 softmax）",
    ),
    (
        E("probs = softmax(logits / temperature) over the kept (top-k) logits, then torch.multinomial"),
        "在保留下来的（top-k）logits 上算 probs = softmax(logits / temperature)，再用 torch.multinomial 采样",
    ),
    (
        E(
            "you sampled from the logits of every position, (B, T * V) or (B * T, V): take the last position's "
            "logits, logits[:, -1, :] (B, V)"
        ),
        "你从所有位置的 logits 里采样了，(B, T * V) 或 (B * T, V)：应取最后一个位置的 logits，logits[:, -1, :] (B, V)",
    ),
    (
        E(
            "your generate samples from the first position's logits: the next token comes from the last "
            "position, logits[:, -1, :]"
        ),
        "你的 generate 从第一个位置的 logits 采样：下一个 token 应来自最后一个位置，logits[:, -1, :]",
    ),
    (
        E(
            "with the cache, feed only the new token: you passed the whole sequence again together with the "
            "cache, so the cached positions are counted twice"
        ),
        "使用缓存时只输入新的 token：你把整个序列连同缓存又传了一遍，缓存里的位置被算了两次",
    ),
    (
        E(
            "your model sees only the last token: pass the cache back in (kv_cache=cache), or, without the cache, "
            "the whole sequence so far"
        ),
        "你的模型只看到了最后一个 token：要么把缓存传回去（kv_cache=cache），要么不用缓存，传入到目前为止的整个序列",
    ),
    (
        E(
            "at each step: logits of the last position -> sample_next(..., temperature, top_k, generator) -> "
            "append; with use_cache, feed only the new token and the cache the model returned"
        ),
        "每一步：最后一个位置的 logits -> sample_next(..., temperature, top_k, generator) -> 接到序列末尾；"
        "use_cache 时只输入新的 token 和模型返回的缓存",
    ),
    # hints: lesson 08_backward
    (E("your result contains NaN where autograd's has none"), "你的结果里有 NaN，而 autograd 的结果里没有"),
    (E("dx = y * (dy - sum(dy * y, dim=-1))"), "dx = y * (dy - sum(dy * y, dim=-1))"),
    (
        E(
            "your dx equals dy * y: that keeps only the diagonal term diag(y) of the softmax Jacobian "
            "J = diag(y) - y y^T. Every y_j depends on every x_i: subtract y * sum(dy * y, dim=-1, keepdim=True)"
        ),
        "你的 dx 等于 dy * y：这只保留了 softmax 雅可比矩阵 J = diag(y) - y y^T 的对角项 diag(y)。"
        "每个 y_j 都依赖于每个 x_i：还要减去 y * sum(dy * y, dim=-1, keepdim=True)",
    ),
    (
        E(
            "your dx equals dy * y * (1 - y): that is only the diagonal of the Jacobian (the sigmoid derivative). "
            "The off-diagonal entries -y_i y_j count too: dx = y * (dy - sum(dy * y))"
        ),
        "你的 dx 等于 dy * y * (1 - y)：这只是雅可比矩阵的对角线（sigmoid 的导数）。非对角元 -y_i y_j 也要算上："
        "dx = y * (dy - sum(dy * y))",
    ),
    (
        E("your dx equals -y * sum(dy * y): the diagonal term y * dy of the Jacobian is missing"),
        "你的 dx 等于 -y * sum(dy * y)：缺少雅可比矩阵的对角项 y * dy",
    ),
    (
        E("your dx has the wrong sign: dx = y * (dy - sum(dy * y)), not y * (sum(dy * y) - dy)"),
        "你的 dx 符号反了：dx = y * (dy - sum(dy * y))，而不是 y * (sum(dy * y) - dy)",
    ),
    (
        E(
            "your dx equals dy - y * sum(dy): that is the backward of log_softmax, not of softmax; softmax's is "
            "y * (dy - sum(dy * y))"
        ),
        "你的 dx 等于 dy - y * sum(dy)：这是 log_softmax 的反向传播，不是 softmax 的；softmax 的是 "
        "y * (dy - sum(dy * y))",
    ),
    (
        r"the sum\(dy \* y\) runs over the wrong dim \(dim (?P<d>-?\d+)\): the softmax is over the last dim, so "
        r"sum over dim=-1 with keepdim=True",
        "sum(dy * y) 求和的维度错了（dim {d}）：softmax 作用在最后一维上，所以应在 dim=-1 上求和，并设 keepdim=True",
    ),
    (
        E(
            "your dx equals rstd * dy * weight: mean and variance were treated as constants. Both depend on x: "
            "dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)) with g = dy * weight"
        ),
        "你的 dx 等于 rstd * dy * weight：均值和方差被当成了常数。二者都依赖于 x："
        "dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))，其中 g = dy * weight",
    ),
    (
        E(
            "your dx misses the mean term -mean(g): the mean depends on x too (the path through mu). "
            "dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)), g = dy * weight"
        ),
        "你的 dx 漏了均值项 -mean(g)：均值也依赖于 x（经过 mu 的那条路径）。"
        "dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))，g = dy * weight",
    ),
    (
        E(
            "your dx misses the variance term -x_hat * mean(g * x_hat): the variance depends on x too (the path "
            "through sigma^2). dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))"
        ),
        "你的 dx 漏了方差项 -x_hat * mean(g * x_hat)：方差也依赖于 x（经过 sigma^2 的那条路径）。"
        "dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))",
    ),
    (
        E("your dx ignores weight: the gradient reaching x_hat is g = dy * weight, not dy"),
        "你的 dx 忽略了 weight：传到 x_hat 的梯度是 g = dy * weight，而不是 dy",
    ),
    (
        E(
            "you used the unbiased variance (divides by d-1); layer_norm uses the population variance, and the "
            "backward divides by d"
        ),
        "你用了无偏方差（除以 d-1）；layer_norm 用的是总体方差，反向传播里也是除以 d",
    ),
    (
        E("eps is added to the std, outside the sqrt: rstd = 1 / sqrt(var + eps)"),
        "eps 加在了标准差上、sqrt 之外：rstd = 1 / sqrt(var + eps)",
    ),
    (
        E("eps is ignored: rstd = 1 / sqrt(var + eps), with the eps passed in"),
        "eps 被忽略了：rstd = 1 / sqrt(var + eps)，其中的 eps 用传入的值",
    ),
    (
        r"the eps passed in is not used \(you used (?P<e>\S+)\): rstd = 1 / sqrt\(var \+ eps\)",
        "没有使用传入的 eps（你用的是 {e}）：rstd = 1 / sqrt(var + eps)",
    ),
    (
        E("dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)), g = dy * weight, means over the last dim"),
        "dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))，g = dy * weight，均值都在最后一维上取",
    ),
    (
        r"(?P<n>\w+) is a scalar for a single token x of shape \((?P<d>\d+),\): with no leading dims, "
        r"\.sum\(dim=\(\)\) sums over every dim \(an empty tuple of dims means all of them\)\. Reduce with "
        r"\.reshape\(-1, d\)\.sum\(0\), which works for any number of leading dims",
        "对形状为 ({d},) 的单个 token x，{n} 成了一个标量：没有前导维度时，.sum(dim=()) 会对所有维求和"
        "（空的维度元组表示全部维度）。请用 .reshape(-1, d).sum(0) 归约，它对任意个数的前导维度都适用",
    ),
    (
        r"(?P<n>\w+) is not reduced: it has x's shape (?P<s>\(.*?\))\. The same weight is used at every "
        r"position, so its gradient is summed over all leading dims (?P<d>\(.*?\))",
        "{n} 没有做归约：它的形状和 x 一样，是 {s}。同一个权重在每个位置都被使用，所以它的梯度要在所有前导维度 "
        "{d} 上求和",
    ),
    (
        r"(?P<n>\w+) is reduced over the wrong dim: you summed over the features \(dim -1\)\. Sum over all "
        r"leading dims instead, keeping the last one: shape \(d,\)",
        "{n} 归约的维度错了：你在特征维（dim -1）上求了和。应在所有前导维度上求和，保留最后一维：形状 (d,)",
    ),
    (
        r"(?P<n>\w+) is reduced over the first dim only \(shape (?P<s>\(.*?\))\): sum over all leading dims, "
        r"e\.g\. \.sum\(dim=(?P<d>\(.*?\))\) or \.reshape\(-1, d\)\.sum\(0\)",
        "{n} 只在第一维上做了归约（形状 {s}）：要在所有前导维度上求和，例如 .sum(dim={d}) 或 .reshape(-1, d).sum(0)",
    ),
    (
        r"(?P<n>\w+) should have weight's shape \((?P<d>\d+),\): sum over all leading dims",
        "{n} 的形状应与 weight 相同，即 ({d},)：请在所有前导维度上求和",
    ),
    (
        E("dweight uses x instead of x_hat: y = x_hat * weight + bias, so dweight = sum(dy * x_hat)"),
        "dweight 用了 x 而不是 x_hat：y = x_hat * weight + bias，所以 dweight = sum(dy * x_hat)",
    ),
    (
        E(
            "dweight is averaged over the leading dims: the gradient of a shared weight is the sum of its uses, "
            "not their mean"
        ),
        "dweight 在前导维度上取了平均：共享权重的梯度是它每一次使用的梯度之和，而不是平均值",
    ),
    (
        E("dbias is averaged over the leading dims: the gradient of a shared bias is the sum of its uses"),
        "dbias 在前导维度上取了平均：共享偏置的梯度是它每一次使用的梯度之和",
    ),
    (E("dbias = sum of dy over all leading dims"), "dbias = dy 在所有前导维度上的和"),
    (
        E(
            "dq and dk miss the scale: scores = q k^T / sqrt(d_k), so dq = dS k / sqrt(d_k) and "
            "dk = dS^T q / sqrt(d_k)"
        ),
        "dq 和 dk 漏了缩放：scores = q k^T / sqrt(d_k)，所以 dq = dS k / sqrt(d_k)，dk = dS^T q / sqrt(d_k)",
    ),
    (
        E(
            "the attention weights are recomputed without the scale 1/sqrt(d_k) (and dq, dk miss it): "
            "scores = q k^T / sqrt(d_k)"
        ),
        "重新计算注意力权重时漏了缩放 1/sqrt(d_k)（dq、dk 也漏了）：scores = q k^T / sqrt(d_k)",
    ),
    (
        E(
            "the scores are divided by d_k: attention divides q k^T by sqrt(d_k), so the weights and dq, dk use "
            "1/sqrt(d_k)"
        ),
        "注意力分数除以了 d_k：注意力是把 q k^T 除以 sqrt(d_k)，所以权重以及 dq、dk 都用 1/sqrt(d_k)",
    ),
    (
        E(
            "the mask is ignored: masked keys must get weight 0 in the forward recomputation, so they get no "
            "gradient (fill the scores where mask is False with -inf before the softmax)"
        ),
        "掩码被忽略了：重新计算前向时，被掩码的键必须得到权重 0，这样它们就没有梯度"
        "（在 softmax 之前把 mask 为 False 处的注意力分数填成 -inf）",
    ),
    (
        E(
            "the mask polarity is inverted: True means 'may attend', so fill the scores where the mask is False"
        ),
        "掩码的含义反了：True 表示“可以关注”，所以应填充掩码为 False 处的注意力分数",
    ),
    (
        E(
            "dS = P * dP keeps only the diagonal term of the softmax Jacobian: "
            "dS = P * (dP - sum(dP * P, dim=-1, keepdim=True))"
        ),
        "dS = P * dP 只保留了 softmax 雅可比矩阵的对角项：dS = P * (dP - sum(dP * P, dim=-1, keepdim=True))",
    ),
    (
        E(
            "your gradients contain NaN: a fully masked row (a query with no allowed key) has softmax of all "
            "-inf = NaN. Its weights are 0 (lesson 01), so its dS is 0: torch.nan_to_num the weights, then the "
            "row gives dq = 0 and adds nothing to dk and dv"
        ),
        "你的梯度里有 NaN：全被遮住的行（没有任何可关注键的查询）的 softmax 输入全是 -inf，结果为 NaN。"
        "它的权重是 0（第 01 课），所以它的 dS 也是 0：对权重用 torch.nan_to_num，这样该行给出 dq = 0，"
        "对 dk 和 dv 也没有任何贡献",
    ),
    (
        E(
            "recompute P = softmax(q k^T / sqrt(d_k), masked); dv = P^T d_out; dP = d_out v^T; "
            "dS = P * (dP - sum(dP * P, -1)); dq = dS k / sqrt(d_k); dk = dS^T q / sqrt(d_k)"
        ),
        "重新计算 P = softmax(q k^T / sqrt(d_k))（带掩码）；dv = P^T d_out；dP = d_out v^T；"
        "dS = P * (dP - sum(dP * P, -1))；dq = dS k / sqrt(d_k)；dk = dS^T q / sqrt(d_k)",
    ),
    (
        r"your forward saves nothing its backward needs \(it kept (?P<n>\d+) tensors\): save x and weight with "
        r"ctx\.save_for_backward\(x, weight\), store eps on ctx \(ctx\.eps = eps\), and read them back with "
        r"ctx\.saved_tensors",
        "你的 forward 没有保存 backward 需要的任何东西（它只留下了 {n} 个张量）：用 "
        "ctx.save_for_backward(x, weight) 保存 x 和 weight，把 eps 存在 ctx 上（ctx.eps = eps），"
        "再用 ctx.saved_tensors 读回来",
    ),
    (
        E("backward must return one gradient per input of forward: (dx, dweight, dbias, None), None for eps"),
        "backward 必须为 forward 的每个输入各返回一个梯度：(dx, dweight, dbias, None)，eps 对应 None",
    ),
    (
        E("a gradient has the wrong shape: dweight and dbias have weight's shape (summed over leading dims)"),
        "有一个梯度的形状不对：dweight 和 dbias 的形状与 weight 相同（在前导维度上求和）",
    ),
    (
        E("check what forward saves and what backward reads back"),
        "检查 forward 保存了什么、backward 又读回了什么",
    ),
    (
        E("forward should return layer_norm(x, weight, bias, eps), with the eps passed in"),
        "forward 应返回 layer_norm(x, weight, bias, eps)，其中的 eps 用传入的值",
    ),
    (
        E(
            "do not turn autograd back on inside forward (it runs with autograd off); save only x and weight, and "
            "let backward call layer_norm_backward instead of torch.autograd.grad"
        ),
        "不要在 forward 里重新打开 autograd（forward 运行时 autograd 是关闭的）；只保存 x 和 weight，"
        "让 backward 调用 layer_norm_backward，而不是 torch.autograd.grad",
    ),
    (
        E(
            "it saves its input plus intermediates it does not need: layer_norm_backward(dy, x, weight, eps) needs "
            "only x and weight (and eps, stored on ctx)"
        ),
        "它除了输入，还保存了用不到的中间结果：layer_norm_backward(dy, x, weight, eps) 只需要 x 和 weight"
        "（以及存放在 ctx 上的 eps）",
    ),
    (
        E(
            "backward must take what it needs from ctx (ctx.save_for_backward / ctx.saved_tensors), not from a "
            "global or a closure"
        ),
        "backward 所需的东西必须从 ctx 取（ctx.save_for_backward / ctx.saved_tensors），而不是从全局变量或闭包里取",
    ),
    # fallback hints and messages of the older checks (not reached by the catalogued mistakes)
    (
        E("weights are right but output is not: it should be weights @ v"),
        "权重对了，但输出不对：输出应为 weights @ v",
    ),
    (E("split_heads modified its input in place"), "split_heads 原地修改了它的输入"),
    (
        E(
            "compare step by step: project with w_q/w_k/w_v, split_heads, attention per head, merge_heads, then w_o"
        ),
        "逐步对照：用 w_q/w_k/w_v 投影，split_heads，每个头分别做注意力，merge_heads，最后是 w_o",
    ),
    (
        E(
            "True strictly above the diagonal is the inverse of the causal mask: token i may attend to 0..i "
            "(torch.tril)"
        ),
        "严格在对角线上方为 True，正好与因果掩码相反：token i 可以关注 0..i（torch.tril）",
    ),
    (
        E("the diagonal is missing: a token may attend to itself (tril with diagonal=0)"),
        "缺少对角线：token 可以关注它自己（tril 用 diagonal=0）",
    ),
    (
        E("the polarity is inverted: True marks real tokens (position < length)"),
        "含义反了：True 标记的是真实 token（position < length）",
    ),
    (
        E("off by one: position p is real when p < length (not <=)"),
        "差了一位：位置 p 在 p < length 时才是真实的（不是 <=）",
    ),
    (
        E(
            "head h should hold features h*d_head:(h+1)*d_head; yours interleaves them (view as (B, L, H, d_head), "
            "not (B, L, d_head, H))"
        ),
        "第 h 个头应包含特征 h*d_head:(h+1)*d_head；你的实现把它们交错了（应 view 成 (B, L, H, d_head)，"
        "而不是 (B, L, d_head, H)）",
    ),
    (
        E(
            "you reshaped (B, H, L, d_head) straight to (B, L, d_model): transpose(1, 2) first, so merge_heads "
            "undoes split_heads"
        ),
        "你把 (B, H, L, d_head) 直接 reshape 成了 (B, L, d_model)：要先 transpose(1, 2)，"
        "merge_heads 才能还原 split_heads",
    ),
    (
        E("your std is sqrt(1 / fan_out): Xavier averages the two fans, sqrt(2 / (fan_in + fan_out))"),
        "你的标准差是 sqrt(1 / fan_out)：Xavier 取两个 fan 的平均，sqrt(2 / (fan_in + fan_out))",
    ),
    (
        E("this is Kaiming's sqrt(2 / fan_in), not Xavier's sqrt(2 / (fan_in + fan_out))"),
        "这是 Kaiming 的 sqrt(2 / fan_in)，而不是 Xavier 的 sqrt(2 / (fan_in + fan_out))",
    ),
    (
        E("this is Xavier's sqrt(2 / (fan_in + fan_out)), not Kaiming's sqrt(2 / fan_in)"),
        "这是 Xavier 的 sqrt(2 / (fan_in + fan_out))，而不是 Kaiming 的 sqrt(2 / fan_in)",
    ),
    (
        E(
            "this is the bound of Xavier's *uniform* init, sqrt(6 / (fan_in + fan_out)); the normal's std is "
            "sqrt(2 / (fan_in + fan_out))"
        ),
        "这是 Xavier *均匀*初始化的边界 sqrt(6 / (fan_in + fan_out))；正态分布的标准差是 sqrt(2 / (fan_in + fan_out))",
    ),
    (
        E(
            "this is the bound of Kaiming's *uniform* init, sqrt(6 / fan_in); the normal's std is sqrt(2 / fan_in)"
        ),
        "这是 Kaiming *均匀*初始化的边界 sqrt(6 / fan_in)；正态分布的标准差是 sqrt(2 / fan_in)",
    ),
    (
        E(
            "init_linear_ should return the same layer it filled (return layer), but the returned layer's weight "
            "differs from layer.weight"
        ),
        "init_linear_ 应返回它填充的那一层（return layer），但返回的层的 weight 与 layer.weight 不同",
    ),
    (E("check the formula in the lesson"), "对照课程里的公式检查一下"),
    (
        E("draw from N(0, init_std(...)**2) with the layer`s own fans"),
        "用这一层自己的 fan，从 N(0, init_std(...)**2) 中采样",
    ),
    (
        E(
            "compare step by step: mean and population variance over the last dim, (x - mean) / sqrt(var + eps), "
            "then * weight + bias"
        ),
        "逐步对照：在最后一维上求均值和总体方差，(x - mean) / sqrt(var + eps)，再 * weight + bias",
    ),
    (
        E("y = x / sqrt(mean(x^2 over the last dim) + eps) * weight"),
        "y = x / sqrt(mean(x^2，在最后一维上) + eps) * weight",
    ),
    (
        E("in eval mode (training=False) the running buffers must not change"),
        "评估模式（training=False）下 running 缓冲区不能改变",
    ),
    (
        E(
            "you averaged over the features (dim 1) of each sample: that is LayerNorm. BatchNorm averages each "
            "feature (column) over the batch, dim 0"
        ),
        "你对每个样本在特征维（dim 1）上求了平均：那是 LayerNorm。BatchNorm 是对每个特征（每一列）在批维 dim 0 上求平均",
    ),
    (
        E(
            "the same numbers as nn.LayerNorm with the same weight and bias are expected: normalise over the last "
            "dim with self.eps, then * self.weight + self.bias"
        ),
        "期望的结果与同样 weight 和 bias 的 nn.LayerNorm 完全相同：用 self.eps 在最后一维上归一化，"
        "再 * self.weight + self.bias",
    ),
    (
        E(
            "you used the sum of squares; RMSNorm uses their mean over the last dim: x.pow(2).mean(-1, keepdim=True)"
        ),
        "你用的是平方和；RMSNorm 用的是最后一维上的平方均值：x.pow(2).mean(-1, keepdim=True)",
    ),
    (
        E("weight is ignored: multiply the normalised x by weight"),
        "weight 被忽略了：要把归一化后的 x 乘以 weight",
    ),
    (
        E(
            "you divided by the std (mean subtracted inside the variance): RMSNorm divides by the root mean square "
            "sqrt(mean(x^2) + eps), with no mean anywhere"
        ),
        "你除以的是标准差（方差里减去了均值）：RMSNorm 除以的是均方根 sqrt(mean(x^2) + eps)，任何地方都不减均值",
    ),
    (
        E("the same numbers as nn.RMSNorm(d_model, eps=eps) with the same weight are expected"),
        "期望的结果与同样 weight 的 nn.RMSNorm(d_model, eps=eps) 完全相同",
    ),
    (
        E("the default eps should be 1e-6: rms_norm(x, weight, eps=1e-6)"),
        "eps 的默认值应为 1e-6：rms_norm(x, weight, eps=1e-6)",
    ),
    (
        E("the default eps should be 1e-5 (as nn.LayerNorm): __init__(self, d_model, eps=1e-5)"),
        "eps 的默认值应为 1e-5（与 nn.LayerNorm 一样）：__init__(self, d_model, eps=1e-5)",
    ),
    (
        E("the first call was right: check how the running buffers are updated and used"),
        "第一次调用是对的：检查 running 缓冲区是怎样更新和使用的",
    ),
    (
        E("batch_norm modified its input x in place: only the running buffers may change"),
        "batch_norm 原地修改了它的输入 x：只有 running 缓冲区可以改变",
    ),
    (
        E(
            "training: (x - batch mean) / sqrt(biased batch var + eps) * weight + bias; eval: the same with "
            "running_mean / running_var"
        ),
        "训练时：(x - 批次均值) / sqrt(有偏批次方差 + eps) * weight + bias；评估时：同样的式子，换成 "
        "running_mean / running_var",
    ),
    (
        E(
            "in training, running = (1 - momentum) * running + momentum * batch statistic (unbiased variance for "
            "running_var), updated in place; in eval, unchanged"
        ),
        "训练时 running = (1 - momentum) * running + momentum * 批次统计量（running_var 用无偏方差），原地更新；"
        "评估时保持不变",
    ),
    (
        E(
            "your ResidualStack's forward is not right (see its own self-check): block_grad_norms runs your stack, "
            "so fix ResidualStack first"
        ),
        "你的 ResidualStack 的 forward 不对（见它自己的自检）：block_grad_norms 会运行你的堆叠，所以请先修好 "
        "ResidualStack",
    ),
    (
        E("ResidualStack modified its input x in place: use out-of-place ops (h = h + ...)"),
        "ResidualStack 原地修改了它的输入 x：请用非原地运算（h = h + ...）",
    ),
    (
        E(
            "one forward and backward of stack(x).pow(2).mean(), then [stack.linears[i].weight.grad.norm() for i in "
            "range(depth)], stacked"
        ),
        "对 stack(x).pow(2).mean() 做一次前向和反向传播，再把 [stack.linears[i].weight.grad.norm() for i in "
        "range(depth)] 堆叠起来",
    ),
    (
        E("every block uses norms[0] and linears[0]: block i must use norms[i] and linears[i]"),
        "每个块都用了 norms[0] 和 linears[0]：第 i 个块必须用 norms[i] 和 linears[i]",
    ),
    (
        E("the loss is stack(x).mean(): square first, stack(x).pow(2).mean()"),
        "损失用的是 stack(x).mean()：要先平方，stack(x).pow(2).mean()",
    ),
    (
        E("these are the norms of the weights themselves, not of their gradients (.weight.grad)"),
        "这些是权重本身的范数，而不是它们梯度（.weight.grad）的范数",
    ),
    (
        E("the gradients were accumulated twice (two backward passes?): one forward and one backward"),
        "梯度被累加了两次（做了两次反向传播？）：只做一次前向和一次反向传播",
    ),
    (
        E("there is a ReLU after w2 too: the output of w2 is not activated, w2(relu(w1(x)))"),
        "w2 之后也有一个 ReLU：w2 的输出不经过激活，w2(relu(w1(x)))",
    ),
    (
        E("with no dropout argument, dropout should default to 0.0 (no dropout)"),
        "不传 dropout 参数时，dropout 的默认值应为 0.0（不做 dropout）",
    ),
    (
        E("expected w2(dropout(relu(w1(x)))) with the module's own w1 and w2"),
        "应为 w2(dropout(relu(w1(x))))，用模块自己的 w1 和 w2",
    ),
    (
        E(
            "first make EncoderBlock pass its check; then run the blocks in order (layers[0] first), each with "
            "pad_mask, and finish with self.norm when norm_first"
        ),
        "先让 EncoderBlock 通过它的检查；然后按顺序运行各个块（从 layers[0] 开始），每个块都传入 pad_mask，"
        "norm_first 时最后再接 self.norm",
    ),
    (
        E("check the formula: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same)"),
        "检查公式：PE[p, 2i] = sin(p / 10000^(2i/d))，PE[p, 2i+1] = cos(同上)",
    ),
    (
        E("the residual connection around the attention sublayer is missing: add its input x back"),
        "注意力子层外的残差连接缺失了：把它的输入 x 加回去",
    ),
    (
        E("EncoderBlock modified its input x in place: use out-of-place ops (x = x + ..., not x += ...)"),
        "EncoderBlock 原地修改了它的输入 x：请用非原地运算（x = x + ...，而不是 x += ...）",
    ),
    (
        E(
            "the embeddings are scaled by sqrt(d_model): in this lesson the input is embed(tokens) + PE, unscaled"
        ),
        "嵌入乘以了 sqrt(d_model)：这一课的输入是 embed(tokens) + PE，不做缩放",
    ),
    (
        E(
            "first make Encoder and positional_encoding pass their checks; then logits = "
            "head(encoder(embed(tokens) + PE[:L], pad_mask))"
        ),
        "先让 Encoder 和 positional_encoding 通过它们的检查；然后 logits = head(encoder(embed(tokens) + PE[:L], pad_mask))",
    ),
    (
        E(
            "the frequency base is applied the wrong way round: w_i = 1 / 10000^(2i/d_model), so divide the "
            "position by 10000^(2i/d_model)"
        ),
        "频率用反了：w_i = 1 / 10000^(2i/d_model)，所以应把位置除以 10000^(2i/d_model)",
    ),
    (
        E("self.norm is applied after every block: apply the final LayerNorm once, after the last one"),
        "每个块之后都用了 self.norm：最后的 LayerNorm 只在最后一个块之后用一次",
    ),
    (
        r"block i is (?P<f>.+?), for i = 0\.\.depth-1, then head\(h\)",
        "第 i 个块是 {f}，i = 0..depth-1，最后是 head(h)",
    ),
    # hints: lesson 09_modern_block
    (
        E(
            "your rotation uses the half-split layout, pairs (i, i + d/2) (rotate_half): this lesson rotates "
            "the interleaved pairs (2i, 2i+1), x[..., 0::2] with x[..., 1::2]"
        ),
        "你的旋转用的是对半拆分排列，即 (i, i + d/2) 成对（rotate_half）：这一课旋转的是交错排列的 (2i, 2i+1) 对，"
        "x[..., 0::2] 与 x[..., 1::2]",
    ),
    (
        E(
            "the exponent is -i/d instead of -2i/d: the frequency of pair i is theta ** (-2i / d_head), "
            "i = 0 .. d_head/2 - 1 (torch.arange(0, d, 2) / d)"
        ),
        "指数是 -i/d 而不是 -2i/d：第 i 对的频率是 theta ** (-2i / d_head)，i = 0 .. d_head/2 - 1"
        "（torch.arange(0, d, 2) / d）",
    ),
    (
        E(
            "the exponent has the wrong sign: the frequencies theta ** (-2i / d_head) fall from 1 to about "
            "1/theta; yours grow"
        ),
        "指数的符号反了：频率 theta ** (-2i / d_head) 应从 1 降到约 1/theta；你的频率却在增大",
    ),
    (
        E("your rotation turns the wrong way: (a, b) -> (a cos - b sin, a sin + b cos)"),
        "你的旋转方向反了：(a, b) -> (a cos - b sin, a sin + b cos)",
    ),
    (
        E("your apply_rope ignores its positions argument (it uses 0 .. L-1): rotate by the positions given"),
        "你的 apply_rope 忽略了参数 positions（用的是 0 .. L-1）：请按传入的位置旋转",
    ),
    (
        E("your apply_rope ignores theta (it uses 10000): the frequencies are theta ** (-2i / d_head)"),
        "你的 apply_rope 忽略了 theta（用的是 10000）：频率是 theta ** (-2i / d_head)",
    ),
    (
        E(
            "rotate each pair (x[..., 2i], x[..., 2i+1]) at position p by the angle p * theta ** (-2i / d_head): "
            "(a, b) -> (a cos - b sin, a sin + b cos)"
        ),
        "把位置 p 上的每一对 (x[..., 2i], x[..., 2i+1]) 旋转角度 p * theta ** (-2i / d_head)："
        "(a, b) -> (a cos - b sin, a sin + b cos)",
    ),
    (
        E(
            "w1 and w3 are swapped: the SiLU goes on w1(x), and w3(x) is the linear branch it multiplies: "
            "w2(silu(w1(x)) * w3(x))"
        ),
        "w1 和 w3 弄反了：SiLU 作用在 w1(x) 上，w3(x) 是被它相乘的线性分支：w2(silu(w1(x)) * w3(x))",
    ),
    (
        E("your gate is sigmoid(w1(x)) (that is GLU): SwiGLU's is silu(z) = z * sigmoid(z) (F.silu)"),
        "你的门控是 sigmoid(w1(x))（那是 GLU）：SwiGLU 的门控是 silu(z) = z * sigmoid(z)（F.silu）",
    ),
    (
        E("your gate is relu(w1(x)) (that is ReGLU): SwiGLU's is silu(w1(x)) (F.silu)"),
        "你的门控是 relu(w1(x))（那是 ReGLU）：SwiGLU 的门控是 silu(w1(x))（F.silu）",
    ),
    (
        E("your gate is gelu(w1(x)) (that is GEGLU): SwiGLU's is silu(w1(x)) (F.silu)"),
        "你的门控是 gelu(w1(x))（那是 GEGLU）：SwiGLU 的门控是 silu(w1(x))（F.silu）",
    ),
    (
        E("the gate's other branch w3(x) is missing: w2(silu(w1(x)) * w3(x))"),
        "门控的另一条分支 w3(x) 缺失了：w2(silu(w1(x)) * w3(x))",
    ),
    (
        E("the SiLU is applied to the product: silu(w1(x)) * w3(x), the SiLU on w1(x) only"),
        "SiLU 作用在了乘积上：应为 silu(w1(x)) * w3(x)，SiLU 只作用在 w1(x) 上",
    ),
    (
        E("the SiLU is applied to both branches: only w1(x) goes through it, w3(x) stays linear"),
        "两条分支都经过了 SiLU：只有 w1(x) 经过它，w3(x) 保持线性",
    ),
    (
        E("forward(x) = w2(silu(w1(x)) * w3(x)), with the module's own w1, w2, w3"),
        "forward(x) = w2(silu(w1(x)) * w3(x))，用模块自己的 w1、w2、w3",
    ),
    (
        E("repeated along the time axis (dim 2): repeat the heads, dim 1"),
        "沿时间轴（dim 2）重复了：应重复头，即 dim 1",
    ),
    (
        E("repeated along the batch axis (dim 0): repeat the heads, dim 1"),
        "沿批维度（dim 0）重复了：应重复头，即 dim 1",
    ),
    (
        E("the repeats are a separate axis: reshape (B, n_kv, n_rep, L, d) to (B, n_kv * n_rep, L, d)"),
        "重复出来的副本单独占了一个轴：请把 (B, n_kv, n_rep, L, d) reshape 成 (B, n_kv * n_rep, L, d)",
    ),
    (
        E("each key/value head becomes n_rep heads along dim 1"),
        "每个键/值头沿 dim 1 变成 n_rep 个头",
    ),
    (
        E(
            "your heads are tiled (x.repeat(1, n_rep, 1, 1)): query head h then reads key/value head h % n_kv_heads. "
            "Each key/value head must serve n_rep neighbouring query heads, h // n_rep: x.repeat_interleave(n_rep, "
            "dim=1), or x[:, :, None].expand(B, n_kv, n_rep, L, d).reshape(B, n_kv * n_rep, L, d)"
        ),
        "你的头是整体平铺的（x.repeat(1, n_rep, 1, 1)）：这样查询头 h 读的是键/值头 h % n_kv_heads。"
        "每个键/值头必须服务 n_rep 个相邻的查询头，即 h // n_rep：x.repeat_interleave(n_rep, dim=1)，"
        "或 x[:, :, None].expand(B, n_kv, n_rep, L, d).reshape(B, n_kv * n_rep, L, d)",
    ),
    (
        E("query head h uses key/value head h // n_rep: x.repeat_interleave(n_rep, dim=1)"),
        "查询头 h 使用键/值头 h // n_rep：x.repeat_interleave(n_rep, dim=1)",
    ),
    (
        E(
            "with a cache, your positions restart at 0: the new tokens sit at positions T_past .. "
            "T_past + T - 1 (T_past = kv_cache[0].shape[2]); rotate q and k by those"
        ),
        "使用缓存时，你的位置从 0 重新开始了：新 token 位于 T_past .. T_past + T - 1"
        "（T_past = kv_cache[0].shape[2]）；请按这些位置旋转 q 和 k",
    ),
    (
        E(
            "with a cache, the positions of your causal mask restart at 0: the new query t is at absolute "
            "position T_past + t and may attend to keys 0 .. T_past + t"
        ),
        "使用缓存时，你的因果掩码的位置从 0 重新开始了：新的查询 t 位于绝对位置 T_past + t，"
        "可以关注键 0 .. T_past + t",
    ),
    (
        E(
            "with a cache, both your RoPE positions and your causal mask restart at 0: the new tokens sit at "
            "T_past .. T_past + T - 1"
        ),
        "使用缓存时，你的 RoPE 位置和因果掩码都从 0 重新开始了：新 token 位于 T_past .. T_past + T - 1",
    ),
    (
        E("RoPE is missing: rotate q and k with apply_rope before the scores"),
        "缺少 RoPE：在计算注意力分数之前，用 apply_rope 旋转 q 和 k",
    ),
    (
        E("the values are rotated too: RoPE rotates q and k only, v stays as w_v(x)"),
        "值也被旋转了：RoPE 只旋转 q 和 k，v 保持为 w_v(x)",
    ),
    (E("only q is rotated: rotate k too, by the same positions"), "只旋转了 q：k 也要按相同的位置旋转"),
    (E("only k is rotated: rotate q too, by the same positions"), "只旋转了 k：q 也要按相同的位置旋转"),
    (
        E(
            "RoPE is applied before the head split, over all d_model (or n_kv * d_head) features: split the "
            "heads first, (B, T, d) -> (B, n_heads, T, d_head), then rotate each head's d_head features"
        ),
        "RoPE 用在了拆分头之前，作用于全部 d_model（或 n_kv * d_head）个特征：应先拆分头，"
        "(B, T, d) -> (B, n_heads, T, d_head)，再旋转每个头的 d_head 个特征",
    ),
    (
        E(
            "your key/value heads are tiled (repeat): query head h must use key/value head h // n_rep "
            "(repeat_kv, repeat_interleave on dim 1), not h % n_kv_heads"
        ),
        "你的键/值头是整体平铺的（repeat）：查询头 h 必须使用键/值头 h // n_rep"
        "（repeat_kv，在 dim 1 上 repeat_interleave），而不是 h % n_kv_heads",
    ),
    (
        E(
            "it holds n_heads heads: cache k and v before repeat_kv, with their n_kv_heads heads (that is the "
            "memory GQA saves)"
        ),
        "它存了 n_heads 个头：应在 repeat_kv 之前缓存 k 和 v，保持 n_kv_heads 个头（GQA 省下的正是这部分内存）",
    ),
    (
        E("keep k and v as (B, n_kv_heads, T, d_head) and concatenate along the time axis, dim 2"),
        "把 k 和 v 保持为 (B, n_kv_heads, T, d_head)，并沿时间轴（dim 2）拼接",
    ),
    (
        E("the cache holds k after RoPE and v, each (B, n_kv_heads, T, d_head), earlier positions first"),
        "缓存里存的是经过 RoPE 的 k 和 v，各为 (B, n_kv_heads, T, d_head)，较早的位置在前",
    ),
    (
        E(
            "your cache holds the keys before RoPE: rotate k first, then cache it (as Llama does), so a cached "
            "key is never rotated again"
        ),
        "你的缓存存的是 RoPE 之前的键：应先旋转 k 再缓存（Llama 就是这样做的），这样缓存里的键永远不会被再旋转一次",
    ),
    (
        E(
            "q = w_q(x), k = w_k(x), v = w_v(x) split into heads (n_heads for q, n_kv_heads for k and v); rotate q "
            "and k with apply_rope at positions T_past .. T_past + T - 1; append the cache; repeat_kv; causal "
            "softmax of q k^T / sqrt(d_head); merge the heads; w_o"
        ),
        "q = w_q(x)、k = w_k(x)、v = w_v(x) 拆分成头（q 有 n_heads 个，k 和 v 有 n_kv_heads 个）；"
        "用 apply_rope 在位置 T_past .. T_past + T - 1 上旋转 q 和 k；接到缓存后面；repeat_kv；"
        "对 q k^T / sqrt(d_head) 做带因果掩码的 softmax；合并头；w_o",
    ),
    (
        r"a query whose keys are all masked gives NaN: (?P<t_g>.+)",
        "一个所有键都被遮住的查询会得到 NaN：{t_g}",
    ),
    (
        E(
            "your block is Post-norm: the Llama block normalizes inside each branch, h = x + attn(attn_norm(x)); "
            "y = h + ffn(ffn_norm(h))"
        ),
        "你的块是后置归一化（Post-norm）：Llama 块在每个分支内部归一化，h = x + attn(attn_norm(x))；"
        "y = h + ffn(ffn_norm(h))",
    ),
    (
        E(
            "your block is parallel (attention and the FFN both read x): the FFN reads h = x + attn(attn_norm(x)), "
            "y = h + ffn(ffn_norm(h))"
        ),
        "你的块是并行式的（注意力和 FFN 都读 x）：FFN 读的是 h = x + attn(attn_norm(x))，y = h + ffn(ffn_norm(h))",
    ),
    (
        E(
            "the FFN's input is normalized with attn_norm: each sublayer has its own RMSNorm, ffn_norm for the FFN"
        ),
        "FFN 的输入用 attn_norm 做了归一化：每个子层有自己的 RMSNorm，FFN 用 ffn_norm",
    ),
    (
        E(
            "your norm subtracts the mean (that is LayerNorm): RMSNorm divides by the root mean square only, "
            "nn.RMSNorm(d_model, eps=eps)"
        ),
        "你的归一化减去了均值（那是 LayerNorm）：RMSNorm 只除以均方根，nn.RMSNorm(d_model, eps=eps)",
    ),
    (
        E("the residual connection around the attention is missing: h = x + attn(attn_norm(x))"),
        "注意力外的残差连接缺失了：h = x + attn(attn_norm(x))",
    ),
    (
        E("the residual connection around the FFN is missing: y = h + ffn(ffn_norm(h))"),
        "FFN 外的残差连接缺失了：y = h + ffn(ffn_norm(h))",
    ),
    (
        E(
            "your RMSNorms ignore the eps argument: pass it on, nn.RMSNorm(d_model, eps=eps) (nn.RMSNorm's own "
            "default is the dtype's machine epsilon)"
        ),
        "你的 RMSNorm 忽略了参数 eps：请把它传下去，nn.RMSNorm(d_model, eps=eps)（nn.RMSNorm 自己的默认值是该 "
        "dtype 的机器精度）",
    ),
    (
        E(
            "first make GroupedQueryAttention and SwiGLU pass their checks; then h = x + attn(attn_norm(x)) (with "
            "the positions and the cache), y = h + ffn(ffn_norm(h)), attn_norm and ffn_norm nn.RMSNorm(d_model, "
            "eps=eps)"
        ),
        "先让 GroupedQueryAttention 和 SwiGLU 通过它们的检查；然后 h = x + attn(attn_norm(x))（传入位置和缓存），"
        "y = h + ffn(ffn_norm(h))，attn_norm 和 ffn_norm 都是 nn.RMSNorm(d_model, eps=eps)",
    ),
    (
        E(
            "your forward ignores its positions argument: rotate q and k by the positions given, and use "
            "T_past .. T_past + T - 1 only when positions is None"
        ),
        "你的 forward 忽略了参数 positions：请按传入的位置旋转 q 和 k，只有 positions 为 None 时才用 "
        "T_past .. T_past + T - 1",
    ),
    (
        E(
            "your block does not pass its positions on to the attention: self.attn(attn_norm(x), positions, "
            "kv_cache)"
        ),
        "你的块没有把 positions 传给注意力层：self.attn(attn_norm(x), positions, kv_cache)",
    ),
]
