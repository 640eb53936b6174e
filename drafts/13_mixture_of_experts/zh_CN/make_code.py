"""Writes code/13_mixture_of_experts.md: each code cell of the draft (plain cells as in the lesson,
graded ones as the student notebook will have them) with its comments, docstrings, printed text and
assert messages in Chinese, under the hash of its English source. The Chinese is given here as
(English, Chinese) replacements per cell, so the code itself cannot drift from the English."""

from __future__ import annotations

import copy
from pathlib import Path

from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

from autograder import course
from autograder.tooling.authoring import parse
from autograder.tooling.translations import en_hash

HERE = Path(__file__).resolve().parent
SELF_CHECK = ("# Self-check:", "# 自检：")

ZH = {
    "cell-003": [
        ("# 4 tokens, d = 4", "# 4 个 token，d = 4"),
        ("# equal values keep index order", "# 相等的值保持编号顺序"),
        ('"top 2 experts:"', '"前 2 个专家："'),
    ],
    "route_answer": [
        (
            '"""x (T, d), w_gate (d, E) -> (weights (T, k), experts (T, k) long)."""',
            '"""x (T, d)，w_gate (d, E) -> (weights (T, k)，experts (T, k) 为 long)。"""',
        )
    ],
    "route": [
        (
            "# Self-check: the worked example above, ties, k from 1 to E, normalize True and False, float32 and\n# float64, random gates whose logits have a non-zero mean.",
            "# 自检：上面手算的例子、并列、k 从 1 到 E、normalize 取 True 和 False、float32 和 float64，\n# 以及 logits 均值不为零的随机路由器权重。",
        )
    ],
    "cell-007": [('"your route should pick the table\'s experts"', '"你的 route 应选出表中的专家"')],
    "cell-009": [
        ("# (T*k,) the expert of each assignment", "# (T*k,) 每个分配的专家"),
        ("# assignments grouped by expert", "# 按专家分组的分配"),
        ('"experts of the assignments:"', '"各分配的专家："'),
        ('"sorted by expert:          "', '"按专家排序：    "'),
        ('"their tokens:              "', '"对应的 token：  "'),
        ('"tokens per expert:         "', '"每个专家的 token 数："'),
    ],
    "moe_forward_answer": [
        (
            '"""x (T, d), w_gate (d, E), experts: E modules (n, d) -> (n, d). Returns y (T, d)."""',
            '"""x (T, d)，w_gate (d, E)，experts：E 个模块 (n, d) -> (n, d)。返回 y (T, d)。"""',
        )
    ],
    "moe_forward": [
        (
            "# Self-check: against a per-token loop on random inputs (E from 4 to 8, k from 1 to 3, an expert\n# that gets no token, float32 and float64), with the rows each expert is called on and the largest\n# tensor your code creates.",
            "# 自检：在随机输入上与逐个 token 的循环比较（E 从 4 到 8，k 从 1 到 3，有一个专家分不到 token，\n# float32 和 float64），并统计每个专家被调用时的行数和你的代码创建的最大张量。",
        )
    ],
    "cell-014": [
        ('f"largest difference from the per-token loop: {', 'f"与逐个 token 循环的最大差异：{'),
        (
            '"your moe_forward should equal the per-token loop"',
            '"你的 moe_forward 应与逐个 token 的循环结果相同"',
        ),
    ],
    "expert_capacity_answer": [
        (
            '"""The slots of each expert: ceil(capacity_factor * k * n_tokens / n_experts)."""',
            '"""每个专家的槽位数：ceil(capacity_factor * k * n_tokens / n_experts)。"""',
        ),
        (
            '"""weights, experts (T, k) -> kept (T, k) bool: each expert keeps its first `capacity` tokens."""',
            '"""weights、experts (T, k) -> kept (T, k) 布尔张量：每个专家保留它的前 `capacity` 个 token。"""',
        ),
    ],
    "expert_capacity": [
        (
            "# Self-check: capacity factors 0.5, 1.0 and 1.25, k of 1 and 2, T not a multiple of E.",
            "# 自检：容量因子取 0.5、1.0 和 1.25，k 取 1 和 2，T 不是 E 的倍数。",
        )
    ],
    "capacity_keep": [
        (
            "# Self-check: the example above, an expert that gets no token, all tokens to one expert, capacity\n# 0 and capacity T, k of 1 to 3.",
            "# 自检：上面的例子、分不到 token 的专家、所有 token 都给同一个专家、容量为 0 和容量为 T，\n# k 从 1 到 3。",
        )
    ],
    "cell-019": [
        (
            'f"capacity factor {factor}: C = {cap}, dropped tokens {dropped}"',
            'f"容量因子 {factor}：C = {cap}，被丢弃的 token {dropped}"',
        ),
        ("# tokens 3, 5 and 7 dropped at C = 2", "# C = 2 时 token 3、5、7 被丢弃"),
    ],
    "load_balancing_loss_answer": [
        (
            '"""router_probs (T, E), experts (T, k) -> scalar: E * sum_i f_i * P_i."""',
            '"""router_probs (T, E)，experts (T, k) -> 标量：E * sum_i f_i * P_i。"""',
        ),
        (
            '"""logits (..., E) -> scalar: mean of logsumexp(logits, -1) ** 2."""',
            '"""logits (..., E) -> 标量：logsumexp(logits, -1) ** 2 的均值。"""',
        ),
    ],
    "load_balancing_loss": [
        (
            "# Self-check: values and gradients against a float64 reference; balanced and collapsed routings,\n# k of 1 to 3, an expert with no token.",
            "# 自检：数值和梯度都与 float64 参考实现比较；均衡的路由和坍缩的路由，k 从 1 到 3，\n# 有一个专家分不到 token。",
        )
    ],
    "router_z_loss": [
        (
            "# Self-check: logits of 2 and 3 dims, shifted by a large constant (logsumexp must stay finite).",
            "# 自检：2 维和 3 维的 logits，整体加上一个很大的常数（logsumexp 必须仍是有限值）。",
        )
    ],
    "cell-024": [
        ("# every expert gets T/E tokens", "# 每个专家分到 T/E 个 token"),
        ("# every token to expert 0", "# 所有 token 都给专家 0"),
        ('f"balanced, uniform probabilities: {', 'f"均衡的路由、均匀的概率：{'),
        ('f"collapsed, peaked probabilities: {', 'f"坍缩的路由、集中的概率：{'),
    ],
    "cell-026": [
        ("# (T, 1)", "# (T, 1)"),
        ("# (E,) summed over the tokens", "# (E,) 对各 token 求和"),
        ('"tokens per expert:"', '"每个专家的 token 数："'),
        ('"balancing loss, gradient per expert:"', '"负载均衡损失，每个专家的梯度："'),
        (
            "\"the busy expert's logits go down, the others' up\"",
            '"繁忙专家的 logits 应被压低，其余的应被抬高"',
        ),
        ('"z-loss, gradient of token 0:"', '"z 损失，token 0 的梯度："'),
    ],
    "cell-028": [
        (
            '"""Lesson 9\'s expert: w2(silu(w1(x)) * w3(x))."""',
            '"""第 9 课的专家：w2(silu(w1(x)) * w3(x))。"""',
        ),
        (
            '"""Shared experts plus k of n_experts routed ones; capacity_factor None keeps every token."""',
            '"""共享专家，加上 n_experts 个路由专家中的 k 个；capacity_factor 为 None 时保留所有 token。"""',
        ),
        ("# (B, T, d) -> (B*T, d)", "# (B, T, d) -> (B*T, d)"),
        ("# (B*T, k) each", "# 各为 (B*T, k)"),
        ('# expert "n_experts": dropped', "# 编号 n_experts 表示被丢弃"),
        ("# the last group: dropped", "# 最后一组是被丢弃的"),
        (
            '"""Lesson 9\'s pre-RMSNorm block with the MoE feed-forward; attention is torch\'s own, causal."""',
            '"""第 9 课的前置均方根归一化块，前馈全连接层换成 MoE；注意力用 torch 自带的，带因果掩码。"""',
        ),
        ("# True = may not attend", "# True 表示不可关注"),
    ],
    "cell-030": [
        (
            "f\"dropped assignments: {ffn.aux['dropped']} of 24; capacity {cap} per expert\"",
            "f\"被丢弃的分配：24 个中的 {ffn.aux['dropped']} 个；每个专家的容量为 {cap} 个\"",
        ),
        ('"rows of the dropped tokens are all zero:"', '"被丢弃的 token 所在的行全为零："'),
    ],
    "cell-032": [
        (
            '"""(active, total) parameters of one MoE feed-forward: router, shared and routed SwiGLU experts."""',
            '"""一个 MoE 前馈全连接层的 (激活参数, 总参数)：路由器、共享专家和路由专家（都是 SwiGLU）。"""',
        ),
        ("# 32 layers, billions", "# 32 层，单位：十亿"),
        (
            'f"Mixtral 8x7B, feed-forward layers: active {active:.1f} B, total {total:.1f} B parameters"',
            'f"Mixtral 8x7B 的前馈全连接层：激活参数 {active:.1f} B，总参数 {total:.1f} B"',
        ),
        (
            'f"their FLOPs per token: {2 * active:.1f} G (a dense layer of the total size: {2 * total:.1f} G)"',
            'f"它们每 token 的 FLOPs：{2 * active:.1f} G（同等总参数的稠密层：{2 * total:.1f} G）"',
        ),
        ('"the count should match the module\'s parameters"', '"这个计数应与模块的参数个数一致"'),
        (
            'f"a small layer (d=64, d_ff=96, 8 routed, 1 shared): active {small_active:,}, total {counted:,}"',
            'f"一个小层（d=64，d_ff=96，8 个路由专家，1 个共享专家）：激活参数 {small_active:,}，总参数 {counted:,}"',
        ),
    ],
}


def released_cells():
    nb = parse((HERE.parent / "lesson.py").read_text(encoding="utf-8"))
    solution = {c["id"]: c for c in nb.cells}
    student = copy.deepcopy(nb)
    stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    student, _ = ClearSolutions(code_stub=stub, text_stub="YOUR ANSWER HERE").preprocess(student, {})
    student, _ = ClearHiddenTests().preprocess(student, {})
    for c in student.cells:
        if (
            c.cell_type == "code"
            and "setup" not in c.metadata.get("tags", ["x"])[:1]
            or c["id"] == "cell-028"
        ):
            yield c["id"], c.source if course.nbgrader_meta(solution[c["id"]]) else solution[c["id"]].source


def main():
    out = []
    for cell, source in released_cells():
        text = source
        for en, zh in ZH.get(cell, []):
            assert en in text, f"{cell}: {en!r} is not in the cell"
            text = text.replace(en, zh)
        out.append(f"<!-- {cell} en={en_hash(source)} -->\n{text}")
    missing = [c for c, _ in released_cells() if c not in ZH]
    path = HERE / "code" / "13_mixture_of_experts.md"
    path.write_text("\n\n".join(out) + "\n", encoding="utf-8")
    print(f"wrote {path}; cells with no Chinese: {missing}")


if __name__ == "__main__":
    main()
