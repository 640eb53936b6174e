"""The Chinese of every message id the draft's checks add (ids not yet in byhand.po), terms as
docs/glossary-zh.md decides them. At landing, `python zh_CN_messages.py` prints them as .po entries
to append to student/byhand/locale/zh_CN/LC_MESSAGES/byhand.po before `make messages`; run with
`--missing` it lists the ids the checks use that have no entry here (none, when it is complete)."""

from __future__ import annotations

import sys

ZH = {
    "return a scalar, a 0-dim tensor: .mean() or .sum() over everything gives one (no keepdim, no reshape)": "返回一个标量，即 0 维张量：对全部元素做 .mean() 或 .sum() 就得到它（不要 keepdim，也不要 reshape）",
    "kept[t, j] is True when fewer than `capacity` tokens before t chose expert experts[t, j]": "在 t 之前选择专家 experts[t, j] 的 token 少于 `capacity` 个时，kept[t, j] 为 True",
    "experts {experts}, n_experts={e}, capacity={cap}": "experts {experts}，n_experts={e}，capacity={cap}",
    "{label}, {note}": "{label}，{note}",
    "capacity_keep should return a bool tensor, got {dtype}": "capacity_keep 应返回布尔张量，得到的是 {dtype}",
    "your answer keeps each expert's last tokens: keep the first `capacity` in token order, drop the later ones": "你的答案保留的是每个专家的最后几个 token：应按 token 顺序保留前 `capacity` 个，丢弃后面的",
    "your answer keeps the largest weights: here the order is the tokens' (Switch, GShard), the weights do not decide": "你的答案保留的是权重最大的分配：这里按 token 的顺序（Switch、GShard 的做法），权重不起决定作用",
    "your answer keeps capacity + 1 tokens per expert: keep an assignment when fewer than `capacity` came before it (<, not <=)": "你的答案每个专家保留了 capacity + 1 个 token：只有在它之前的分配少于 `capacity` 个时才保留（用 <，不是 <=）",
    "your answer keeps capacity - 1 tokens per expert: count the assignments before this one, not including it": "你的答案每个专家只保留了 capacity - 1 个 token：计数的是这一个之前的分配，不包括它自己",
    "expert {n} gets no token": "专家 {n} 没有分到 token",
    "every token chooses expert 0 first": "每个 token 的首选都是专家 0",
    "your capacity is rounded down (math.floor, int() or round() give this here): it is the ceiling, math.ceil, so the slots cover the average": "你的容量是向下取整的（这里 math.floor、int() 或 round() 都会给出这个值）：应向上取整（math.ceil），让槽位至少覆盖平均数",
    "n_tokens={t}, n_experts={e}, k={k}, capacity_factor={cf}": "n_tokens={t}，n_experts={e}，k={k}，capacity_factor={cf}",
    "k is missing: T tokens with k choices each make k * T assignments to share among E experts": "少了 k：T 个 token 各选 k 个专家，共有 k * T 个分配要由 E 个专家分担",
    "expert_capacity is not what it should be.": "expert_capacity 的结果不对。",
    "expert_capacity should return an int.": "expert_capacity 应返回 int。",
    "math.ceil returns an int; a tensor or a float is not a number of slots": "math.ceil 返回的就是 int；张量或浮点数都不是槽位的个数",
    "{n} = ceil({value})": "{n} = ceil({value})",
    "capacity = ceil(capacity_factor * k * n_tokens / n_experts)": "capacity = ceil(capacity_factor * k * n_tokens / n_experts)",
    "router_probs {p} {dtype}, experts {x}, n_experts={e}": "router_probs {p} {dtype}，experts {x}，n_experts={e}",
    "E * sum_i f_i * P_i, f from the counts of experts, P the mean of router_probs over the tokens": "E * sum_i f_i * P_i：f 来自 experts 的计数，P 是 router_probs 在各 token 上的均值",
    "the gradient of {name}": "{name} 的梯度",
    "the gradient flows through P only: f comes from counts, which have none": "梯度只经过 P：f 来自计数，计数没有梯度",
    "your f_i are the mean probabilities: f_i is the fraction of the T * k assignments that go to expert i, counted from experts (torch.bincount)": "你的 f_i 是平均概率：f_i 应是 T * k 个分配中分给专家 i 的比例，从 experts 计数得到（torch.bincount）",
    "your f_i are counts: divide them by the number of assignments, T * k, so that they sum to 1": "你的 f_i 是计数：要除以分配的总数 T * k，使它们之和为 1",
    "your f_i are divided by T: there are T * k assignments (k per token), so f sums to 1 over the experts": "你的 f_i 除的是 T：分配共有 T * k 个（每个 token k 个），这样 f 在各专家上之和才为 1",
    "the factor E (n_experts) is missing: E * sum_i f_i P_i is 1 for a uniform routing": "少了因子 E（n_experts）：均匀路由时 E * sum_i f_i P_i 等于 1",
    "every expert gets the same count": "每个专家分到的数量相同",
    "every token to expert 0": "所有 token 都分给专家 0",
    "one expert gets no token": "有一个专家没有分到 token",
    "load_balancing_loss has no gradient in router_probs.": "load_balancing_loss 对 router_probs 没有梯度。",
    "compute P from router_probs with torch ops (no .item(), .detach() or numpy): the loss trains the router through P": "用 torch 运算从 router_probs 算出 P（不要用 .item()、.detach() 或 numpy）：这个损失正是通过 P 训练路由器的",
    "no gradient": "没有梯度",
    "d loss / d router_probs = E * f_i / T": "d loss / d router_probs = E * f_i / T",
    "x {x} {dtype}, E={e} experts (n, {d}) -> (n, {d}), k={k}, {normalize}": "x {x} {dtype}，E={e} 个专家 (n, {d}) -> (n, {d})，k={k}，{normalize}",
    "your answer runs every expert on every token and masks (or weights) the outputs: that spends E/k times the FLOPs. Group the assignments by expert (argsort, bincount, split) and call each expert on x[its tokens] only": "你的答案让每个专家处理了所有 token，再用掩码（或权重）筛选输出：这样花费的 FLOPs 是应有的 E/k 倍。应按专家把分配分组（argsort、bincount、split），每个专家只在 x[它的 token] 上调用",
    "your answer builds a tokens x experts x d_model tensor (every expert's output for every token): compute each expert's output for its own tokens only and add it back with index_add_": "你的答案构造了一个 token 数 x 专家数 x d_model 的张量（每个专家对每个 token 的输出）：每个专家只对自己的 token 计算输出，再用 index_add_ 加回去",
    "keep every tensor to the size of the assignments (T * k rows) or of x": "每个张量都不要超过分配的规模（T * k 行）或 x 的规模",
    "y[t] = sum over token t's k experts of weight * expert(x[t]), weights and experts from route": "y[t] = 对 token t 的 k 个专家求 weight * expert(x[t]) 之和，权重和专家来自 route",
    "{label}, expert {n} gets no token": "{label}，专家 {n} 没有分到 token",
    "{label}, expert {n} gets one token": "{label}，专家 {n} 只分到一个 token",
    "each output is not weighted: multiply each expert's output by its token's router weight before adding it back": "输出没有加权：每个专家的输出要先乘以该 token 的路由权重，再加回去",
    "the weight multiplies the expert's input: y = w * expert(x), the weight scales the expert's output (an expert is not linear)": "权重乘在了专家的输入上：应为 y = w * expert(x)，权重缩放的是专家的输出（专家不是线性的）",
    "your weights are not renormalised: pass normalize on to route": "你的权重没有重新归一化：要把 normalize 传给 route",
    "your weights are renormalised although normalize=False: pass normalize on to route": "normalize=False 时你的权重仍被重新归一化了：要把 normalize 传给 route",
    "equal probabilities are broken toward the higher expert index: check route": "概率并列时取了编号较大的专家：检查 route",
    "an expert is called more than once (one call per token or per slot): call each expert once, on all the tokens routed to it (argsort the flat expert ids, then split by bincount)": "有专家被调用了不止一次（每个 token 或每个位置调用一次）：每个专家只调用一次，处理分给它的全部 token（对展平的专家编号做 argsort，再按 bincount 切分）",
    "call each expert on exactly the tokens routed to it (the k choices of route), each once": "每个专家恰好在分给它的 token（route 选出的 k 个）上调用，各一次",
    "moe_forward does not call each expert once on exactly its tokens.": "moe_forward 没有让每个专家在恰好属于它的 token 上只调用一次。",
    "moe_forward creates a tensor larger than grouped dispatch needs.": "moe_forward 创建的张量超出了按专家分组分发所需的大小。",
    "normalize not given (default True)": "未给 normalize（默认 True）",
    "rows per call, by expert: {rows}": "按专家列出每次调用的行数：{rows}",
    "one call per expert on {counts} rows": "每个专家调用一次，行数为 {counts}",
    "at most {n} elements per tensor": "每个张量最多 {n} 个元素",
    "experts[t] are the indices of token t's k most probable experts, most probable first, ties toward the lower index": "experts[t] 是 token t 概率最大的 k 个专家的编号，概率大的在前，并列时取编号较小的",
    "weights are the softmax probabilities (over the E experts) of the chosen experts, divided by their sum over the k when normalize": "weights 是选中专家的 softmax 概率（在 E 个专家上计算），normalize 时再除以这 k 个概率之和",
    "x {x} {dtype}, w_gate {w}, k={k}, {normalize}": "x {x} {dtype}，w_gate {w}，k={k}，{normalize}",
    "{name} of route": "route 的 {name}",
    "{label} (integer logits: ties)": "{label}（整数 logits：有并列）",
    "equal probabilities are broken toward the higher expert index: sort with torch.sort(probs, dim=-1, descending=True, stable=True), which keeps equal values in index order": "概率并列时取了编号较大的专家：用 torch.sort(probs, dim=-1, descending=True, stable=True) 排序，它让相等的值保持编号顺序",
    "your experts are listed by index: list each token's k experts most probable first": "你的专家是按编号排列的：每个 token 的 k 个专家应按概率从大到小排列",
    "the softmax is over the tokens (dim 0): each token's probabilities are over the E experts, dim=-1": "softmax 是在 token 维（dim 0）上做的：每个 token 的概率应在 E 个专家上计算，dim=-1",
    "your weights are not renormalised: with normalize=True divide the k probabilities by their sum, weights / weights.sum(-1, keepdim=True)": "你的权重没有重新归一化：normalize=True 时要把这 k 个概率除以它们的和，weights / weights.sum(-1, keepdim=True)",
    "your weights are renormalised although normalize=False: then they are the softmax probabilities themselves (Switch Transformer, DeepSeek's unnormalised variant)": "normalize=False 时你的权重仍被重新归一化了：这时权重就是 softmax 概率本身（Switch Transformer 以及 DeepSeek 不归一化的变体）",
    "your softmax is over the k chosen logits (after the top-k): that renormalises them; the softmax goes over all E experts first, then the top-k picks": "你的 softmax 只在选中的 k 个 logits 上做（在 top-k 之后）：这等于重新归一化；应先在全部 E 个专家上做 softmax，再由 top-k 挑选",
    "your experts are right up to ties: among equal probabilities the order is yours (torch.topk promises none); sort with torch.sort(probs, dim=-1, descending=True, stable=True), which keeps equal values in index order, the lower index first": "除了并列的顺序，你的专家都对：概率相等时的顺序由你的代码决定（torch.topk 不保证任何顺序）；用 torch.sort(probs, dim=-1, descending=True, stable=True) 排序，它让相等的值保持编号顺序，编号小的在前",
    "{label} (the worked example)": "{label}（前面手算的例子）",
    "route should return a pair (weights, experts), got {got}": "route 应返回一对 (weights, experts)，得到的是 {got}",
    "the signature is {signature}": "签名是 {signature}",
    "experts should be a long tensor (torch.int64) of expert indices.": "experts 应是存放专家编号的 long 张量（torch.int64）。",
    "the pair is in the other order: return (weights, experts), the weights first": "这一对的顺序反了：应返回 (weights, experts)，权重在前",
    "the indices torch.sort or torch.topk return are long already": "torch.sort 或 torch.topk 返回的下标本来就是 long",
    "logits {shape} {dtype}, mean {shift}": "logits {shape} {dtype}，均值 {shift}",
    "mean over the tokens of torch.logsumexp(logits, dim=-1) ** 2": "对各 token 的 torch.logsumexp(logits, dim=-1) ** 2 取均值",
    "the square is missing: the mean of logsumexp(logits, -1) ** 2": "少了平方：应是 logsumexp(logits, -1) ** 2 的均值",
    "your loss is a sum over the tokens: take the mean": "你的损失是对各 token 求和：应取均值",
    "your loss squares the mean: square each token's logsumexp, then average": "你的损失是先取均值再平方：应先对每个 token 的 logsumexp 平方，再取平均",
    "the logsumexp is over the wrong dim: over the experts, the last dim": "logsumexp 的维度不对：应在专家维，即最后一维上计算",
    "log(sum(exp(logits))) overflows for large logits: use torch.logsumexp, which subtracts the max first": "logits 很大时 log(sum(exp(logits))) 会溢出：用 torch.logsumexp，它会先减去最大值",
}


def po_entries() -> str:
    out = []
    for msgid, msgstr in ZH.items():
        fmt = "#, python-brace-format\n" if "{" in msgid else ""
        out.append(f"{fmt}msgid {_quote(msgid)}\nmsgstr {_quote(msgstr)}\n")
    return "\n".join(out)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def missing() -> list:
    from babel.messages.extract import extract_from_dir

    from autograder.tooling import messages

    known = {m.id for m in messages.read("zh_CN") if m.id} | set(ZH)
    found = extract_from_dir(
        str(__import__("pathlib").Path(__file__).resolve().parents[2] / "student" / "byhand" / "moe"),
        method_map=[("**.py", messages.extract_ast)],
        keywords=dict(messages.KEYWORDS),
    )
    return sorted({m for _, _, m, _, _ in found if m and m not in known})


if __name__ == "__main__":
    if "--missing" in sys.argv:
        print("\n".join(map(repr, missing())) or "none")
    else:
        print(po_entries())
