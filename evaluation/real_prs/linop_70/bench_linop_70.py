"""cornellius-gp/linear_operator PR #70: Add short path for LinearOperator.repeat() — times building a batched `KroneckerProductLinearOperator` (data kernel x task covariance) and taking its diagonal."""
import torch
from linear_operator.operators import DenseLinearOperator, KernelLinearOperator, KroneckerProductLinearOperator


def _rbf(x1, x2, lengthscale):
    x1 = x1.div(lengthscale)
    x2 = x2.div(lengthscale)
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).square().sum(-1).div(-2.0).exp()


def bench_kronecker_kernel_diagonal(device):
    torch.manual_seed(0)
    b, n, t = 4, 128, 4
    x = torch.randn(b, n, 3, device=device)
    lengthscale = torch.ones(b, 1, 3, device=device)
    task = torch.randn(b, t, t, device=device)
    task = DenseLinearOperator(task @ task.mT + torch.eye(t, device=device))

    # The Kronecker constructor expands every factor to the common batch shape; for a
    # KernelLinearOperator that goes through LinearOperator.repeat(1, 1, 1), the changed path.
    # Everything is rebuilt per call because operators cache their results.
    def run():
        data = KernelLinearOperator(x, x, covar_func=_rbf, lengthscale=lengthscale)
        return KroneckerProductLinearOperator(data, task).diagonal()

    return run
