"""exercise: router_z_loss
kind: right
max-shifted log-sum-exp by hand over flattened positions"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def router_z_loss(logits):
    flat = logits.reshape(-1, logits.shape[-1])
    m = flat.max(dim=-1, keepdim=True).values
    lse = m.squeeze(-1) + torch.log(torch.exp(flat - m).sum(-1))
    return lse.pow(2).mean()
