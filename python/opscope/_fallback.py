"""Which aten ops ran torch's CPU kernel instead of an opscope kernel (torch_xla's metrics report)."""
from . import _C


def fallback_stats():
    """{"aten::name.overload": {"count": n, "time_ms": t}} since the last reset."""
    return {name: {"count": n, "time_ms": ns / 1e6} for name, n, ns in _C.fallback_stats()}


def reset_fallback_stats():
    _C.reset_fallback_stats()


def fallback_report():
    """A table of the fallen-back ops, most frequent first."""
    stats = sorted(fallback_stats().items(), key=lambda kv: (-kv[1]["count"], kv[0]))
    if not stats:
        return "opscope: no aten op fell back to the CPU"
    width = max(len("op"), *(len(k) for k, _ in stats))
    lines = [f"{'op':<{width}}  {'count':>8}  {'time (ms)':>10}"]
    lines += [f"{name:<{width}}  {s['count']:>8}  {s['time_ms']:>10.3f}" for name, s in stats]
    return "\n".join(lines)
