"""A Llama-style decoder written in plain PyTorch the way Hugging Face's modeling_llama
writes it: RMSNorm computed in f32, rotate-half RoPE, grouped-query attention (repeat_kv),
a SwiGLU MLP and a KV cache. Small sizes: a test model, random weights."""
import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, hidden):
        dtype = hidden.dtype
        hidden = hidden.to(torch.float32)
        variance = hidden.pow(2).mean(-1, keepdim=True)
        hidden = hidden * torch.rsqrt(variance + self.eps)
        return self.weight * hidden.to(dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def repeat_kv(x, n_rep):
    b, h, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.q_proj = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin, mask, cache):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.n_kv, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, k, cos, sin)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        new_cache = (k, v)
        k, v = repeat_kv(k, self.n_heads // self.n_kv), repeat_kv(v, self.n_heads // self.n_kv)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        probs = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).contiguous().reshape(b, s, -1)
        return self.o_proj(out), new_cache


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = Attention(dim, n_heads, n_kv_heads)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = MLP(dim, hidden)

    def forward(self, x, cos, sin, mask, cache):
        h, cache = self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
        x = x + h
        return x + self.mlp(self.post_attention_layernorm(x)), cache


class Llama(nn.Module):
    def __init__(self, vocab=97, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden=128, theta=10000.0):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Layer(dim, n_heads, n_kv_heads, hidden) for _ in range(n_layers))
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.head_dim = dim // n_heads
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def rope(self, positions, dtype):
        freqs = positions[:, None].float() * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype)[None, None], emb.sin().to(dtype)[None, None]

    def forward(self, tokens, cache=None):
        b, s = tokens.shape
        past = 0 if cache is None else cache[0][0].shape[2]
        x = self.embed_tokens(tokens)
        positions = torch.arange(past, past + s, device=tokens.device)
        cos, sin = self.rope(positions, x.dtype)
        mask = None
        if s > 1:
            mask = torch.full((s, s + past), torch.finfo(x.dtype).min, device=tokens.device, dtype=x.dtype)
            mask = torch.triu(mask, diagonal=past + 1)[None, None]
        new_cache = []
        for i, layer in enumerate(self.layers):
            x, c = layer(x, cos, sin, mask, None if cache is None else cache[i])
            new_cache.append(c)
        return self.lm_head(self.norm(x)), new_cache


def generate(model, tokens, steps):
    """Greedy decoding with the KV cache: the logits of every step."""
    logits, cache = model(tokens)
    out = [logits]
    nxt = logits[:, -1:].argmax(-1)
    for _ in range(steps):
        logits, cache = model(nxt, cache)
        out.append(logits)
        nxt = logits[:, -1:].argmax(-1)
    return out
