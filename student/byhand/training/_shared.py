"""What several of lesson 12's exercises share: the float64 dtype of the references."""

from __future__ import annotations

import torch

F64 = torch.float64
