"""Fused / blockwise softmax attention and the engines on other devices.

The fused path (torch's scaled_dot_product_attention) and the blockwise path must both equal the
explicit softmax(beta * scores) @ values; CUDA tests run only where CUDA is present.
"""

import numpy as np
import pytest
import torch

import attndyn
from attndyn import attention

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def explicit(q, k, v, mask, beta):
    s = torch.bmm(q, k.transpose(1, 2))
    return attention.aggregate(attention.softmax_weights(s, mask, beta=beta), v)


@pytest.mark.parametrize("block", [None, 7, 10**6])
@pytest.mark.parametrize("with_mask", [False, True])
def test_softmax_attention_equals_the_explicit_pattern(block, with_mask):
    g = torch.Generator().manual_seed(0)
    q, k = (
        torch.randn(3, 17, 4, dtype=torch.float64, generator=g),
        torch.randn(3, 17, 4, dtype=torch.float64, generator=g),
    )
    v = torch.randn(3, 17, 5, dtype=torch.float64, generator=g)
    mask = torch.rand(3, 17, generator=g) > 0.3 if with_mask else None
    if mask is not None:
        mask[:, 0] = True
    got = attention.softmax_attention(q, k, v, mask, beta=1.7, block=block)
    torch.testing.assert_close(got, explicit(q, k, v, mask, 1.7), rtol=1e-13, atol=1e-14)


def test_softmax_attention_gradcheck_fused_and_blockwise():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 6, 3, dtype=torch.float64, generator=g).requires_grad_(True) for _ in range(3))
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    for block in (None, 5):
        assert torch.autograd.gradcheck(
            lambda a, b, c, block=block: attention.softmax_attention(a, b, c, mask, beta=0.8, block=block), (q, k, v)
        )


def test_blockwise_path_holds_at_most_a_block_of_scores(monkeypatch):
    seen = []
    real_bmm = torch.bmm

    def spy(a, b, *args, **kw):
        out = real_bmm(a, b, *args, **kw)
        seen.append(out.numel())
        return out

    monkeypatch.setattr(torch, "bmm", spy)
    x = torch.randn(1, 64, 3, dtype=torch.float64)
    attention.softmax_attention(x, x, x, block=640)  # 10 query rows of 64 keys at a time
    assert seen and max(seen) == 640  # score blocks (10, 64); the products with the values are smaller


def test_softmax_dynamics_with_heads_and_mask_match_the_explicit_field():
    rng = np.random.default_rng(2)
    x = torch.tensor(rng.standard_normal((2, 9, 3)))
    Q, K, V = (torch.tensor(rng.standard_normal((2, 3, 3))) for _ in range(3))
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[1, 7:] = False
    f = attndyn._dynamics.SoftmaxAttention(Q, K, V, beta=1.3, mask=mask)
    ref = sum(attention.aggregate(f.pattern(x, h), x @ V[h].T) for h in range(2)) * mask[..., None]
    torch.testing.assert_close(f(0.0, x), ref, rtol=1e-13, atol=1e-14)


@cuda
def test_hardmax_on_cuda_is_bit_identical_to_the_cpu_kernel():
    rng = np.random.default_rng(3)
    for d in (2, 16):
        z = rng.standard_normal((64, 40, d))
        z[:, 20:] = z[:, :20]  # exact ties
        cpu = attndyn.hardmax(z, alpha=0.5, layers=6, check_hypotheses=False)
        gpu = attndyn.hardmax(z, alpha=0.5, layers=6, device="cuda", check_hypotheses=False)
        assert torch.equal(gpu.leader_since.cpu(), cpu.leader_since)
        torch.testing.assert_close(gpu.ys.cpu(), cpu.ys, rtol=0, atol=1e-15)  # tie means: summation order
        untied = rng.standard_normal((64, 40, d))
        a = attndyn.hardmax(untied, alpha=0.5, layers=6, check_hypotheses=False)
        b = attndyn.hardmax(untied, alpha=0.5, layers=6, device="cuda", check_hypotheses=False)
        assert torch.equal(b.ys.cpu(), a.ys)


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_on_cuda_matches_cpu(dtype):
    x = np.random.default_rng(4).standard_normal((2, 50, 8)) / 3
    cpu = attndyn.softmax(x, time=1.0, step=0.1, dtype=dtype)
    gpu = attndyn.softmax(x, time=1.0, step=0.1, dtype=dtype, device="cuda")
    tol = 1e-12 if dtype == torch.float64 else 1e-4
    torch.testing.assert_close(gpu.final_tokens.cpu(), cpu.final_tokens, rtol=tol, atol=tol)
