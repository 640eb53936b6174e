"""exercise: router_z_loss
kind: wrong
square of the mean"""

import math

import torch
import torch.nn.functional as F

def router_z_loss(logits):
    return torch.logsumexp(logits, dim=-1).mean() ** 2
