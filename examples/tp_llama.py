"""A Llama-style decoder split across processes with Megatron-style tensor parallelism, on
opscope devices under torch.distributed, profiled as one job.

Each rank holds 1/N of every layer: q/k/v and gate/up are column-parallel (its own heads and
its slice of the MLP's hidden units, no communication), o_proj and down_proj row-parallel
(their partial sums meet in one all_reduce after attention and one after the MLP).
Embedding, norms and lm_head are replicated. Every rank builds the same full model from one
seed and keeps its shards, so the output must equal the whole model's in one process.

    python3 -m opscope.run --nproc_per_node 2 examples/tp_llama.py --check --out tp-profile
    python3 examples/tp_llama.py              # one process, no torch.distributed
    opscope table tp-profile --by-rank        # each rank's ops and kernels, all_reduce among them
    opscope explore tp-profile                # both ranks on one timeline

--check: each rank also runs the whole model in its own process and compares the logits.
--out DIR: each rank's profile goes to DIR/rank-N. On several machines see the README
("Several processes and machines").
"""
import argparse
import math
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

import opscope
from opscope.profiler import Config, Exporter, ProfilerActivity, profile


# ---- the model, in plain PyTorch
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    """Heads `n_heads` (key/value heads `n_kv`) of `head_dim`: all of them, or a rank's share."""

    def __init__(self, dim, n_heads, n_kv, head_dim, tp_group=None):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim, self.tp_group = n_heads, n_kv, head_dim, tp_group
        self.q_proj = nn.Linear(dim, n_heads * head_dim, bias=False)   # column-parallel
        self.k_proj = nn.Linear(dim, n_kv * head_dim, bias=False)      # column-parallel
        self.v_proj = nn.Linear(dim, n_kv * head_dim, bias=False)      # column-parallel
        self.o_proj = nn.Linear(n_heads * head_dim, dim, bias=False)   # row-parallel

    def forward(self, x, cos, sin, mask, cache):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.n_kv, self.head_dim).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        new_cache = (k, v)
        rep = self.n_heads // self.n_kv
        if rep > 1:
            k = k[:, :, None].expand(b, self.n_kv, rep, k.shape[2], self.head_dim).reshape(b, self.n_heads, -1, self.head_dim)
            v = v[:, :, None].expand(b, self.n_kv, rep, v.shape[2], self.head_dim).reshape(b, self.n_heads, -1, self.head_dim)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        out = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, s, -1)
        out = self.o_proj(out)
        if self.tp_group is not None:
            dist.all_reduce(out, group=self.tp_group)  # the partial sums of the row-parallel o_proj
        return out, new_cache


class MLP(nn.Module):
    def __init__(self, dim, hidden, tp_group=None):
        super().__init__()
        self.tp_group = tp_group
        self.gate_proj = nn.Linear(dim, hidden, bias=False)  # column-parallel
        self.up_proj = nn.Linear(dim, hidden, bias=False)    # column-parallel
        self.down_proj = nn.Linear(hidden, dim, bias=False)  # row-parallel

    def forward(self, x):
        out = self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))
        if self.tp_group is not None:
            dist.all_reduce(out, group=self.tp_group)
        return out


class Layer(nn.Module):
    def __init__(self, cfg, tp=1, tp_group=None):
        super().__init__()
        hd = cfg.dim // cfg.n_heads
        self.input_layernorm = RMSNorm(cfg.dim)
        self.self_attn = Attention(cfg.dim, cfg.n_heads // tp, cfg.n_kv_heads // tp, hd, tp_group)
        self.post_attention_layernorm = RMSNorm(cfg.dim)
        self.mlp = MLP(cfg.dim, cfg.hidden // tp, tp_group)

    def forward(self, x, cos, sin, mask, cache):
        h, cache = self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
        x = x + h
        return x + self.mlp(self.post_attention_layernorm(x)), cache


class Llama(nn.Module):
    """The whole model (tp=1) or one rank's shard of it (tp ranks in `tp_group`)."""

    def __init__(self, cfg, tp=1, tp_group=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.dim)
        self.layers = nn.ModuleList(Layer(cfg, tp, tp_group) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        hd = cfg.dim // cfg.n_heads
        self.register_buffer("inv_freq", 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd)), persistent=False)

    def forward(self, tokens, cache=None):
        b, s = tokens.shape
        past = 0 if cache is None else cache[0][0].shape[2]
        x = self.embed_tokens(tokens)
        pos = torch.arange(past, past + s, device=tokens.device).float()
        freqs = pos[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = None
        if s > 1:
            mask = torch.full((s, s + past), float("-inf")).triu(past + 1)[None, None].to(tokens.device)
        new_cache = []
        for i, layer in enumerate(self.layers):
            x, c = layer(x, cos, sin, mask, None if cache is None else cache[i])
            new_cache.append(c)
        return self.lm_head(self.norm(x)), new_cache


def shard(full, cfg, rank, tp, group):
    """Rank `rank`'s shard of the whole model: rows of the column-parallel weights (its heads,
    its hidden units), columns of the row-parallel ones."""
    part = Llama(cfg, tp, group)
    state = {}
    hd = cfg.dim // cfg.n_heads
    for name, w in full.state_dict().items():
        rows = lambda n: w.view(n, -1, w.shape[-1])[rank * n // tp:(rank + 1) * n // tp].reshape(-1, w.shape[-1])  # noqa: E731
        if name.endswith(("q_proj.weight",)):
            w = rows(cfg.n_heads)
        elif name.endswith(("k_proj.weight", "v_proj.weight")):
            w = rows(cfg.n_kv_heads)
        elif name.endswith(("gate_proj.weight", "up_proj.weight")):
            w = rows(cfg.hidden)
        elif name.endswith("o_proj.weight"):
            w = w[:, rank * cfg.n_heads // tp * hd:(rank + 1) * cfg.n_heads // tp * hd]
        elif name.endswith("down_proj.weight"):
            w = w[:, rank * cfg.hidden // tp:(rank + 1) * cfg.hidden // tp]
        state[name] = w.contiguous()
    part.load_state_dict(state)
    return part


def generate(model, tokens, steps):
    """Prefill, then `steps` greedy decode steps with the KV cache: every step's logits."""
    logits, cache = model(tokens)
    out = [logits]
    nxt = logits[:, -1:].argmax(-1)
    for _ in range(steps):
        logits, cache = model(nxt, cache)
        out.append(logits)
        nxt = logits[:, -1:].argmax(-1)
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--steps", type=int, default=8, help="decode steps after the prefill")
    p.add_argument("--check", action="store_true", help="compare with the whole model in this process")
    p.add_argument("--out", help="profile each rank into OUT/rank-N")
    a = p.parse_args(argv)
    a.n_heads, a.n_kv_heads, a.n_layers = a.heads, a.kv_heads, a.layers
    return a


def main(argv=None):
    cfg = parse_args(argv)
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("opscope")
    rank, tp = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    for what, n in (("--heads", cfg.n_heads), ("--kv-heads", cfg.n_kv_heads), ("--hidden", cfg.hidden)):
        if n % tp:
            raise SystemExit(f"tp_llama.py: [{what}] {n} does not split over {tp} ranks")
    dev = opscope.device()
    torch.manual_seed(0)
    full = Llama(cfg).eval()
    tokens = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq))
    model = (shard(full, cfg, rank, tp, dist.group.WORLD) if tp > 1 else full).to(dev).eval()
    with torch.no_grad():
        generate(model, tokens.to(dev), 1)  # warm-up: allocator, first launches
        opscope.synchronize()
        if distributed:
            dist.barrier()  # the ranks' profiled windows start together
        if cfg.out:
            pc = Config(output_dir=cfg.out)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.DEVICE], experimental_config=pc,
                         on_trace_ready=Exporter(pc).export_trace) as prof:
                logits = generate(model, tokens.to(dev), cfg.steps)
                opscope.synchronize()
            print(f"rank {rank}: profile in {opscope.distributed.rank_dir(cfg.out)}")
            if rank == 0:
                print(prof.key_averages().table(sort_by="device_time_total", row_limit=12))
        else:
            logits = generate(model, tokens.to(dev), cfg.steps)
        logits = [t.cpu() for t in logits]
        if cfg.check:
            ref = [t.cpu() for t in generate(full.to(dev), tokens.to(dev), cfg.steps)]
            diff = max(float((a - b).abs().max()) for a, b in zip(logits, ref))
            if diff > 1e-3:
                raise SystemExit(f"rank {rank}: the tensor-parallel output differs from one process by {diff:.3g}")
            print(f"rank {rank} of {tp}: tensor-parallel output matches one process (max abs diff {diff:.2g})")
    if distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
