"""KV-cache decode through opscope.compile(..., dynamic=True) (issue #26): a Llama-style
decoder in plain PyTorch (tests/python/llama_hf.py) generates greedily at batch 1, its cache
one token longer each step; eager and compiled steps alternate (each side first every other
step), each step's token read back,
and compiled/eager is the ratio of the medians a token. Also what learning the dynamic plan
cost: the traces made and the first compiled steps' time.

    PYTHONPATH=build/python /usr/bin/python3 bench/compile_decode.py [--steps 48] [--models small,tinyllama] [--dtype bf16] [--fixed-cache]

--fixed-cache: every step decodes the same token against the same cache (the one after the
learning steps), so the two sides run identical work at one length.
"""
import argparse
import os
import statistics
import sys
import time
import warnings

import torch

import opscope

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import llama_hf  # noqa: E402

MODELS = {
    "small": dict(vocab=4096, dim=512, n_layers=4, n_heads=8, n_kv_heads=4, hidden=1376),
    "tinyllama": dict(vocab=32000, dim=2048, n_layers=2, n_heads=32, n_kv_heads=4, hidden=5632),
}
LEARNING = 8  # steps left out of the medians: the plan is learnt in the first few


def step_ms(model, nxt, cache):
    t0 = time.perf_counter()
    logits, cache = model(nxt, cache)
    token = logits[:, -1:].argmax(-1)
    token.cpu()
    return (time.perf_counter() - t0) * 1e3, token, cache


def bench(name, steps, dtype, fixed=False):
    cfg = MODELS[name]
    torch.manual_seed(0)
    model = llama_hf.Llama(**cfg).to(dtype).to(opscope.device()).eval()
    compiled = opscope.compile(model, dynamic=True)
    traces = []
    trace = compiled._trace
    compiled._trace = lambda *a: traces.append(1) or trace(*a)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logits, cache = model(torch.randint(0, cfg["vocab"], (1, 32)).to(opscope.device()))
        token = logits[:, -1:].argmax(-1)
        eager_ms, compiled_ms, differ = [], [], 0
        for i in range(steps):  # the same cache and token to both; the eager side's go on
            # Which side goes first alternates: the first to grow the cache meets fresh pages
            # (a fault per page on this VM), and the second reuses the blocks it freed.
            if i % 2 == 0:
                c_ms, c_token, _ = step_ms(compiled, token, cache)
                e_ms, next_token, next_cache = step_ms(model, token, cache)
                if not (fixed and i >= LEARNING):
                    token, cache = next_token, next_cache
            else:
                e_ms, next_token, next_cache = step_ms(model, token, cache)
                c_ms, c_token, _ = step_ms(compiled, token, cache)
                if not (fixed and i >= LEARNING):
                    token, cache = next_token, next_cache
            differ += int(c_token.item() != next_token.item())
            compiled_ms.append(c_ms)
            eager_ms.append(e_ms)
    e, c = statistics.median(eager_ms[LEARNING:]), statistics.median(compiled_ms[LEARNING:])
    learn = sum(compiled_ms[:LEARNING]) - LEARNING * c
    print(f"{name:<10} {str(dtype).replace('torch.', ''):<9} {e:>9.2f} {c:>12.2f} {c / e:>9.2f} {len(traces):>7} "
          f"{learn / 1e3:>10.2f} {differ:>8}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--models", default="small,tinyllama")
    ap.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    ap.add_argument("--fixed-cache", action="store_true")
    args = ap.parse_args()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        ap.error(f"--models: unknown model {unknown[0]!r} (expected some of {', '.join(MODELS)})")
    if args.steps <= LEARNING + 2:
        ap.error(f"--steps: expected more than {LEARNING + 2}, got {args.steps}")
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    print(f"greedy decode after a 32-token prompt, {args.steps} steps, medians of steps {LEARNING}+; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'model':<10} {'dtype':<9} {'eager ms':>9} {'compiled ms':>12} {'ratio':>9} {'traces':>7} "
          f"{'learning s':>10} {'tokens !=':>8}")
    for name in models:
        bench(name, args.steps, dtype, args.fixed_cache)


if __name__ == "__main__":
    main()
