"""cornellius-gp/linear_operator PR #93: linear_operator cat_rows performance improvement — times `LinearOperator.cat_rows(..., generate_roots=True, generate_inv_roots=True)` on a kernel matrix with a Cholesky root, as when fantasizing new GP observations."""
import torch
from linear_operator.operators import DenseLinearOperator


def bench_cat_rows_with_inv_roots(device):
    torch.manual_seed(0)
    n, k = 256, 4   # n training points, k appended (fantasy) points
    X = torch.randn(n + k, 5, dtype=torch.float64, device=device)
    K = torch.exp(-torch.cdist(X, X).square() / 2) + 1e-2 * torch.eye(n + k, dtype=torch.float64, device=device)
    A = DenseLinearOperator(K[:n, :n])
    cross_mat, new_mat = K[n:, :n], K[n:, n:]
    # Populate A's (cached) root and root-inverse decompositions once, as a fitted GP would have.
    A.root_decomposition()
    A.root_inv_decomposition()
    return lambda: A.cat_rows(cross_mat, new_mat, generate_roots=True, generate_inv_roots=True)
