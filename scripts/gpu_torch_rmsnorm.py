#!/usr/bin/env python3
"""RMSNorm in PyTorch on cuda:0, the peer of bench/gpu_rmsnorm_bench.cpp (same shapes,
dtypes, byte count and timing): torch eager op by op (naive), F.rms_norm (torch >= 2.4)
and torch.compile of the naive function.

Timing: torch.cuda.Event around N calls after warm-up (torch.compile: after its compile),
best of 5 rounds; us per call = elapsed / N. GB/s counts read x + w, write y.
The JSON is rewritten after every row, so a run cut short by a timeout keeps what it had.

  gpu_torch_rmsnorm.py --json OUT.json [--shapes 1x4096,...] [--dtypes f32,bf16] [--ms 100]
"""
import argparse
import json
import sys
import time


def naive(x, w, eps=1e-6):
    x_sq = x * x
    mean_sq = x_sq.mean(dim=-1, keepdim=True)
    r = (mean_sq + eps).rsqrt()
    return x * r * w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--shapes", default="1x4096,32x4096,4096x4096,16384x8192")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--ms", type=float, default=100.0, help="GPU time per measurement round")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F

    out = {"torch_version": torch.__version__, "results": []}

    def save():
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")

    if not torch.cuda.is_available():
        out["error"] = "torch.cuda.is_available() is False"
        save()
        print("gpu_torch_rmsnorm: no CUDA GPU for torch", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    out["device"] = torch.cuda.get_device_name(0)
    out["timing"] = "torch.cuda.Event around N calls after warm-up; best of 5 rounds"
    save()

    # One compiled function per signature (no dynamic shapes: each shape is specialized,
    # as opscope's compile is), with room in Dynamo's cache for all of them.
    try:
        import torch._dynamo as dynamo
        for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit"):
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, max(getattr(dynamo.config, knob), 256))
    except Exception:
        pass
    compiled = None
    if not args.no_compile and hasattr(torch, "compile"):
        compiled = torch.compile(naive, dynamic=False)

    def us_per_call(fn):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def rounds(n):
            a.record()
            for _ in range(n):
                fn()
            b.record()
            b.synchronize()
            return a.elapsed_time(b)

        one = max(rounds(3) / 3, 1e-3)
        n = int(min(max(args.ms / 3 / one, 5), 2000))
        return min(rounds(n) / n for _ in range(5)) * 1e3

    impls = [("torch_naive", naive)]
    if hasattr(F, "rms_norm"):
        impls.append(("F.rms_norm", lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6)))
    else:
        out["f_rms_norm"] = "n/a: torch %s has no F.rms_norm" % torch.__version__
    if compiled is not None:
        impls.append(("torch.compile", compiled))

    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    for dts in args.dtypes.split(","):
        dt = dtypes[dts]
        for sh in args.shapes.split(","):
            rows, cols = (int(v) for v in sh.split("x"))
            g = torch.Generator(device=dev).manual_seed(1)
            x = torch.randn(rows, cols, device=dev, generator=g).to(dt)
            w = (torch.rand(cols, device=dev, generator=g) + 0.5).to(dt)
            ref = naive(x.double(), w.double())
            nbytes = (2 * rows * cols + cols) * x.element_size()
            for name, fn in impls:
                r = {"dtype": dts, "shape": sh, "impl": name, "bytes": nbytes}
                try:
                    t0 = time.perf_counter()
                    y = fn(x, w)  # torch.compile: compiles here
                    torch.cuda.synchronize()
                    r["first_call_s"] = time.perf_counter() - t0
                    r["max_abs_diff"] = float((y.double() - ref).abs().max())
                    r["us"] = us_per_call(lambda: fn(x, w))
                    r["gbs"] = nbytes / (r["us"] * 1e3)
                except Exception as e:  # recorded; the next row still runs
                    r["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
                out["results"].append(r)
                save()
                if "error" in r:
                    print("| %s | %s | %s | n/a: %s |" % (dts, sh, name, r["error"]), flush=True)
                else:
                    print("| %s | %s | %s | %.2f us | %.0f GB/s | diff %.3g |"
                          % (dts, sh, name, r["us"], r["gbs"], r["max_abs_diff"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
