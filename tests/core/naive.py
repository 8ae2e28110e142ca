"""Deliberately naive reference implementations (the oracle the engine is tested against).

Per sequence, per layer, per token: an inner product with every token, in plain Python floats,
as in the published experiment code.
"""

import math


def hardmax_layer(z, alpha, A=None, mask=None, causal=False):
    """One layer; ``causal``: token i's argmax set is taken over the real j <= i only."""
    n, d = len(z), len(z[0])
    A = A or [[float(i == j) for j in range(d)] for i in range(d)]
    mask = mask or [True] * n
    coef = alpha / (1 + alpha)
    out, leaders = [], []
    for i in range(n):
        if not mask[i]:
            out.append(list(z[i]))
            leaders.append(False)
            continue
        w = [sum(A[r][c] * z[i][c] for c in range(d)) for r in range(d)]
        seen = range(i + 1) if causal else range(n)
        s = [sum(w[c] * z[j][c] for c in range(d)) if mask[j] and j in seen else -math.inf for j in range(n)]
        best = max(s)
        follow = [j for j in range(n) if s[j] == best]
        mean = [sum(z[j][c] for j in follow) / len(follow) for c in range(d)]
        out.append([z[i][c] + coef * (mean[c] - z[i][c]) for c in range(d)])
        leaders.append(follow == [i])
    return out, leaders


def hardmax(z, alpha, layers, A=None, mask=None, causal=False):
    traj = [z]
    for _ in range(layers):
        z, _ = hardmax_layer(z, alpha, A, mask, causal)
        traj.append(z)
    return traj


def softmax_velocity(x, Q, K, V, beta=1.0, mask=None, causal=False):
    """Eq. (1)-(2); padding (``mask`` False) neither attends nor moves; ``causal``: the sums over the real j <= i."""
    n, d = len(x), len(x[0])
    mask = mask or [True] * n

    def mat(M, v):
        return [sum(M[r][c] * v[c] for c in range(len(v))) for r in range(len(M))]

    qs = [mat(Q, xi) for xi in x]
    ks = [mat(K, xi) for xi in x]
    vs = [mat(V, xi) for xi in x]
    out = []
    for i in range(n):
        if not mask[i]:
            out.append([0.0] * d)
            continue
        keys = [j for j in range(i + 1 if causal else n) if mask[j]]
        s = {j: beta * sum(a * b for a, b in zip(qs[i], ks[j])) for j in keys}
        m = max(s.values())
        e = {j: math.exp(v - m) for j, v in s.items()}
        tot = sum(e.values())
        out.append([sum(e[j] / tot * vs[j][c] for j in keys) for c in range(d)])
    return out


def softmax_euler(x, Q, K, V, dt, steps, beta=1.0, mask=None, causal=False):
    for _ in range(steps):
        v = softmax_velocity(x, Q, K, V, beta, mask, causal)
        x = [[x[i][c] + dt * v[i][c] for c in range(len(x[0]))] for i in range(len(x))]
    return x


def leader_margin(z, i, A=None, mask=None, causal=False):
    """Strict margin min_{j != i} <A z_i, z_i - z_j> and its rounding bound (attndyn.margins), in
    plain Python floats with another order of operations than the engine's; ``causal``: over the
    real j < i, and M over the real j <= i."""
    n = i + 1 if causal else len(z)
    d = len(z[0])
    A = A or [[float(r == c) for c in range(d)] for r in range(d)]
    mask = mask or [True] * n
    w = [sum(A[r][c] * z[i][c] for c in range(d)) for r in range(d)]
    own = sum(w[c] * z[i][c] for c in range(d))
    rivals = [sum(w[c] * z[j][c] for c in range(d)) for j in range(n) if j != i and mask[j]]  # j < n
    margin = own - max(rivals) if rivals else math.inf
    u = 2.0**-53
    m = (2 * d + 1) * u
    g = 2 * m / (1 - m)
    aw = [sum(abs(A[r][c]) * abs(z[i][c]) for c in range(d)) for r in range(d)]
    big = [max(abs(z[j][c]) for j in range(n) if mask[j]) for c in range(d)]
    bound = g * sum(aw[c] * (abs(z[i][c]) + big[c]) for c in range(d))
    return margin, bound


def hardmax_leaders(z, alpha, layers, A=None, mask=None, causal=False):
    """{token: first layer} of the leaders of a plain-loop run, each certified by its margin."""
    since = {}
    for k in range(layers + 1):
        z_next, flagged = hardmax_layer(z, alpha, A, mask, causal)
        for i, f in enumerate(flagged):
            if f and i not in since:
                margin, bound = leader_margin(z, i, A, mask, causal)
                if margin > bound:
                    since[i] = k
        z = z_next
    return since
