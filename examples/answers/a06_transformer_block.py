"""Example answers for lesson 06_transformer_block: the example class, the classic mistakes (Pre/Post
swapped, a missing residual, no final LayerNorm in the Pre-LN stack, sin/cos swapped, a wrong
frequency base, ...), and correct answers written differently. Keys are answer-cell ids."""

PE_OK = """
def positional_encoding(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * omega)
    pe[:, 1::2] = torch.cos(pos * omega)
    return pe.float()
"""

BLOCK_OK = """
class EncoderBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def _sa(self, t, pad_mask):
        kpm = None if pad_mask is None else ~pad_mask
        return self.drop(self.self_attn(t, t, t, key_padding_mask=kpm, need_weights=False)[0])

    def _ff(self, t):
        return self.drop(self.linear2(self.drop(F.relu(self.linear1(t)))))

    def forward(self, x, pad_mask=None):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), pad_mask)
            x = x + self._ff(self.norm2(x))
        else:
            x = self.norm1(x + self._sa(x, pad_mask))
            x = self.norm2(x + self._ff(x))
        return x
"""

ENCODER_OK = """
class Encoder(nn.Module):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.layers = nn.ModuleList([EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=norm_first)
                                     for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(self, x, pad_mask=None):
        for layer in self.layers:
            x = layer(x, pad_mask)
        if self.norm is not None:
            x = self.norm(x)
        return x
"""

MODEL_OK = """
class TinyTransformer(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first=norm_first)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens, pad_mask=None):
        x = self.embed(tokens) + self.pe[: tokens.shape[1]].to(self.embed.weight.dtype)
        return self.head(self.encoder(x, pad_mask))
"""

ALL_OK = {
    "positional_encoding_answer": PE_OK,
    "EncoderBlock_answer": BLOCK_OK,
    "Encoder_answer": ENCODER_OK,
    "TinyTransformer_answer": MODEL_OK,
}

MISTAKES = {
    "pre_post_swapped": dict(
        cells={"EncoderBlock_answer": BLOCK_OK.replace("if self.norm_first:", "if not self.norm_first:")},
        question="EncoderBlock",
        hint="swapped",
    ),
    "dropout_on_in_eval_mode": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "self.drop = nn.Dropout(dropout)", "self.drop = lambda t: F.dropout(t, dropout)"
            )
        },
        question="EncoderBlock",
        hint="eval mode dropout must do nothing",
    ),
    "dropout_never_applied": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)",
                "nn.MultiheadAttention(d_model, n_heads, batch_first=True)",
            ).replace("self.drop = nn.Dropout(dropout)", "self.drop = nn.Identity()")
        },
        question="EncoderBlock",
        hint="never applies dropout",
    ),
    # the exercise's first wording, "apply dropout to each sublayer's output", taken to the letter
    "dropout_not_after_relu": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "self.drop(F.relu(self.linear1(t)))", "F.relu(self.linear1(t))"
            )
        },
        question="EncoderBlock",
        hint="dropout is missing after the ReLU",
    ),
    "dropout_attention_weights_kept": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)",
                "nn.MultiheadAttention(d_model, n_heads, batch_first=True)",
            )
        },
        question="EncoderBlock",
        hint="attention weights are not dropped",
    ),
    "dropout_on_the_residual_stream": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "return self.drop(self.self_attn(t, t, t, key_padding_mask=kpm, need_weights=False)[0])",
                "return self.self_attn(t, t, t, key_padding_mask=kpm, need_weights=False)[0]",
            )
            .replace(
                "return self.drop(self.linear2(self.drop(F.relu(self.linear1(t)))))",
                "return self.linear2(self.drop(F.relu(self.linear1(t))))",
            )
            .replace("        return x\n", "        return self.drop(x)\n")
        },
        question="EncoderBlock",
        hint="residual stream",
    ),
    "dropout_not_rescaled": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "self.drop = nn.Dropout(dropout)",
                "self.drop = lambda t: t * (torch.rand_like(t) >= dropout) if self.training else t",
            )
        },
        question="EncoderBlock",
        hint="keeps the kept values as they are",
    ),
    "missing_residual": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "x = x + self._sa(self.norm1(x), pad_mask)", "x = self._sa(self.norm1(x), pad_mask)"
            ).replace("x = x + self._ff(self.norm2(x))", "x = self._ff(self.norm2(x))")
        },
        question="EncoderBlock",
        hint="residual",
    ),
    "missing_ffn_residual_post_ln": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "x = self.norm2(x + self._ff(x))", "x = self.norm2(self._ff(x))"
            )
        },
        question="EncoderBlock",
        hint="residual connection around the feed-forward",
    ),
    "post_ln_norms_the_sublayer": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "x = self.norm1(x + self._sa(x, pad_mask))", "x = x + self.norm1(self._sa(x, pad_mask))"
            ).replace("x = self.norm2(x + self._ff(x))", "x = x + self.norm2(self._ff(x))")
        },
        question="EncoderBlock",
        hint="normalizes the sum",
    ),
    "pad_mask_not_inverted": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "kpm = None if pad_mask is None else ~pad_mask", "kpm = pad_mask"
            )
        },
        question="EncoderBlock",
        hint="polarity",
    ),
    "pad_mask_ignored": dict(
        cells={"EncoderBlock_answer": BLOCK_OK.replace("key_padding_mask=kpm", "key_padding_mask=None")},
        question="EncoderBlock",
        hint="ignores the padding",
    ),
    "no_relu": dict(
        cells={"EncoderBlock_answer": BLOCK_OK.replace("F.relu(self.linear1(t))", "self.linear1(t)")},
        question="EncoderBlock",
        hint="ReLU",
    ),
    "batch_first_forgotten": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)",
                "nn.MultiheadAttention(d_model, n_heads, dropout=dropout)",
            )
        },
        question="EncoderBlock",
        hint="batch_first",
    ),
    "gelu_instead_of_relu": dict(
        cells={"EncoderBlock_answer": BLOCK_OK.replace("F.relu(", "F.gelu(")},
        question="EncoderBlock",
        hint="GELU",
    ),
    "norms_swapped": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace(
                "x = x + self._sa(self.norm1(x), pad_mask)", "x = x + self._sa(self.norm2(x), pad_mask)"
            ).replace("x = x + self._ff(self.norm2(x))", "x = x + self._ff(self.norm1(x))")
        },
        question="EncoderBlock",
        hint="norm1 and norm2 are swapped",
    ),
    "block_forward_misspelled": dict(
        cells={"EncoderBlock_answer": BLOCK_OK.replace("def forward(", "def foward(")},
        question="EncoderBlock",
        hint="`foward` looks like a misspelling of `forward`",
        not_hints=("not done yet",),
    ),
    # two bugs at once
    "no_residual_and_gelu": dict(
        cells={
            "EncoderBlock_answer": BLOCK_OK.replace("F.relu(", "F.gelu(")
            .replace("x = x + self._sa(self.norm1(x), pad_mask)", "x = self._sa(self.norm1(x), pad_mask)")
            .replace("x = x + self._ff(self.norm2(x))", "x = self._ff(self.norm2(x))")
        },
        question="EncoderBlock",
        hint=("two mistakes at once", "residual connection is missing around both", "GELU"),
    ),
    "encoder_python_list": dict(
        cells={
            "Encoder_answer": ENCODER_OK.replace(
                "self.layers = nn.ModuleList([EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=norm_first)\n"
                "                                     for _ in range(n_layers)])",
                "self.layers = [EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=norm_first)\n"
                "                       for _ in range(n_layers)]",
            )
        },
        question="Encoder",
        hint="use nn.ModuleList",
    ),
    "encoder_one_block_shared": dict(
        cells={
            "Encoder_answer": ENCODER_OK.replace(
                "nn.ModuleList([EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=norm_first)\n"
                "                                     for _ in range(n_layers)])",
                "nn.ModuleList([EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=norm_first)] * n_layers)",
            )
        },
        question="Encoder",
        hint="one module is shared by every block",
    ),
    "encoder_mask_not_passed": dict(
        cells={"Encoder_answer": ENCODER_OK.replace("x = layer(x, pad_mask)", "x = layer(x)")},
        question="Encoder",
        hint="mask",
    ),
    "encoder_dropout_not_passed": dict(
        cells={
            "Encoder_answer": ENCODER_OK.replace(
                "EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=norm_first)",
                "EncoderBlock(d_model, n_heads, d_ff, norm_first=norm_first)",
            )
        },
        question="Encoder",
        hint="dropout never reaches the blocks",
    ),
    "model_dropout_not_passed": dict(
        cells={
            "TinyTransformer_answer": MODEL_OK.replace(
                "Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first=norm_first)",
                "Encoder(n_layers, d_model, n_heads, d_ff, norm_first=norm_first)",
            )
        },
        question="TinyTransformer",
        hint="dropout never reaches the encoder",
    ),
    # the original Transformer's dropout on embed + PE: this lesson's model has none outside the blocks
    "model_dropout_on_embeddings": dict(
        cells={
            "TinyTransformer_answer": MODEL_OK.replace(
                "        self.head = nn.Linear(d_model, vocab_size)\n",
                "        self.head = nn.Linear(d_model, vocab_size)\n        self.drop = nn.Dropout(dropout)\n",
            ).replace(
                "return self.head(self.encoder(x, pad_mask))",
                "return self.head(self.encoder(self.drop(x), pad_mask))",
            )
        },
        question="TinyTransformer",
        hint="applied to the embeddings",
    ),
    "model_mask_ignored": dict(
        cells={"TinyTransformer_answer": MODEL_OK.replace("self.encoder(x, pad_mask)", "self.encoder(x)")},
        question="TinyTransformer",
        hint="ignores its pad_mask argument",
    ),
    "no_final_norm": dict(
        cells={
            "Encoder_answer": ENCODER_OK.replace(
                "        if self.norm is not None:\n            x = self.norm(x)\n", ""
            )
        },
        question="Encoder",
        hint="final LayerNorm",
    ),
    "norm_first_not_passed": dict(
        cells={
            "Encoder_answer": ENCODER_OK.replace(
                "EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=norm_first)",
                "EncoderBlock(d_model, n_heads, d_ff, dropout)",
            )
        },
        question="Encoder",
        hint="pass norm_first",
    ),
    "pe_sin_cos_swapped": dict(
        cells={
            "positional_encoding_answer": PE_OK.replace(
                "pe[:, 0::2] = torch.sin", "pe[:, 0::2] = torch.cos"
            ).replace("pe[:, 1::2] = torch.cos", "pe[:, 1::2] = torch.sin")
        },
        question="positional_encoding",
        hint="swapped",
    ),
    "pe_base_1000": dict(
        cells={"positional_encoding_answer": PE_OK.replace("10000.0 **", "1000.0 **")},
        question="positional_encoding",
        hint="base",
    ),
    "pe_exponent_without_the_2": dict(
        cells={
            "positional_encoding_answer": PE_OK.replace(
                "torch.arange(0, d_model, 2, dtype=torch.float64) / d_model",
                "torch.arange(d_model // 2, dtype=torch.float64) / d_model",
            )
        },
        question="positional_encoding",
        hint="base",
    ),
    "pe_concatenated": dict(
        cells={
            "positional_encoding_answer": """
def positional_encoding(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.cat([torch.sin(pos * omega), torch.cos(pos * omega)], dim=-1).float()
"""
        },
        question="positional_encoding",
        hint="interleave",
    ),
    # issue 51's trial: a numpy table passed as a tensor (the wire converted it) and cost TinyTransformer
    "pe_returns_numpy": dict(
        cells={
            "positional_encoding_answer": """
import numpy as np

def positional_encoding(max_len, d_model):
    pos = np.arange(max_len)[:, None]
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((max_len, d_model), dtype=np.float32)
    pe[:, 0::2] = np.sin(pos * omega)
    pe[:, 1::2] = np.cos(pos * omega)
    return pe
"""
        },
        question="positional_encoding",
        hint="not a numpy array",
    ),
    # the exercise keeps the table out of the state dict (persistent=False, or computed in forward)
    "model_pe_persistent_buffer": dict(
        cells={"TinyTransformer_answer": MODEL_OK.replace(", persistent=False", "")},
        question="TinyTransformer",
        hint="persistent=False",
    ),
    "model_logits_cast_to_float32": dict(
        cells={
            "TinyTransformer_answer": MODEL_OK.replace(
                "return self.head(self.encoder(x, pad_mask))",
                "return self.head(self.encoder(x, pad_mask)).float()",
            )
        },
        question="TinyTransformer",
        hint="casts to float32",
    ),
    "model_without_pe": dict(
        cells={
            "TinyTransformer_answer": MODEL_OK.replace(
                "x = self.embed(tokens) + self.pe[: tokens.shape[1]].to(self.embed.weight.dtype)",
                "x = self.embed(tokens)",
            )
        },
        question="TinyTransformer",
        hint="positional encoding is missing",
    ),
}

ALTERNATIVES = {
    # sin/cos by exp/log in float32, interleaved by stack + flatten; the block's attention by hand from
    # self_attn's own parameters, torch.where for the mask, padding outputs zeroed; nn.Identity as the
    # Post-LN "norm"; the model computes PE in forward and embeds with F.embedding
    "by_hand": {
        "positional_encoding_answer": """
def positional_encoding(max_len, d_model):
    pos = torch.arange(max_len).float().unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    return torch.stack([torch.sin(pos * div), torch.cos(pos * div)], dim=-1).flatten(1)
""",
        "EncoderBlock_answer": """
class EncoderBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.h, self.pre, self.p = n_heads, norm_first, dropout
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def attend(self, t, pad_mask):
        B, L, D = t.shape
        q, k, v = F.linear(t, self.self_attn.in_proj_weight, self.self_attn.in_proj_bias).chunk(3, dim=-1)
        q, k, v = (z.unflatten(-1, (self.h, -1)).transpose(1, 2) for z in (q, k, v))
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) * (q.shape[-1] ** -0.5)
        if pad_mask is not None:
            s = torch.where(pad_mask[:, None, None, :], s, torch.full_like(s, -torch.inf))
        a = F.dropout(s.softmax(-1), self.p, self.training)
        o = (a @ v).transpose(1, 2).reshape(B, L, D)
        return F.dropout(self.self_attn.out_proj(o), self.p, self.training)

    def forward(self, x, pad_mask=None):
        drop = lambda t: F.dropout(t, self.p, self.training)
        ffn = lambda t: drop(self.linear2(drop(torch.clamp(self.linear1(t), min=0))))
        if self.pre:
            y = x + self.attend(self.norm1(x), pad_mask)
            y = y + ffn(self.norm2(y))
        else:
            y = self.norm2((h := self.norm1(x + self.attend(x, pad_mask))) + ffn(h))
        if pad_mask is not None:
            y = y.masked_fill(~pad_mask[..., None], 0.0)
        return y
""",
        "Encoder_answer": """
import functools

class Encoder(nn.Module):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(n_layers):
            self.layers.append(EncoderBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x, pad_mask=None):
        return self.norm(functools.reduce(lambda h, layer: layer(h, pad_mask), self.layers, x))
""",
        "TinyTransformer_answer": """
class TinyTransformer(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens, pad_mask=None):
        e = F.embedding(tokens, self.embed.weight)
        pe = positional_encoding(self.max_len, e.shape[-1])[: tokens.shape[1]]
        return self.head(self.encoder(e + pe.to(e), pad_mask=pad_mask))
""",
    },
    # plain loops for the table, a sublayer helper, prints and warnings
    "loops_and_prints": {
        "positional_encoding_answer": """
def positional_encoding(max_len, d_model):
    pe = torch.empty(max_len, d_model)
    for p in range(max_len):
        for i in range(0, d_model, 2):
            angle = p / 10000 ** (i / d_model)
            pe[p, i] = math.sin(angle)
            pe[p, i + 1] = math.cos(angle)
    return pe
""",
        "EncoderBlock_answer": "import warnings\n"
        + BLOCK_OK.replace(
            "    def forward(self, x, pad_mask=None):\n",
            "    def forward(self, x, pad_mask=None):\n        print('block input', tuple(x.shape))\n"
            "        warnings.warn('just a warning')\n",
        ),
    },
    # the table built in numpy and handed back as a torch tensor; the model keeps a float64 copy in a
    # non-persistent buffer under another name and casts it to the embeddings' dtype
    "numpy_table_as_tensor": {
        "positional_encoding_answer": """
import numpy as np

def positional_encoding(max_len, d_model):
    pos = np.arange(max_len)[:, None]
    ang = pos / np.power(10000.0, np.arange(0, d_model, 2) / d_model)
    pe = np.empty((max_len, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return torch.from_numpy(pe).float()
""",
        "TinyTransformer_answer": """
class TinyTransformer(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first=norm_first)
        self.head = nn.Linear(d_model, vocab_size)
        self.register_buffer("table", positional_encoding(max_len, d_model).double(), persistent=False)

    def forward(self, tokens, pad_mask=None):
        e = self.embed(tokens)
        e = e + self.table[: tokens.size(1)].unsqueeze(0).to(dtype=e.dtype)
        return self.head(self.encoder(e, pad_mask=pad_mask))
""",
    },
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {"positional_encoding_answer": PE_OK, "EncoderBlock_answer": BLOCK_OK},
    "dave_pre_post_swapped": {**ALL_OK, **MISTAKES["pre_post_swapped"]["cells"]},
    "erin_no_final_norm_sin_cos_swapped": {
        **ALL_OK,
        **MISTAKES["no_final_norm"]["cells"],
        **MISTAKES["pe_sin_cos_swapped"]["cells"],
    },
}

MAX = {"positional_encoding": 2, "EncoderBlock": 4, "Encoder": 2, "TinyTransformer": 2}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {**{q: 0 for q in MAX}, "positional_encoding": 2, "EncoderBlock": 4},
    # Encoder and TinyTransformer call the student's own block: a wrong one is replaced by the reference
    "dave_pre_post_swapped": {**MAX, "EncoderBlock": 0, "Encoder": 2, "TinyTransformer": 2},
    # the model calls the student's own Encoder and positional_encoding (the reference ones when they fail)
    "erin_no_final_norm_sin_cos_swapped": {
        **MAX,
        "positional_encoding": 0,
        "Encoder": 0,
        "TinyTransformer": 2,
    },
}
