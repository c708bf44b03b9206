"""cornellius-gp/linear_operator PR #122: Speed up MatmulLinearOperator.to_dense() for DiagLazyTensors — times `(D1 @ A @ D2).to_dense()` with diagonal D1, D2 and a dense A."""
import torch
from linear_operator.operators import DenseLinearOperator, DiagLinearOperator


def bench_diag_sandwich_to_dense(device):
    torch.manual_seed(0)
    n = 512
    D1 = DiagLinearOperator(torch.rand(n, device=device) + 0.5)
    D2 = DiagLinearOperator(torch.rand(n, device=device) + 0.5)
    A = DenseLinearOperator(torch.randn(n, n, device=device))
    # to_dense() is cached on the operator, so the (cheap) product is rebuilt on every call.
    return lambda: (D1 @ A @ D2).to_dense()
