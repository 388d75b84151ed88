"""opscope.compile on whole models (issue #26): eager vs compiled time per forward on opscope's
device (wall, synchronized), measured in one run with the two sides alternated, R calls each;
compiled/eager is the ratio of the medians, best/best that of the fastest calls (on a loaded
machine the least disturbed pair). A third side, compiled without the "pack" step (weights
packed once for oneDNN's matmul), alternated with the other two, gives packed/unpacked
in the same run. Also the first compiled call (trace + passes +
build; cold = empty compile cache), the second (it packs the weights: a one-time cost, kept
out of the timed calls) and a warm first call (a fresh compile of the same model with the
cache filled). Models are tests/python/model_zoo.py's (random weights).

    PYTHONPATH=build/python /usr/bin/python3 bench/compile_models.py [--repeats 15] [--models llama,gpt2,...] [--dtype bf16]
"""
import argparse
import math
import os
import statistics
import sys
import tempfile
import time
import warnings

import torch

import opscope

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import model_zoo  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    opscope.synchronize()
    return (time.perf_counter() - t0) * 1e3, out


def bench(name, repeats, dtype=torch.float32):
    model, inputs = model_zoo.make(name, "full")
    model = model.to(dtype)
    inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    with torch.no_grad():
        want = model(*inputs)
    dev = opscope.device()
    model = model.to(dev)
    xs = [x.to(dev) for x in inputs]
    compiled = opscope.compile(model)
    unpacked = opscope.compile(model, passes=[p for p in opscope._compile.PASSES if p != "pack"])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first_ms, _ = timed(lambda: compiled(*xs))  # its values are the trace's eager run's
        pack_ms, got = timed(lambda: compiled(*xs))  # the call that packs the weights; the kernels' values
        recompiled = opscope.compile(model)  # a new compile of the same graph: the cache's hit
        warm_ms, _ = timed(lambda: recompiled(*xs))
        timed(lambda: model(*xs))
        timed(lambda: unpacked(*xs))
        eager, comp, nopack = [], [], []
        for i in range(repeats):  # alternated (ABC CBA), so that drift in the machine's load hits every side
            sides = ((eager, model), (comp, compiled), (nopack, unpacked))
            for times, f in sides if i % 2 == 0 else sides[::-1]:
                times.append(timed(lambda: f(*xs))[0])
    got = got.cpu() if torch.is_tensor(got) else got[0].cpu()
    want = want if torch.is_tensor(want) else want[0]
    got, want = got.float(), want.float()
    rel = ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
    e, c, u = statistics.median(eager), statistics.median(comp), statistics.median(nopack)
    return e, c, min(comp) / min(eager), c / u, first_ms, pack_ms, warm_ms, rel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--models", default="llama,gpt2,mobilenet_v3_small")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"], help="the models' weights and float inputs")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error(f"--repeats: expected a positive count of calls, got {args.repeats}")
    import torchvision  # model_zoo builds any of its models by name
    unknown = [m for m in args.models.split(",") if m not in model_zoo.ALL and not hasattr(torchvision.models, m)]
    if unknown:
        ap.error(f"--models: unknown model {unknown[0]!r} (model_zoo's: {', '.join(model_zoo.ALL)}; "
                 f"or a torchvision.models name)")
    torch.set_num_threads(2)
    print(f"device: {opscope._C.device_description(0)}; {args.dtype}; load: {os.getloadavg()[0]:.2f}")
    print(f"{'model':22s} {'eager ms':>9s} {'compiled ms':>12s} {'compiled/eager':>15s} "
          f"{'best/best':>10s} {'packed/unpacked':>16s} {'1st call cold ms':>17s} {'2nd (packs) ms':>15s} {'warm ms':>8s} "
          f"{'max rel err':>12s}")
    ratios = []
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    with tempfile.TemporaryDirectory() as cache:
        os.environ["OPSCOPE_CACHE_DIR"] = cache
        for name in args.models.split(","):
            e, c, best, packed, first, pack, warm, rel = bench(name, args.repeats, dtype)
            ratios.append(c / e)
            print(f"{name:22s} {e:9.2f} {c:12.2f} {c / e:14.2f}x {best:9.2f}x {packed:15.2f}x {first:17.0f} {pack:15.0f} "
                  f"{warm:8.0f} {rel:12.1e}", flush=True)
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"geomean compiled/eager: {geo:.2f}x over {len(ratios)} models; load: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
