"""Beyond the papers: differentiate through the dynamics.

Learn a value matrix V so that, after the softmax dynamics (eq. 1) run for time T, the tokens
land close to target positions. Gradients flow through every RK4 stage with torch autograd.

    python examples/gradients.py
"""

import torch

import attndyn

torch.manual_seed(0)
x0 = torch.randn(8, 2, dtype=torch.float64)
target = 0.5 * x0.flip(0)
V = torch.zeros(2, 2, dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([V], lr=0.05)
for it in range(60):
    opt.zero_grad()
    final = attndyn.softmax(x0, time=1.0, V=V, method="rk4", step=0.1, save=attndyn.SaveAt(every=None)).final_tokens
    loss = ((final - target) ** 2).mean()
    loss.backward()
    opt.step()
    if it % 20 == 0 or it == 59:
        print(f"step {it:3d}  loss {loss.item():.5f}")
print("learned V =", V.detach().numpy().round(3).tolist())
