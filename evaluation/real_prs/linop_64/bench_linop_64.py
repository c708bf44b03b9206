"""cornellius-gp/linear_operator PR #64: Catch some warnings in linear_cg tests (tests only, control) — times `inv_quad_logdet` on a dense kernel matrix."""
import torch
from linear_operator.operators import DenseLinearOperator


def bench_inv_quad_logdet(device):
    torch.manual_seed(0)
    n = 256
    X = torch.randn(n, 5, device=device)
    K = torch.exp(-torch.cdist(X, X).square() / 2) + 1e-1 * torch.eye(n, device=device)
    rhs = torch.randn(n, 1, device=device)
    # Rebuilt per call: LinearOperators cache their Cholesky factor.
    return lambda: DenseLinearOperator(K).inv_quad_logdet(rhs, logdet=True)
