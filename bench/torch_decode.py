"""LLM decode at batch 1 through PyTorch on opscope's device: a Llama-style decoder in plain
PyTorch (tests/python/llama_hf.py, TinyLlama's shapes with 2 layers), greedy decode with the
KV cache, against its bandwidth limit and torch's CPU backend (as many threads as the device
has cores), measured in one run.

A decode step reads every weight once (the embedding: one row), so it cannot beat
weight bytes / copy bandwidth; the copy rate is `opscope probe`'s, measured before each
round (this VM's bandwidth drifts by tens of percent between minutes). "of limit" = limit /
measured ms a token, per round; the median is printed.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_decode.py [--steps 16] [--layers 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch_peer  # noqa: F401  (first: how torch's OpenBLAS threads, before torch loads it)

import torch

import opscope

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import llama_hf  # noqa: E402


def copy_gbps():
    """The device's copy rate from `opscope probe --save`, measured now."""
    cli = os.path.join(ROOT, "build", "tools", "opscope")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "peaks.json")
        subprocess.run([cli, "probe", "--save", path], check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)["copy_gbps"]


def decode_ms(model, prompt, steps, sync):
    """Wall ms per decode step after a prefill, greedy, each step's token read back."""
    with torch.no_grad():
        logits, cache = model(prompt)
        nxt = logits[:, -1:].argmax(-1)
        sync(nxt)
        t0 = time.perf_counter()
        for _ in range(steps):
            logits, cache = model(nxt, cache)
            nxt = logits[:, -1:].argmax(-1)
            sync(nxt)
        return (time.perf_counter() - t0) / steps * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for flag in ("steps", "layers", "rounds"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag}: expected a positive count, got {getattr(args, flag)}")
    dev = opscope.device()
    torch.set_num_threads(len(os.sched_getaffinity(0)))  # the device's cores: every hardware thread
    load = os.getloadavg()[0]
    print(f"decode at batch 1, TinyLlama shapes, {args.layers} layers, {args.steps} steps after a 32-token prompt; "
          f"torch CPU with {torch.get_num_threads()} threads; load {load:.1f}")
    print(f"{'dtype':<6} {'weights MB':>10} {'copy GB/s':>10} {'limit ms':>9} {'device ms/tok':>14} {'of limit':>9} "
          f"{'(rounds)':>14} {'torch cpu ms/tok':>17} {'device/cpu':>11}")
    for dtype in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        model = llama_hf.Llama(vocab=32000, dim=2048, n_layers=args.layers, n_heads=32, n_kv_heads=4,
                               hidden=5632).to(dtype).eval()
        weights = sum(p.numel() for p in model.parameters()) - model.embed_tokens.weight.numel() + 2048
        mb = weights * model.lm_head.weight.element_size() / 1e6
        prompt = torch.randint(0, 32000, (1, 32))
        on_dev = llama_hf.Llama(vocab=32000, dim=2048, n_layers=args.layers, n_heads=32, n_kv_heads=4, hidden=5632)
        on_dev.load_state_dict(model.state_dict())
        on_dev = on_dev.to(dtype).to(dev).eval()
        prompt_dev = prompt.to(dev)
        dev_ms, cpu_ms, rates, fractions = [], [], [], []
        for _ in range(args.rounds):  # alternated, the probe in each round: this VM's bandwidth drifts by minutes
            rates.append(copy_gbps())
            dev_ms.append(decode_ms(on_dev, prompt_dev, args.steps, lambda t: t.cpu()))
            cpu_ms.append(decode_ms(model, prompt, args.steps, lambda t: None))
            fractions.append(mb / rates[-1] / dev_ms[-1])  # MB / (GB/s) = ms
        d, c, gbps = statistics.median(dev_ms), statistics.median(cpu_ms), statistics.median(rates)
        name = str(dtype).replace("torch.", "").replace("float32", "f32").replace("bfloat16", "bf16")
        each = "/".join(f"{100 * f:.0f}" for f in fractions)
        print(f"{name:<6} {mb:>10.1f} {gbps:>10.1f} {mb / gbps:>9.2f} {d:>14.2f} {100 * statistics.median(fractions):>8.0f}% "
              f"{each:>14} {c:>17.2f} {d / c:>10.2f}x")
    print("(ms/tok: median of the rounds' mean wall time a step, each step's token read back to the host; of limit:\n"
          " the median of the rounds' limit / ms, each round's limit from the probe's copy rate measured just before it)")


if __name__ == "__main__":
    main()
