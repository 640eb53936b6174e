"""exercise: router_z_loss
kind: wrong
naive log(sum(exp)) overflows"""

# ruff: noqa  (an answer cell: route and the notebook imports come from the lesson)

import math

import torch
import torch.nn.functional as F


def router_z_loss(logits):
    return (torch.log(torch.exp(logits).sum(-1)) ** 2).mean()
