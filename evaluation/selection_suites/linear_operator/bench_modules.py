"""linear_operator: operators besides the real_prs cases (selection's replay)."""
import torch
from linear_operator.operators import DiagLinearOperator, LowRankRootLinearOperator


def bench_diag_solve(device):
    torch.manual_seed(0)
    d = DiagLinearOperator(torch.rand(4096, device=device) + 0.5)
    rhs = torch.randn(4096, 8, device=device)
    return lambda: d.solve(rhs)


def bench_low_rank_root_matmul(device):
    torch.manual_seed(0)
    op = LowRankRootLinearOperator(torch.randn(512, 16, device=device))
    rhs = torch.randn(512, 4, device=device)
    return lambda: op @ rhs
