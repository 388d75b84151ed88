"""Models as others write them in plain PyTorch, for opscope.compile's tests and benchmark:
a Llama-style decoder (Meta's naming: attention_norm, attention.wq, feed_forward.w1..w3,
RMSNorm, rotate-half RoPE, GQA by expand/reshape, SwiGLU, `q @ k.transpose(2, 3)`, an
optional KV cache), a GPT-2-style decoder (nanoGPT's: fused c_attn, LayerNorm, GELU,
`q @ k.transpose(-2, -1)`, a causal mask by masked_fill), nn.TransformerEncoder and the
torchvision models. Random weights; `make(name, size)` gives (model, example inputs)."""
import math

import torch
from torch import nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin, mask, cache_k=None, cache_v=None):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.n_kv, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache_k is not None:
            k = torch.cat([cache_k, k], dim=2)
            v = torch.cat([cache_v, v], dim=2)
        new_k, new_v = k, v
        rep = self.n_heads // self.n_kv
        if rep > 1:  # grouped-query attention: each kv head serves `rep` query heads
            t = k.shape[2]
            k = k[:, :, None].expand(b, self.n_kv, rep, t, self.head_dim).reshape(b, self.n_heads, t, self.head_dim)
            v = v[:, :, None].expand(b, self.n_kv, rep, t, self.head_dim).reshape(b, self.n_heads, t, self.head_dim)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        probs = F.softmax(scores.float(), dim=-1).type_as(q)
        out = (probs @ v).transpose(1, 2).contiguous().view(b, s, -1)
        return self.wo(out), new_k, new_v


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, n_heads, n_kv_heads)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = FeedForward(dim, hidden)

    def forward(self, x, cos, sin, mask, cache_k=None, cache_v=None):
        h, k, v = self.attention(self.attention_norm(x), cos, sin, mask, cache_k, cache_v)
        x = x + h
        return x + self.feed_forward(self.ffn_norm(x)), k, v


class Llama(nn.Module):
    """forward(tokens) -> logits; forward(tokens, *cache) -> (logits, *new cache) with
    cache = k0, v0, k1, v1, ... (one token at a time after a prefill)."""

    def __init__(self, vocab=1024, dim=512, n_layers=4, n_heads=8, n_kv_heads=4, hidden=1376, max_seq=512):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(LlamaBlock(dim, n_heads, n_kv_heads, hidden) for _ in range(n_layers))
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        hd = dim // n_heads
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.outer(torch.arange(max_seq).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, tokens, *cache):
        b, s = tokens.shape
        past = cache[0].shape[2] if cache else 0
        x = self.tok_embeddings(tokens)
        cos = self.cos_cached[past:past + s].to(x.dtype)
        sin = self.sin_cached[past:past + s].to(x.dtype)
        mask = None
        if s > 1:
            mask = torch.full((s, s), float("-inf"), device=tokens.device).triu(1).to(x.dtype)
        out = []
        for i, layer in enumerate(self.layers):
            ck, cv = (cache[2 * i], cache[2 * i + 1]) if cache else (None, None)
            x, k, v = layer(x, cos, sin, mask, ck, cv)
            out += [k, v]
        logits = self.output(self.norm(x))
        return (logits, *out) if cache else logits


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, n_heads, max_seq):
        super().__init__()
        self.n_heads = n_heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(max_seq, max_seq)).view(1, 1, max_seq, max_seq),
                             persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        k = k.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        q = q.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, dim, n_heads, max_seq):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, n_heads, max_seq)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, vocab=1024, dim=512, n_layers=4, n_heads=8, max_seq=512):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_seq, dim)
        self.h = nn.ModuleList(GPT2Block(dim, n_heads, max_seq) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        pos = torch.arange(0, t, dtype=torch.long, device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def transformer_encoder(dim=512, n_layers=4, n_heads=8):
    layer = nn.TransformerEncoderLayer(dim, n_heads, dim_feedforward=4 * dim, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)


# name -> (builder, {size: (constructor kwargs, example input shape)}); "full" is the
# issue's size (4 layers, d=512, 8 heads, 128 tokens; 224x224 images), "small" a test size.
TRANSFORMERS = ("llama", "gpt2", "transformer_encoder", "vit_b_16")
CNNS = ("resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny")
ALL = TRANSFORMERS + CNNS


def make(name, size="full", seed=0):
    """(model in eval mode, list of example inputs on the CPU)."""
    torch.manual_seed(seed)
    small = size == "small"
    if name == "llama":
        kw = dict(vocab=97, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden=160) if small else {}
        tokens = 12 if small else 128
        return Llama(**kw).eval(), [torch.randint(0, kw.get("vocab", 1024), (1, tokens))]
    if name == "gpt2":
        kw = dict(vocab=97, dim=64, n_layers=2, n_heads=4) if small else {}
        tokens = 12 if small else 128
        return GPT2(**kw).eval(), [torch.randint(0, kw.get("vocab", 1024), (1, tokens))]
    if name == "transformer_encoder":
        m = transformer_encoder(64, 2, 4) if small else transformer_encoder()
        return m.eval(), [torch.randn(1, 12 if small else 128, 64 if small else 512)]
    import torchvision
    if name == "vit_b_16":
        if small:
            m = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                     hidden_dim=64, mlp_dim=128)
            m.heads = nn.Identity()
            return m.eval(), [torch.randn(1, 3, 32, 32)]
        m = torchvision.models.vit_b_16()
        m.heads = nn.Identity()  # torchvision zero-initialises the head
        return m.eval(), [torch.randn(1, 3, 224, 224)]
    m = getattr(torchvision.models, name)()
    if name == "mobilenet_v3_small":
        m.classifier = nn.Identity()  # its random classifier makes outputs ~1e-9
    return m.eval(), [torch.randn(1, 3, 64 if small else 224, 64 if small else 224)]


def tensors_of(out):
    """The tensors of a model's output (tensors, tuples, lists, dicts), in a fixed order:
    what the model tests and benchmarks compare."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in tensors_of(out[k])]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in tensors_of(o)]
    return []
