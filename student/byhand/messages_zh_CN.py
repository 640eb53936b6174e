"""简体中文 (zh_CN) catalogue of the check messages; see byhand/i18n.py.

LINES: whole-line frames (regex over a stripped line -> format template). A group whose name starts
with `t_` is itself translated through PIECES; other groups are copied (numbers, shapes, code).
PIECES: the sentences inserted into frames (hints, names of what is checked). Terms follow
docs/glossary-zh.md. Exact sentences are written with E(...) (escaped English text).

The first pattern that matches a line decides it (no backtracking into another split), so the
specific frames come before the general ones ("hint: two mistakes at once: ..." before "hint: ...").
A case label is data (shapes, dtypes, code) with a few words between: LABELS translates those words
and LABEL_SEPARATORS the punctuation between its items; the rest is copied, and quoted where it sits
inside a translated sentence ("also, on <label>: <hint>").
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

# The words of case labels (byhand's checks build them: "LayerNorm(4), fresh parameters, x (2, 3, 4)
# torch.float32 (mean 1.0, std 2.0)"), in order: the longer phrases first.
LABELS = [
    # lesson 12_training
    (
        r"^AdamW\(params\), its defaults, gradients of size 1e-8",
        "AdamW(params)，使用默认超参数，梯度大小为 1e-8",
    ),
    (r"(?P<n>\d+) parameters (?=\()", r"\g<n> 个参数 "),
    (
        r"groups (?P<g>\[\[.*?\]\]) with weight_decay (?P<w>\[[^\]]*\])",
        r"参数组 \g<g>，weight_decay 分别为 \g<w>",
    ),
    (r"parameter (?P<i>\d+) without a gradient", r"参数 \g<i> 没有梯度"),
    (r"lr changed every step by a schedule", "lr 每一步按调度改变"),
    (
        r"state_dict\(\) loaded into a new AdamW at step (?P<s>\d+)",
        r"第 \g<s> 步把 state_dict() 载入一个新的 AdamW",
    ),
    (r"(?P<n>\d+) steps on a noisy quadratic", r"在带噪声的二次函数上训练 \g<n> 步"),
    (r"\) for t = (?P<a>\d+)\.\.(?P<b>\d+)$", r")，t = \g<a>..\g<b>"),
    (
        r", (?P<n>\d+) tokens, (?P<s>\d+) valid starts; generator seeds ",
        r", \g<n> 个 token，\g<s> 个合法起点；生成器种子 ",
    ),
    (r" \((?P<w>\d+) windows\)$", r"（\g<w> 个窗口）"),
    (r" and torch\.optim\.AdamW, (?P<k>\d+) steps, ", r" 和 torch.optim.AdamW，训练 \g<k> 步，"),
    (
        r", (?P<n>\d+) more steps; a fresh model and optimizer, load_checkpoint, (?P<m>\d+) steps$",
        r"，再训练 \g<n> 步；新建模型和优化器，load_checkpoint，训练 \g<m> 步",
    ),
    (r" ?\(mean (?P<a>[^,()]+), std (?P<b>[^()]+)\)", r"（均值 \g<a>，标准差 \g<b>）"),
    (r" ?\(std (?P<a>[^()]+)\)", r"（标准差 \g<a>）"),
    (r" ?\(mean (?P<a>[^()]+)\)", r"（均值 \g<a>）"),
    (r"random running buffers, weight and bias", "随机的滑动统计量缓冲区、weight 和 bias"),
    (r"random norm weight and bias", "随机的归一化层 weight 和 bias"),
    (r"random weight and bias", "随机的 weight 和 bias"),
    (r" with random weights", "，随机权重"),
    (r"random weight", "随机的 weight"),
    (r" with a random state dict", "，随机的 state_dict"),
    (r"also built without norm_first \(the default\)", "另外也不传 norm_first 构建了一次（默认值）"),
    (r"temperature left out \(default (?P<t>[\d.]+)\)", r"不传 temperature（默认值 \g<t>）"),
    (r" \(a non-contiguous transposed view\)", "（不连续的转置视图）"),
    (
        r"temperature, top_k and use_cache left out \(defaults 1\.0, None, True\)",
        "不传 temperature、top_k 和 use_cache（默认值 1.0、None、True）",
    ),
    (r"fresh parameters", "刚初始化的参数"),
    (r"fresh weight", "刚初始化的 weight"),
    (r"^a fresh ", "刚初始化的 "),
    (r"training mode", "训练模式"),
    (
        r" in eval mode \(module\.eval\(\)\), called twice on ",
        "，评估模式（module.eval()），对同一输入调用两次：",
    ),
    (r" \(random, ", "（随机，"),
    (r"eval mode", "评估模式"),
    (r", o and lse of the forward, ", "，前向传播的 o 和 lse，"),
    (r"\) with q ", ")，q "),
    (r", then backward with a random do, ", "，再用随机的 do 做 backward，"),
    (
        r"a zero sublayer \(nn\.Linear with zero weight and bias\)",
        "全零子层（weight 和 bias 全为零的 nn.Linear）",
    ),
    (r"sublayer = an nn\.Linear", "sublayer = 一个 nn.Linear"),
    (
        r" \(the next (?P<n>\d+) positions\) with kv_cache = \(k, v\) of the first T_past=(?P<p>\d+), each ",
        r"（接下来的 \g<n> 个位置），kv_cache 为前 T_past=\g<p> 个位置的 (k, v)，各为 ",
    ),
    (
        r" \(positions (?P<a>\d+)\.\.(?P<b>\d+)\) with kv_cache = \(k, v\) of the first T_past=(?P<p>\d+), each ",
        r"（位置 \g<a>..\g<b>），kv_cache 为前 T_past=\g<p> 个位置的 (k, v)，各为 ",
    ),
    (r": the time axis is dim (?P<d>\d+)", r"：时间轴是 dim \g<d>"),
    (
        r" \(positions (?P<a>\d+)\.\.(?P<b>\d+)\) with kv_cache = one \(k, v\) per block for the first "
        r"T_past=(?P<p>\d+) positions",
        r"（位置 \g<a>..\g<b>），kv_cache 为每个块一对 (k, v)，覆盖前 T_past=\g<p> 个位置",
    ),
    (r", no cache", "，不用缓存"),
    (
        r" loaded with different matrices for (?P<a>\S+) and (?P<b>\S+)",
        r"，给 \g<a> 和 \g<b> 加载了不同的矩阵",
    ),
    (r", then backward with a random dy", "，再用随机的 dy 做反向传播"),
    (r"\) with x ", ")，其中 x "),
    (r": (?P<n>\d+) copies of the row (?P<r>\[[^\]]*\])", r"：把行 \g<r> 复制 \g<n> 份"),
    (r"generator seeded (?P<s>\d+)", r"生成器种子 \g<s>"),
    (r"generator seeded", "生成器已设种子"),
    (r", seed (?P<s>\d+)$", r"，随机种子 \g<s>"),
    (r" with ids in ", "，id 取值于 "),
    (r": its layers$", "：它的各层"),
    (r"; calls: ", "；依次调用："),
    (r"eps=default", "eps=默认值"),
    (r"large scores \(\|s\| up to about (?P<n>\d+)\)", r"很大的分数（|s| 最大约 \g<n>）"),
    (r"is_causal not given \(default\)", "不传 is_causal（用默认值）"),
    (r"default blocks \(64, 64\)", "默认块大小 (64, 64)"),
    (r" \(batched, ", "（每个序列一行，"),
    (r" \(long, ", "（很大的位置，"),
    (r" \(random\)", "（随机掩码）"),
    (r" \(broadcast\)", "（广播）"),
    (r" \(causal\)", "（因果）"),
    (r" \(none\)", "（无）"),
    (r" \(dead_row\)", "（含全被掩码的行）"),
    # lesson 11_tokenizer
    (r"the ten-character example ", "十个字符的例子 "),
    (
        r" \(overlapping pairs; every pair merged before vocab_size\)",
        "（重叠的字符对；在达到 vocab_size 之前所有字符对都已合并）",
    ),
    (r"random words of (?P<l>[a-d, ]+) \(many ties\)", "由 \\g<l> 组成的随机单词（很多计数相同的字符对）"),
    (
        r"random words of (?P<l>[a-d, ]+) with (?P<s>\S+) and (?P<t>\S+) between them",
        "由 \\g<l> 组成的随机单词，中间夹着 `\\g<s>` 和 `\\g<t>`",
    ),
    (r"(?P<n>\d+) characters of English", "\\g<n> 个字符的英文"),
    (r"(?P<n>\d+) characters of Chinese", "\\g<n> 个字符的中文"),
    (
        r" with (?P<a><\|endoftext\|>(?:<\|endoftext\|>)?) and (?P<b><\|endoftext\|><\|endoftext\|>)",
        "，含 \\g<a> 和 \\g<b>",
    ),
    (r" with (?P<a><\|endoftext\|>)$", "，含 \\g<a>"),
    (
        r"Tokenizer with a vocabulary trained on English and Chinese with special tokens ",
        "`Tokenizer`，用在英文和中文上训练的词表，特殊 token 为 ",
    ),
    (r"Tokenizer with GPT-2's vocabulary and merges", "`Tokenizer`，用 GPT-2 的词表和合并规则"),
    (r"encode_iterable of a text read line by line", "encode_iterable，逐行读入的文本"),
    (
        r"encode_iterable of the same text cut at random places \(inside words and special tokens\)",
        "encode_iterable，同一段文本在随机位置切开（切在单词和特殊 token 内部）",
    ),
    (r", (?P<n>\d+) pieces$", "，共 \\g<n> 段"),
    (
        r" on (?P<n>\d+) 个字符的英文, timed against the naive trainer",
        " 在 \\g<n> 个字符的英文上，与朴素训练器比较用时",
    ),
    (r"<\|endoftext\|> and <\|endoftext\|><\|endoftext\|>$", "<|endoftext|> 和 <|endoftext|><|endoftext|>"),
]
LABEL_SEPARATORS = {", ": "，", "; ": "；"}

LINES = [
    (
        r"(?P<q>\S+): not done yet\. It still raises NotImplementedError: "
        r"replace the stub in its answer cell with your code\.",
        "{q}：尚未完成。它仍然抛出 NotImplementedError：请把答案单元格里的占位代码换成你的实现。",
    ),
    (r"(?P<q>\S+): all (?P<n>\d+) visible cases pass\.", "{q}：可见用例全部通过（共 {n} 个）。"),
    (
        r"(?P<q>\S+): all (?P<n>\d+) cases, hidden ones included, pass\.",
        "{q}：全部用例都已通过（共 {n} 个，含隐藏用例）。",
    ),
    (r"(?P<q>\S+): no value came back for (?P<n>\S+)", "{q}：{n} 没有返回任何值"),
    (r"on input: (?P<label>.*)", "输入：{label}"),
    (
        r"also, on " + LABEL + r": two mistakes at once: (?P<t_a>.+?); and (?P<t_b>.+)",
        "另外，在输入“{label}”上：同时有两处错误：其一，{t_a}；其二，{t_b}",
    ),
    (r"also, on " + LABEL + r": (?P<t_h>.+)", "另外，在输入“{label}”上：{t_h}"),
    (
        r"hint: two mistakes at once: (?P<t_a>.+?); and (?P<t_b>.+)",
        "提示：同时有两处错误：其一，{t_a}；其二，{t_b}",
    ),
    (r"hint: (?P<t_h>.*)", "提示：{t_h}"),
    # got / expected lines that carry words, before the general ones (which copy the value)
    (
        r"got: *(?P<n>\d+) tensors saved for an autograd graph while backward ran",
        "你的结果：backward 运行时，有 {n} 个张量为 autograd 计算图保存了下来",
    ),
    (E("expected: none"), "期望结果：一个也没有"),
    (
        r"got: *the largest tensor it made has (?P<n>\d+) elements, shape (?P<s>.*)",
        "你的结果：它构造的最大张量有 {n} 个元素，形状 {s}",
    ),
    (
        r"expected: a \(64, 64\) block of scores per batch-and-head, (?P<n>\d+) elements",
        "期望结果：每个样本的每个头有一个 (64, 64) 的分数块，共 {n} 个元素",
    ),
    (r"got: *there is no (?P<a>self\.\w+)", "你的结果：没有 {a}"),
    (
        r"expected: (?P<a>self\.\w+) = nn\.Linear\(\.\.\.\), an attribute of the module",
        "期望结果：{a} = nn.Linear(...)，作为模块的一个属性",
    ),
    (r"expected: a tensor of shape (?P<s>.*)", "期望结果：形状为 {s} 的张量"),
    (
        r"got: *(?P<n>\d+) tensors stored as ctx attributes \(roles: (?P<r>[\w, ]+)\)",
        "你的结果：有 {n} 个张量被存成了 ctx 的属性（角色：{r}）",
    ),
    (
        E("expected: tensors kept with ctx.save_for_backward(x, weight), plain values (eps) as attributes"),
        "期望结果：张量用 ctx.save_for_backward(x, weight) 保存，只有普通数值（eps）才作为属性",
    ),
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
    (
        r"got: *excess kurtosis (?P<k>\S+) \(uniform\)",
        "你的结果：超额峰度 {k}（均匀分布）",
    ),
    (
        r"got: *excess kurtosis (?P<k>\S+) \(not normal\)",
        "你的结果：超额峰度 {k}（不是正态分布）",
    ),
    (E("expected: 0 (a normal distribution)"), "期望结果：0（正态分布）"),
    (E("expected: zeros"), "期望结果：全零"),
    (r"expected: (?P<v>\[.*\]) \+ (?P<n>\d+) new tokens", "期望结果：{v} + {n} 个新 token"),
    (r"expected: torch\.int64 \(a LongTensor\)", "期望结果：torch.int64（LongTensor）"),
    (r"expected: a list of (?P<n>\d+) pairs", "期望结果：由 {n} 个二元组组成的列表"),
    (
        r"expected: (?P<v>\S+) \((?P<c>init_std\(.*\)), within (?P<p>\S+)\)",
        "期望结果：{v}（{c}，误差在 {p} 以内）",
    ),
    (r"expected: (?P<a>self\.\w+), a tensor of shape (?P<s>.*)", "期望结果：{a}，形状为 {s} 的张量"),
    (r"expected: (?P<a>self\.\w+), a tensor", "期望结果：{a}，一个张量"),
    (r"got: *two different outputs for the same x", "你的结果：同一个 x 得到了两个不同的输出"),
    (r"expected: the same output twice", "期望结果：两次输出相同"),
    (
        r"got: *grad mode on at calls (?P<l>\[.*?\]) of (?P<n>\d+)",
        "你的结果：在 {n} 次调用中，第 {l} 次调用时梯度模式是开启的",
    ),
    (E("expected: grad mode off at every call"), "期望结果：每次调用时梯度模式都是关闭的"),
    # lesson 10_flash_attention: got / expected lines with words
    # lesson 11_tokenizer (before the general got/expected frames: its values are bytes and text)
    (r"got: *(?P<v>\(b['\"].*)", "你的结果：`{v}`"),
    (r"expected: *(?P<v>\(b['\"].*)", "期望结果：`{v}`"),
    (r"got: *(?P<v>b['\"].*|None)", "你的结果：`{v}`"),
    (r"expected: *(?P<v>b['\"].*)", "期望结果：`{v}`"),
    (
        r"(?P<q>\w+): it returned a (?P<t>\w+), not a pair \(vocab, merges\)",
        "{q}：它返回了一个 `{t}`，而不是二元组 (vocab, merges)",
    ),
    (r"(?P<q>\w+): vocab is a (?P<t>\w+), not a dict", "{q}：vocab 是一个 `{t}`，不是 `dict`"),
    (
        r"(?P<q>\w+): vocab has the key (?P<k>.*), not an int id",
        "{q}：vocab 里有键 `{k}`，不是 `int` 类型的 id",
    ),
    (
        r"(?P<q>\w+): vocab\[(?P<i>-?\d+)\] is a (?P<t>\w+) \((?P<v>.*)\), not bytes",
        "{q}：vocab[{i}] 是一个 `{t}`（`{v}`），不是 `bytes`",
    ),
    (r"(?P<q>\w+): merges is a (?P<t>\w+), not a list", "{q}：merges 是一个 `{t}`，不是 `list`"),
    (
        r"(?P<q>\w+): the merge (?P<m>.*) is not a tuple of two bytes",
        "{q}：合并 `{m}` 不是由两个 `bytes` 组成的元组",
    ),
    (r"expected: a tuple (?P<t>\(.*\))", "期望结果：一个元组 {t}"),
    (r"expected: a bias of shape (?P<s>\(\d+,\))", "期望结果：形状为 {s} 的偏置"),
    (
        r"expected: mean=0, std=0\.02 \(down to 0\.02 / sqrt\(2 \* n_layers\) = (?P<s>\S+) for a residual "
        r"projection\)",
        "期望结果：mean=0, std=0.02（残差投影可以小到 0.02 / sqrt(2 * n_layers) = {s}）",
    ),
    (r"got: *(?P<n>\S+) with largest \|value\| (?P<v>\S+)", "你的结果：{n} 的最大绝对值为 {v}"),
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
    (r"(?P<t_what>.+?) contains inf or NaN\.", "{t_what}中有 inf 或 NaN。"),
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
    # a known PyTorch error (byhand._core.KNOWN_ERRORS): what it means first, the error itself below
    (r"(?P<q>\S+) raised an error: (?P<t_m>.+)", "{q} 抛出了异常：{t_m}"),
    (r"the error: (?P<err>.*)", "原始报错：`{err}`"),
    # the line of the student's own code that raised (byhand._core.answer_error_message)
    (r"in your code: (?P<cell>.+?), line (?P<l>\d+): (?P<code>.*)", "你的代码：{cell}，第 {l} 行：`{code}`"),
    (r"in your code: (?P<cell>.+?), line (?P<l>\d+)", "你的代码：{cell}，第 {l} 行"),
    # a raised error is the answer's own text: quoted as code
    (r"(?P<q>\S+) raised (?P<err>.*) \(line (?P<l>\d+)\)", "{q} 抛出了异常（第 {l} 行）：`{err}`"),
    (r"(?P<q>\S+) raised (?P<err>.*)", "{q} 抛出了异常：`{err}`"),
    (
        r"the backward pass of LayerNormFunction raised (?P<err>.*)",
        "LayerNormFunction 的反向传播抛出了异常：`{err}`",
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
        "{q} 应返回传入的那一层（`return layer`），实际得到的对象没有 .weight（是不是忘了 `return`？）",
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
    (
        r"(?P<q>\S+) modified its input (?P<n>\S+) in place: use out-of-place ops "
        r"\((?P<a>[^,]+), not (?P<b>[^;]+); nn\.Dropout without inplace=True\)",
        "{q} 原地修改了它的输入 {n}：请用非原地运算（用 {a}，而不是 {b}；nn.Dropout 不要设 inplace=True）",
    ),
    (
        r"(?P<q>\S+) modified its input (?P<n>\S+) in place: use out-of-place ops "
        r"\((?P<a>[^,]+), not (?P<b>.+?) or (?P<c>.+)\)",
        "{q} 原地修改了它的输入 {n}：请用非原地运算（用 {a}，而不是 {b} 或 {c}）",
    ),
    (
        r"(?P<q>\S+) modified its input (?P<n>\S+) in place: use out-of-place ops "
        r"\((?P<a>[^,]+), not (?P<b>.+)\)",
        "{q} 原地修改了它的输入 {n}：请用非原地运算（用 {a}，而不是 {b}）",
    ),
    (
        r"(?P<t_what>.+?) is missing: the module has no attribute (?P<a>\w+)\.",
        "{t_what}不存在：模块没有属性 {a}。",
    ),
    (r"(?P<q>\S+) modified its input (?P<n>\S+) in place", "{q} 原地修改了它的输入 {n}"),
    (r"(?P<q>\S+) modified the given cache's (?P<n>\w+) in place", "{q} 原地修改了传入缓存中的 {n}"),
    # lesson 07_decoder
    # lesson 08_backward
    # lesson 10_flash_attention
    # grader-side lines appended to a check's message
    # the notes of a graded submission (autograder/run/restore.py, autograder/judge/grade.py,
    # autograder/collect/submissions.py): what the grader did to the notebook and why
    # a file the grader refused to read (autograder/collect/tree.py), noted beside a graded notebook;
    # a notebook that could not be read or run (autograder/judge/grade.py): the row of an ungradable one
    (r"refused: (?P<f>.+?) (?P<t_w>(?:is|could) .+)", "已拒收 {f}：{t_w}"),
    (r"the file could not be read \((?P<e>.*)\)", "文件无法读取（{e}）"),
    (
        E("the file is empty: save the notebook in Jupyter and submit it again"),
        "文件是空的：请在 Jupyter 里保存 notebook，再重新提交",
    ),
    (
        r"the file is not a valid notebook \(invalid JSON: (?P<e>.*)\); submit the \.ipynb file that "
        r"Jupyter saves, not a copy edited by hand",
        "文件不是有效的 notebook（JSON 无效：{e}）；请提交 Jupyter 保存的 .ipynb 文件，不要提交手工编辑过的副本",
    ),
    (
        E("the file is JSON but not a Jupyter notebook (no cells)"),
        "文件是 JSON，但不是 Jupyter notebook（没有单元格）",
    ),
    (r"the notebook format could not be read \((?P<e>.*)\)", "无法读取 notebook 的格式（{e}）"),
    (E("the notebook has a malformed cell"), "notebook 里有一个格式错误的单元格"),
    (r"the notebook could not be run: (?P<t_w>.+)", "notebook 无法运行：{t_w}"),
    (r"graded (?P<a>.+) as (?P<l>\S+)", "已把 {a} 作为 {l} 评分"),
    (
        r"also found (?P<o>.+): graded (?P<a>.+), the newest by its submission time",
        "还找到了 {o}：评分的是最新的 {a}（按提交时间）",
    ),
    (
        r"also found (?P<o>.+): graded (?P<a>.+), the newest by its attachment id",
        "还找到了 {o}：评分的是最新的 {a}（按附件编号）",
    ),
    (
        r"also found (?P<o>.+): graded (?P<a>.+), the newest by its re-upload number",
        "还找到了 {o}：评分的是最新的 {a}（按重新上传的编号）",
    ),
    (r"also found (?P<o>.+): graded (?P<a>.+)", "还找到了 {o}：评分的是 {a}"),
    # the written answers' rows of grades.csv (autograder/judge/grade.py) and the hand grades and
    # comments entered in formgrader (autograder/record/gradebook.py); a comment is the instructor's own
]

PIECES = [
    (
        E("the default eps should be 1e-5 (as F.layer_norm): layer_norm_backward(dy, x, weight, eps=1e-5)"),
        "eps 的默认值应为 1e-5（与 F.layer_norm 一样）：layer_norm_backward(dy, x, weight, eps=1e-5)",
    ),
    (
        E(
            "generate called without temperature, top_k and use_cache gave other tokens than with "
            "temperature=1.0, top_k=None, use_cache=True (the same seeded generator)."
        ),
        "不传 temperature、top_k 和 use_cache 调用 generate，得到的 token 与传入 temperature=1.0、top_k=None、"
        "use_cache=True 时不同（生成器的种子相同）。",
    ),
    (
        E(
            "the signature's defaults are temperature=1.0, top_k=None, use_cache=True: generate(model, idx, "
            "max_new_tokens) must do what generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, "
            "use_cache=True) does"
        ),
        "函数签名里的默认值是 temperature=1.0、top_k=None、use_cache=True：`generate(model, idx, max_new_tokens)` "
        "必须与 `generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, use_cache=True)` 做同样的事",
    ),
    (
        E(
            "the default temperature should be 1.0: sample_next(logits, temperature=1.0, top_k=None, "
            "generator=None) draws from softmax(logits) when called without a temperature"
        ),
        "temperature 的默认值应为 1.0：不传 temperature 调用 sample_next(logits, temperature=1.0, top_k=None, "
        "generator=None) 时，从 softmax(logits) 中抽样",
    ),
    (
        E("a fresh GPT is not initialized as GPT-2 is: a bias does not start at 0."),
        "刚初始化的 GPT 没有按 GPT-2 的方式初始化：有一个偏置不是从 0 开始的。",
    ),
    (
        E("a fresh GPT is not initialized as GPT-2 is: a weight is not drawn from N(0, 0.02^2)."),
        "刚初始化的 GPT 没有按 GPT-2 的方式初始化：有一个权重不是从 N(0, 0.02^2) 中抽取的。",
    ),
    (
        E("GPT-2 starts every Linear's bias at 0: nn.init.zeros_(m.bias) for each nn.Linear that has one"),
        "GPT-2 把每个 Linear 的偏置都初始化为 0：对每个带偏置的 nn.Linear 调用 nn.init.zeros_(m.bias)",
    ),
    (
        E(
            "GPT-2 draws the embeddings and every Linear weight from N(0, 0.02^2): "
            "nn.init.normal_(m.weight, mean=0.0, std=0.02)"
        ),
        "GPT-2 从 N(0, 0.02^2) 中抽取嵌入和每个 Linear 的权重：nn.init.normal_(m.weight, mean=0.0, std=0.02)",
    ),
    (
        r"(?P<c>\w+) built without norm_first does not compute what (?P=c)\(\.\.\., norm_first=True\) "
        r"computes \(the same seed, so the same weights\)\.",
        "不传 norm_first 构建的 {c} 与 {c}(..., norm_first=True) 算的不一样（随机种子相同，所以权重也相同）。",
    ),
    (r"(?P<c>\w+) output without norm_first", "不传 norm_first 时 {c} 的输出"),
    (
        E(
            "the signature's default is norm_first=True (Pre-LN): "
            "__init__(self, ..., dropout=0.0, norm_first=True), and each layer gets norm_first=norm_first"
        ),
        "函数签名里的默认值是 norm_first=True（Pre-LN）：__init__(self, ..., dropout=0.0, norm_first=True)，"
        "并且每一层都传入 norm_first=norm_first",
    ),
    (
        E(
            "ResidualStack(depth, d_model), built without pre_ln, does not compute what "
            "ResidualStack(depth, d_model, pre_ln=True) computes."
        ),
        "不传 pre_ln 构建的 ResidualStack(depth, d_model) 与 ResidualStack(depth, d_model, pre_ln=True) 算的不一样。",
    ),
    (
        E("the signature's default is pre_ln=True: __init__(self, depth, d_model, pre_ln=True)"),
        "函数签名里的默认值是 pre_ln=True：__init__(self, depth, d_model, pre_ln=True)",
    ),
    (
        E("MultiHeadAttention(d_model, n_heads), called without bias, has no biases."),
        "不传 bias 调用 MultiHeadAttention(d_model, n_heads) 时，它没有偏置。",
    ),
    (
        E(
            "a (B, Lq, Lk) mask was given no head dim, so it lines up with the heads instead of the "
            "sequences (sequence b's mask went to head b): mask[:, None] makes it (B, 1, Lq, Lk), one mask "
            "per sequence shared by its heads"
        ),
        "(B, Lq, Lk) 的掩码没有加上头的维度，于是它按头而不是按序列对齐（第 b 个序列的掩码用在了第 b 个头上）："
        "mask[:, None] 把它变成 (B, 1, Lq, Lk)，每个序列一个掩码，由它的所有头共用",
    ),
    (
        E(
            "the signature's default is bias=True: __init__(self, d_model, n_heads, bias=True), "
            "and each nn.Linear gets bias=bias"
        ),
        "函数签名里的默认值是 bias=True：__init__(self, d_model, n_heads, bias=True)，并且每个 nn.Linear 都传入 bias=bias",
    ),
    # hints: lesson 11_tokenizer
    (E("generate's output"), "generate 的输出"),
    # names of what a check compares
    (r"the std of (?P<x>\S+)", "{x} 的标准差"),
    (r"(?P<x>\S+) after all calls", "所有调用之后的 {x} "),
    (r"(?P<x>\S+) output \(call (?P<i>\d+) of (?P<n>\d+)\)", "{x} 的输出（第 {i} 次调用，共 {n} 次）"),
    (r"(?P<x>\S+) output at the real positions", "{x} 在真实（非填充）位置上的输出"),
    (r"(?P<x>\S+) output in eval mode", "{x} 在评估模式下的输出"),
    (r"(?P<x>\S+) logits in eval mode", "{x} 在评估模式下的 logits "),
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
    (
        E("dlogits (the gradient of the mean cross-entropy w.r.t. the logits)"),
        "dlogits（平均交叉熵对 logits 的梯度）",
    ),
    (E("dlogits from cross_entropy_backward"), "cross_entropy_backward 返回的 dlogits"),
    (E("cross_entropy_backward(logits, target)"), "cross_entropy_backward(logits, target)"),
    (r"new_cache \(no cache given\): (?P<n>\w+)", "new_cache（未传入缓存时）中的 {n} "),
    (r"new_cache\[(?P<i>\d+)\] \(block (?P=i)\): (?P<n>\w+)", "new_cache[{i}]（第 {i} 个块）中的 {n} "),
    (r"new_cache: (?P<n>\w+)", "new_cache 中的 {n} "),
    (r"new_cache\[(?P<i>\d+)\] \(block (?P=i)\)", "new_cache[{i}]（第 {i} 个块）"),
    (E("new_cache (no cache given)"), "new_cache（未传入缓存时）"),
    (E("the forward output of LayerNormFunction"), "LayerNormFunction 前向的输出"),
    (E("nn.init.zeros_(layer.bias)"), "nn.init.zeros_(layer.bias)"),
    # lesson 10_flash_attention: names of what is compared
    # hints: lesson 10_flash_attention
    (r"is_causal should default to False: (?P<c>def .*)", "is_causal 的默认值应为 False：`{c}`"),
    (r"block_q and block_k should default to 64: (?P<c>def .*)", "block_q 和 block_k 的默认值应为 64：`{c}`"),
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
        "全被掩码的行必须得到权重 0 和输出 0：例如对权重用 torch.nan_to_num，或把 mask.any(-1) == False "
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
        "评估模式（training=False）下应使用 running_mean 和 running_var 归一化，而不是当前批的统计量",
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
        "只取 `i in range(depth)` 的 linears[i].weight：输出头 head 不是一个块",
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
        "running_var 用有偏的批方差更新了；PyTorch 用无偏方差更新它：var(0, unbiased=False) * N / (N - 1)",
    ),
    (
        E(
            "self_attn mixes the batch, not the sequence: nn.MultiheadAttention expects (L, B, d) unless it is "
            "built with batch_first=True"
        ),
        "self_attn 在批维上做了混合，而不是在序列维上：除非用 batch_first=True 构建，"
        "nn.MultiheadAttention 期望输入 (L, B, d)",
    ),
    (
        E("sin and cos are swapped: even features 2i hold sin(p * w_i), odd features 2i+1 hold cos(p * w_i)"),
        "sin 和 cos 弄反了：偶数特征 2i 放 sin(p * w_i)，奇数特征 2i+1 放 cos(p * w_i)",
    ),
    (
        r"that is (?:a )?(?P<f>sigmoid|tanh); the Transformer's FFN uses ReLU: torch\.relu \(or x\.clamp\(min=0\)\)",
        "这是 {f}；Transformer 的前馈全连接层用的是 ReLU：torch.relu（或 x.clamp(min=0)）",
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
        "归一化时对这个批用了无偏方差（除以 N-1）；F.batch_norm 用有偏方差 x.var(0, unbiased=False) 归一化，"
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
        "滑动统计量缓冲区没有被原地更新：running_mean = ... 只是重新绑定了一个局部变量名；请在 torch.no_grad() "
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
    # hints: lesson 01_attention
    # hints: lesson 02_layernorm
    (E("bias is missing: y = x_hat * weight + bias"), "缺少 bias：y = x_hat * weight + bias"),
    # hints: lesson 03_residual
    (
        r"there is no (?P<a>self\.\w+): the exercise names the layers self\.w1 and self\.w2 \(layers kept in a "
        r"Python list are neither named nor registered\)",
        "没有 {a}：练习规定这两层叫 self.w1 和 self.w2（放在 Python 列表里的层既没有这些名字，也不会被注册）",
    ),
    # hints: lesson 05_init
    # hints: lesson 06_transformer_block
    (
        r"your (?P<w>\w+) ignores its pad_mask argument: its output is the same with the mask and without it\. "
        + E(
            "Pass the mask on (key_padding_mask=~pad_mask for nn.MultiheadAttention, pad_mask for each block)"
        ),
        "你的 {w} 忽略了 pad_mask 参数：有没有掩码，它的输出都一样。请把掩码传下去"
        "（对 nn.MultiheadAttention 传 key_padding_mask=~pad_mask，对每个块传 pad_mask）",
    ),
    # hints: lesson 07_decoder
    (
        r"your top-k keeps only k - 1 = (?P<k>\d+) logits: the k-th largest must stay too\. Mask the logits "
        r"strictly below the k-th largest \(logits < kth, not <=\)",
        "你的 top-k 只保留了 k - 1 = {k} 个 logits：第 k 大的那个也必须留下。只对严格小于第 k 大值的 logits "
        "加掩码（logits < 第 k 大的值，而不是 <=）",
    ),
    (
        r"your fresh GPT predicts the token it just read at (?P<p>\d+%) of the positions: that token's own logit "
        r"is (?P<o>\S+) on average \(d_model = (?P<d>\d+)\), the others spread by (?P<s>\S+)\. With large "
        r"embeddings tied to the output layer, the last hidden state is mostly the input token's embedding, and "
        r"its dot product with itself is its squared norm, about d_model for N\(0, 1\) entries\. Initialize the "
        r"weights small, as GPT-2 does: nn\.init\.normal_\(std=0\.02\) for the embeddings and Linear weights, "
        r"zero biases",
        "你刚初始化的 GPT 在 {p} 的位置上预测的就是它刚读入的 token：这个 token 自己的 logit 平均为 {o}"
        "（d_model = {d}），其余 logits 的标准差为 {s}。嵌入很大又与输出层共享权重时，最后的隐藏状态基本就是"
        "输入 token 的嵌入，它与自身的点积就是它的范数平方，对 N(0, 1) 的元素约为 d_model。像 GPT-2 那样把权重"
        "初始化得小一些：嵌入和 Linear 的权重用 nn.init.normal_(std=0.02)，偏置置零",
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
        r"tokens outside the top (?P<k>\d+) were drawn \((?P<l>\[.*?\])\): set the other logits to -inf before "
        r"the softmax \(setting them to 0 still gives them probability\)",
        "采到了前 {k} 名之外的 token（{l}）：在 softmax 之前把其余 logits 设为 -inf（设为 0 仍会给它们概率）",
    ),
    # hints: lesson 08_backward
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
        r"your forward saves nothing its backward needs \(it kept (?P<n>\d+) tensors\): save x and weight with "
        r"ctx\.save_for_backward\(x, weight\), store eps on ctx \(ctx\.eps = eps\), and read them back with "
        r"ctx\.saved_tensors",
        "你的 forward 没有保存 backward 需要的任何东西（它只留下了 {n} 个张量）：用 "
        "ctx.save_for_backward(x, weight) 保存 x 和 weight，把 eps 存在 ctx 上（ctx.eps = eps），"
        "再用 ctx.saved_tensors 读回来",
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
        "init_linear_ 应返回它填充的那一层（`return layer`），但返回的层的 weight 与 layer.weight 不同",
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
        "评估模式（training=False）下 滑动统计量缓冲区不能改变",
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
        E("the default eps should be 1e-5 (as F.layer_norm): layer_norm(x, weight, bias, eps=1e-5)"),
        "eps 的默认值应为 1e-5（与 F.layer_norm 一样）：layer_norm(x, weight, bias, eps=1e-5)",
    ),
    (
        E("the default eps should be 1e-5 (as F.batch_norm): batch_norm(..., momentum=0.1, eps=1e-5)"),
        "eps 的默认值应为 1e-5（与 F.batch_norm 一样）：batch_norm(..., momentum=0.1, eps=1e-5)",
    ),
    (
        E("the first call was right: check how the running buffers are updated and used"),
        "第一次调用是对的：检查 滑动统计量缓冲区是怎样更新和使用的",
    ),
    (
        E("batch_norm modified its input x in place: only the running buffers may change"),
        "batch_norm 原地修改了它的输入 x：只有 滑动统计量缓冲区可以改变",
    ),
    (
        E(
            "training: (x - batch mean) / sqrt(biased batch var + eps) * weight + bias; eval: the same with "
            "running_mean / running_var"
        ),
        "训练时：(x - 批均值) / sqrt(有偏批方差 + eps) * weight + bias；评估时：同样的式子，换成 "
        "running_mean / running_var",
    ),
    (
        E(
            "in training, running = (1 - momentum) * running + momentum * batch statistic (unbiased variance for "
            "running_var), updated in place; in eval, unchanged"
        ),
        "训练时 running = (1 - momentum) * running + momentum * 批统计量（running_var 用无偏方差），原地更新；"
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
            "x may have any number of leading dims, (..., d): work on the last dim only (x.shape[-1], x[..., i]), "
            "never unpack x.shape into a fixed number of names"
        ),
        "x 前面可以有任意多个维度，(..., d)：只对最后一维操作（x.shape[-1]、x[..., i]），"
        "不要把 x.shape 拆包成固定个数的变量",
    ),
]


# ---------------------------------------------------------------------------------------------
# The text around the lessons in a Chinese notebook and on the pages made from it (the release's
# autograder/tooling/translations.py, the grader's feedback page and class report): fixed strings,
# English -> Chinese.

# the setup cell's lines when the package is missing (autograder/tooling/student.py SETUP_BLOCK)
SETUP = [
    (
        "# The self-checks come from the course's package `byhand` (it needs only torch and numpy).",
        "# 自检来自课程的 `byhand` 包（它只依赖 torch 和 numpy）。",
    ),
    ("  # or the .whl from the course site", "  # 或者课程网站上的 .whl 文件"),
    ("  # Colab: install it here", "  # Colab：在这里安装"),
    (
        "print(f'Self-checks are off. To turn them on: pip install \"{BYHAND}\", then restart the kernel.')",
        "print(f'自检未开启。要开启它：pip install \"{BYHAND}\"，然后重启内核。')",
    ),
    (
        "  # a stand-in: each self-check says it is off, every other cell still runs",
        "  # 替身：每个自检都会说明自己未开启，其余单元格照常运行",
    ),
    (
        "print(f'{name}: self-checks are off (to turn them on: pip install \"{BYHAND}\")')",
        "print(f'{name}：自检未开启（要开启它：pip install \"{BYHAND}\"）')",
    ),
    ("  # the self-checks speak zh_CN", "  # 自检用中文输出"),
    ("  # the plots' labels: a CJK font when one is installed", "  # 图里的中文标签：装有中文字体时就用它"),
    # the lessons' own setup lines: why one thread, what a helper of an earlier lesson does
    (
        "# tiny tensors: one thread is faster, and the same on every machine",
        "# 张量很小：单线程更快，而且在每台机器上结果都一样",
    ),
    (
        "# small tensors: one thread is faster, and the same on every machine",
        "# 张量很小：单线程更快，而且在每台机器上结果都一样",
    ),
    (
        "# small tensors: one thread is fastest here, and repeatable",
        "# 张量很小：这里单线程最快，结果也可复现",
    ),
    (
        "# the models here are tiny: one thread is the fastest, and bit-reproducible",
        "# 这里的模型很小：单线程最快，而且结果逐位可复现",
    ),
    ("# noqa: F401 - for the answers: positional encodings use it", "# noqa: F401 - 答案里的位置编码要用它"),
    (
        '"""LayerNorm of lesson 2 from primitive ops: x (..., d) -> (..., d)."""',
        '"""第 2 课的基本运算版 LayerNorm：x (..., d) -> (..., d)。"""',
    ),
    (
        '"""Attention of lesson 1: softmax(q k^T / sqrt(d_k), masked) v; a fully masked row gives 0."""',
        '"""第 1 课的注意力：softmax(q k^T / sqrt(d_k), 加掩码) v；全被掩码的行输出 0。"""',
    ),
    (
        '"""Attention of lesson 1 (scale 1/sqrt(d)): builds the whole (..., Lq, Lk) score matrix."""',
        '"""第 1 课的注意力（缩放因子 1/sqrt(d)）：会构造整个 (..., Lq, Lk) 分数矩阵。"""',
    ),
    # lesson 11 (tokenizer): its setup cell also holds GPT-2's pattern and the two given helpers
    (
        "  # GPT-2's pattern needs \\p{L} (any letter) and \\p{N} (any digit): the standard `re` has neither",
        "  # GPT-2 的模式要用 \\p{L}（任意字母）和 \\p{N}（任意数字），标准库的 `re` 两个都不支持",
    ),
    (
        "  # it comes with the checks package, which the block below installs or names",
        "  # 它随检查包一起安装；下面的代码会安装检查包，或者告诉你怎么装",
    ),
    (
        "  # nothing here is random; the course seeds every lesson the same way",
        "  # 这一课没有随机的东西；课程的每一课都这样设定种子",
    ),
    (
        "# GPT-2's pre-tokenization pattern: contractions, words (with the space before them), numbers,\n"
        "# punctuation runs, whitespace",
        "# GPT-2 的预分词模式：英文缩写、单词（连同它前面的空格）、数字、\n# 连续的标点、空白",
    ),
    ("# given: your answers use these two", "# 已经给出：你的答案要用到这两个函数"),
    (
        '"""`seq` with every occurrence of `pair` (left to right) replaced by one token, their bytes joined."""',
        '"""把 `seq` 里 `pair` 的每一处出现（从左到右）换成一个 token，它的字节是两者拼接而成。"""',
    ),
    (
        '"""How much of `buffer` can be encoded now: what comes after it cannot change its tokens."""',
        '"""`buffer` 开头有多长的一段现在就能编码：后面再来的文本不会改变这一段的 token。"""',
    ),
    ("  # ends with a whole special token", "  # 以一个完整的特殊 token 结尾"),
]

# added under each written question (the answer cell keeps nbgrader's placeholder, which must go)
WRITTEN_ANSWER_NOTE = "用中文或英文作答都可以。请先删掉下面单元格里的 `YOUR ANSWER HERE`，再写上你的答案。"

# the heading of the model answer and rubric shown to the person grading in formgrader
RUBRIC_HEADING = "**供评分人参考（来自 solutions/，不在学生的笔记本里）**"

# why a kernel died (autograder/run/runner.py), inside the notes above
PIECES += [
    (E("the kernel died"), "内核退出了"),
    (r"the kernel was killed by (?P<s>\w+) \(out of memory\?\)", "内核被 {s} 终止（内存不够？）"),
    (r"the kernel was killed by (?P<s>\w+)", "内核被 {s} 终止"),
    (
        r"the kernel exited with status (?P<c>-?\d+) \(os\._exit, exit\(\) or a crash\)",
        "内核以状态码 {c} 退出（os._exit、exit() 或崩溃）",
    ),
    (r"the notebook ran past its (?P<s>\S+) s limit", "notebook 的运行时间超过了 {s} 秒的上限"),
    (r"the kernel could not run: (?P<e>.*)", "内核无法运行：{e}"),
    (
        r"the kernel stopped answering \(no reply within (?P<s>\S+) s, even after an interrupt\)",
        "内核不再响应（{s} 秒内没有回复，中断之后也没有）",
    ),
]

# why the grader refused a file (autograder/collect/tree.py), after "refused: <file>"
PIECES += [
    (
        r"is larger than the (?P<n>\d+) MB limit for one file \((?P<s>[\d.]+) MB or more\)",
        "超过了单个文件 {n} MB 的上限（至少 {s} MB）",
    ),
    (
        E("is a symbolic link, which the grader never follows; submit the notebook file itself"),
        "是一个符号链接，评分程序从不跟随链接；请提交 notebook 文件本身",
    ),
    (E("is a named pipe (FIFO), not a file"), "是一个命名管道（FIFO），不是文件"),
    (E("is a device, not a file"), "是一个设备，不是文件"),
    (E("is a socket, not a file"), "是一个套接字，不是文件"),
    (E("is not a regular file"), "不是普通文件"),
    (r"is nested more than (?P<n>\d+) folders deep", "所在的文件夹嵌套超过了 {n} 层"),
    (r"could not be read \((?P<e>.*)\)", "无法读取（{e}）"),
    (r"could not be opened safely \((?P<e>.*)\)", "无法安全地打开（{e}）"),
    (E("is a zip entry whose path leads out of the folder"), "是 ZIP 压缩包里一个路径指向文件夹之外的条目"),
    (r"could not be unzipped \((?P<e>.*)\)", "无法解压（{e}）"),
    (
        E(
            "is a hard link to a file outside the submissions folder, which the grader does not read; "
            "submit a copy of the notebook"
        ),
        "是指向提交文件夹之外某个文件的硬链接，评分程序不会读取它；请提交 notebook 的副本",
    ),
]

# what a known PyTorch error in the student's code means (byhand._core.KNOWN_ERRORS)
PIECES += [
    (
        r"expand can only stretch a dimension of size 1: dimension (?P<dim>\d+) has size (?P<have>\d+), "
        r"and expand asked for (?P<want>-?\d+)",
        "expand 只能把大小为 1 的维度扩展开：第 {dim} 维的大小是 {have}，而 expand 要的是 {want}",
    ),
    (
        r"expand needs a size for each of the tensor's (?P<d>\d+) dimensions \(-1 keeps a size\), not (?P<n>\d+)",
        "expand 需要为张量的 {d} 个维度各给一个大小（-1 表示保持原大小），而不是 {n} 个",
    ),
    (
        r"the shape (?P<shape>\[[^\]]*\]) given to view/reshape does not hold the tensor's (?P<n>\d+) elements",
        "传给 view/reshape 的形状 {shape} 装不下这个张量的 {n} 个元素",
    ),
    (
        E(
            "view needs a contiguous tensor (a transpose or permute makes one that is not): use "
            ".reshape(...), or .contiguous().view(...)"
        ),
        "view 要求张量在内存中连续（transpose 或 permute 之后就不连续了）：改用 .reshape(...)，"
        "或 .contiguous().view(...)",
    ),
    (
        r"a matrix product needs the left matrix's last size to equal the right one's first: "
        r"(?P<b>\d+) against (?P<c>\d+)",
        "矩阵乘法要求左矩阵的最后一维等于右矩阵的第一维：这里是 {b} 对 {c}",
    ),
    (
        r"a batched matrix product needs the inner sizes to agree: the right tensor's first two sizes are "
        r"(?P<got>\[[^\]]*\]), and the left one asks for (?P<want>\[[^\]]*\])",
        "批量矩阵乘法要求内侧的维度一致：右边张量的前两维是 {got}，而左边张量要求 {want}",
    ),
    (
        r"the two tensors do not broadcast: dimension (?P<dim>\d+) has size (?P<a>\d+) in one and "
        r"(?P<b>\d+) in the other, and neither is 1",
        "两个张量无法广播：第 {dim} 维在一个张量里大小是 {a}，在另一个里是 {b}，且都不是 1",
    ),
    (
        r"backward must return one gradient for each input of forward, None for an input that needs "
        r"none: (?P<want>\d+) of them, not (?P<got>\d+)",
        "backward 必须为 forward 的每个输入各返回一个梯度（不需要梯度的输入返回 None）：应返回 {want} 个，"
        "而不是 {got} 个",
    ),
    (
        E(
            "an in-place operation (+=, x[...] = ..., .add_()) changed a parameter or another tensor made "
            "with requires_grad=True: compute a new tensor (x = x + y), or change it under torch.no_grad()"
        ),
        "一个原地运算（+=、x[...] = ...、.add_()）修改了参数，或另一个用 requires_grad=True 创建的张量："
        "请计算出一个新张量（x = x + y），或在 torch.no_grad() 下修改它",
    ),
    (
        E(
            "an in-place operation (+=, x[...] = ..., .add_()) changed a tensor autograd had saved for "
            "backward: use the out-of-place form (x = x + y, not x += y)"
        ),
        "一个原地运算（+=、x[...] = ...、.add_()）修改了 autograd 为反向传播保存的张量："
        "请改用非原地的写法（x = x + y，而不是 x += y）",
    ),
]

# the note a Chinese notebook carries while its translation is behind the English lesson
STALE_EDITION = "**这份中文版落后于英文版**：有 {n} 处文字还没有翻译，暂时显示英文原文。"
