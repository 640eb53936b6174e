"""简体中文 (zh_CN) catalogue of the check messages; see byhand/i18n.py.

LINES: whole-line frames (regex over a stripped line -> format template). A group whose name starts
with `t_` is itself translated through PIECES; other groups are copied (numbers, shapes, code).
PIECES: the sentences inserted into frames (hints, names of what is checked). Terms follow
docs/glossary-zh.md. Exact sentences are written with E(...) (escaped English text).
"""

import re


def E(text: str) -> str:
    return re.escape(text)


CODE = r"(?P<c>[A-Za-z_][\w.]*(?:\([^()]*\))?(?:\[[^\]]*\])?)"

LINES = [
    (
        r"(?P<q>\S+): not done yet\. It still raises NotImplementedError: "
        r"replace the stub in its answer cell with your code\.",
        "{q}：还没有完成。它仍然抛出 NotImplementedError：请把答案单元格里的占位代码换成你的实现。",
    ),
    (r"(?P<q>\S+): all (?P<n>\d+) visible cases pass\.", "{q}：全部 {n} 个可见用例通过。"),
    (
        r"(?P<q>\S+): all (?P<n>\d+) cases, hidden ones included, pass\.",
        "{q}：全部 {n} 个用例（含隐藏用例）通过。",
    ),
    (r"(?P<q>\S+): no value came back for (?P<n>\S+)", "{q}：{n} 没有返回任何值"),
    (r"on input: (?P<label>.*)", "输入：{label}"),
    (r"hint: (?P<t_h>.*)", "提示：{t_h}"),
    (r"got: (?P<sp> *)(?P<v>.*)", "实际：{sp}{v}"),
    (r"expected: (?P<v>.*)", "期望：{v}"),
    (
        r"largest difference (?P<d>\S+) at index (?P<i>\(.*?\)): got (?P<g>\S+), expected (?P<e>\S+)",
        "最大差异 {d}，位于索引 {i}：实际 {g}，期望 {e}",
    ),
    (r"first difference at index (?P<i>.*)", "第一个不同之处位于索引 {i}"),
    (r"(?P<t_what>.+?) is not what it should be\.", "{t_what} 的结果不正确。"),
    (r"(?P<t_what>.+?) has the wrong shape\.", "{t_what} 的形状不对。"),
    (r"(?P<t_what>.+?) has the wrong dtype\.", "{t_what} 的 dtype 不对。"),
    (r"(?P<t_what>.+?) should keep the input dtype\.", "{t_what} 应保持输入的 dtype。"),
    (r"(?P<t_what>.+?) should be a tensor, got (?P<v>.*)", "{t_what} 应该是一个张量，实际得到 {v}"),
    (r"(?P<q>\S+) raised (?P<err>.*)", "{q} 抛出了异常：{err}"),
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

PIECES = [
    # names of what a check compares
    (r"the std of (?P<x>\S+)", "{x} 的标准差"),
    (r"(?P<x>\S+) after all calls", "所有调用之后的 {x}"),
    (r"(?P<x>\S+) output \(call (?P<i>\d+) of (?P<n>\d+)\)", "{x} 的输出（第 {i} 次调用，共 {n} 次）"),
    (r"(?P<x>\S+) output at the real positions", "{x} 在真实（非填充）位置上的输出"),
    (r"(?P<x>\S+) output", "{x} 的输出"),
    (r"(?P<x>\S+) logits", "{x} 的 logits"),
    (E("weights"), "注意力权重 weights"),
    (CODE, "{c}"),
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
        "完全被掩码的一行必须得到权重 0 和输出 0：例如对权重用 torch.nan_to_num，或把 mask.any(-1) == False "
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
        "被掩码的分数设成了 0 而不是 -inf：exp(0) = 1，被掩码的键仍会得到权重；请用 float('-inf')",
    ),
    (
        E(
            "momentum is the weight of the NEW statistic: running = (1 - momentum) * running + momentum * "
            "batch_stat"
        ),
        "momentum 是“新”统计量的权重：running = (1 - momentum) * running + momentum * batch_stat",
    ),
    (E("nn.init.zeros_(layer.bias)"), "nn.init.zeros_(layer.bias)"),
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
        "这是混合放置 x + dropout(norm(sublayer(x)))；Pre-LN 归一化的是子层的输入：x + dropout(sublayer(norm(x)))",
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
        "掩码的含义反了：True 表示“可以关注”，所以应把掩码为 False 处的分数填成 -inf",
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
        "填充掩码的含义反了：pad_mask 对真实词元为 True，而 nn.MultiheadAttention 的 key_padding_mask "
        "对要忽略的位置为 True：请传入 ~pad_mask",
    ),
    (
        E(
            "the positional encoding is missing: add positional_encoding(max_len, d_model)[:L] to the token "
            "embeddings"
        ),
        "缺少位置编码：把 positional_encoding(max_len, d_model)[:L] 加到词元嵌入上",
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
        "分数除以了 d_k：应除以 sqrt(d_k)，即 q.k 的标准差",
    ),
    (E("the scores are not scaled: divide q @ k^T by sqrt(d_k)"), "分数没有缩放：把 q @ k^T 除以 sqrt(d_k)"),
    (
        E(
            "the scores are scaled by sqrt(d_model); each head has d_head = d_model / n_heads dims, so scale by "
            "sqrt(d_head)"
        ),
        "分数按 sqrt(d_model) 缩放了；每个头只有 d_head = d_model / n_heads 维，所以应按 sqrt(d_head) 缩放",
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
        "你在维度 {d} 上做了归一化：LayerNorm 对每个词元在它的特征上归一化，只在最后一维（mean(-1, keepdim=True)）",
    ),
    (
        E(
            "you reshaped (B, L, d) straight to (B, H, L, d_head): that mixes tokens into heads. View as "
            "(B, L, H, d_head), then transpose(1, 2)"
        ),
        "你把 (B, L, d) 直接 reshape 成了 (B, H, L, d_head)：这会把不同词元混进各个头。"
        "应先 view 成 (B, L, H, d_head)，再 transpose(1, 2)",
    ),
    (
        E("you returned the variance 2 / fan_in: the std is its square root"),
        "你返回的是方差 2 / fan_in：标准差是它的平方根",
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
        "你的块忽略了填充掩码：把 key_padding_mask=~pad_mask 传给 self_attn，这样没有词元会关注到填充位置",
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
]
