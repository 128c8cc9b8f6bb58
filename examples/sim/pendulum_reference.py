"""CPU reference of examples/sim/pendulum.wgsl in double precision, from Gymnasium's
Pendulum-v1 equations (gymnasium/envs/classic_control/pendulum.py); the start state and genome are
the GPU's f32 values. wgfuse runs it as the workload's "reference" (docs/SIMULATIONS.md)."""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wgfuse_sim as ws  # noqa: E402

G, M, L, DT, MAX_SPEED, MAX_TORQUE = 10.0, 1.0, 1.0, 0.05, 8.0, 2.0


def tanh_safe(x):
    e = math.exp(-2.0 * abs(x))
    return math.copysign(1.0, x) * (1.0 - e) / (1.0 + e) if x != 0 else 0.0


def angle_normalize(x):
    return ((x + math.pi) % (2 * math.pi)) - math.pi


def episode(e):
    g = e["genome"]
    w1, b1, w2, b2 = g[0:24], g[24:32], g[32:40], g[40]
    th = ws.init_uniform(e, 0, math.pi)
    thdot = ws.init_uniform(e, 1, 1.0)
    ret = 0.0
    for _ in range(e["steps"]):
        obs = (math.cos(th), math.sin(th), thdot)
        out = b2
        for j in range(8):
            a = b1[j] + sum(w1[j * 3 + k] * obs[k] for k in range(3))
            out += w2[j] * tanh_safe(a)
        u = min(max(2.0 * tanh_safe(out), -MAX_TORQUE), MAX_TORQUE)
        ret -= angle_normalize(th) ** 2 + 0.1 * thdot ** 2 + 0.001 * u ** 2
        thdot = min(max(thdot + (3 * G / (2 * L) * math.sin(th) + 3.0 / (M * L ** 2) * u) * DT, -MAX_SPEED),
                    MAX_SPEED)
        th = th + thdot * DT
    return {"fitness": ret}


if __name__ == "__main__":
    ws.serve(episode)
