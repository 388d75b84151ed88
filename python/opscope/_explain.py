"""opscope.explain: what opscope.compile made of each region of a graph, and what the
region costs against the eager ops it replaced.

    e = opscope.explain(model, x, repeats=5)
    print(e)        # one row per region and per eager node, in graph order, and the totals
    e.rows          # the same as records (Row), for programs; e.regions, e.eager, e.totals()
    e.output        # the function's output, as the compiled steps computed it

For the signature of the arguments, each step of the compiled plan is a row:
- a region: its aten ops, what it became (fused kernels and library calls such as matmul,
  from the compiler's report, or an eager fallback), the modules its ops came from, its
  predicted and measured time compiled, and the same for its eager ops;
- an eager node: its op and why it stayed eager.

Measured: the region's compiled function, and its nodes' aten ops one by one on the same
device inputs, `repeats` times each, alternated, each call between two
opscope.synchronize() (the device runs asynchronously); the median, in ms.
Predicted: a roofline estimate, max(bytes / copy rate, flops / matmul rate). Compiled, a
region moves its inputs and outputs once (a lower bound: a matmul's output that a fused
kernel reads again is not counted); eager, the sum of each op's own roofline, an op moving
its inputs and outputs, a view nothing. Flops are 2*M*N*K per matmul (mm, bmm, addmm) and
per convolution. Launch costs are not in it. The two rates come from a probe run once per
process on the device: a 64 MiB copy and a 1024^3 matmul, the fastest of 5 calls each.
"""
import dataclasses
import operator
import re
import statistics
import textwrap
import time

import torch

from . import _device
from ._dynamic import Affine
from ._compile import _VIEWS as _LOWERED_VIEWS, CompiledFunction, _flat_args, compile as _compile, eager_call, origin

aten = torch.ops.aten

_VIEWS = {aten.view.default, aten._unsafe_view.default, aten._reshape_alias.default, aten.expand.default,
          aten.permute.default, aten.transpose.int, aten.t.default, aten.unsqueeze.default, aten.squeeze.dim,
          aten.squeeze.default, aten.slice.Tensor, aten.select.int, aten.split.Tensor,
          aten.split_with_sizes.default, aten.alias.default, aten.detach.default, operator.getitem}
_COMPILED_VIEWS = _LOWERED_VIEWS | {"as_strided"}  # the lowering's view instructions, and the graph's view node
_RATES = {}  # device -> (copy bytes/s, matmul flop/s)


@dataclasses.dataclass
class Row:
    """One step of a compiled plan. Times in ms: predicted (roofline) and measured (median)."""
    kind: str                 # "region" or "eager"
    name: str                 # "region 0", or the eager node's name
    ops: list                 # its aten ops in graph order ("aten::addmm", ...)
    became: list              # a region's fused kernels and library calls, in order; [] for an eager node
    modules: list             # the innermost module of each op, once each, in order
    reason: str               # why an eager node stayed eager ("" for a region)
    predicted_ms: float       # compiled
    predicted_eager_ms: float
    compiled_ms: float        # an eager node: its own time, as the compiled call runs it
    eager_ms: float
    # A region's kernels, most device time first: (name, launches per call, device ms per
    # call, origins), from one profiled call; where a whole model is one region, this says
    # where its time goes.
    kernels: list = dataclasses.field(default_factory=list)

    @property
    def ratio(self):
        """Measured compiled / eager: below 1, the region wins."""
        return self.compiled_ms / self.eager_ms if self.eager_ms > 0 else float("nan")


def _time_s(fn):
    _device.synchronize()
    t0 = time.perf_counter()
    fn()
    _device.synchronize()
    return time.perf_counter() - t0


def _medians_ms(fns, repeats, pick=statistics.median):
    """Median ms of each function: a warm-up call each, then `repeats` rounds, alternated."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for i in range(repeats):
        order = list(range(len(fns))) if i % 2 == 0 else list(reversed(range(len(fns))))
        for k in order:
            times[k].append(_time_s(fns[k]) * 1e3)
    return [pick(t) for t in times]


def rates(dev):
    """(copy bytes/s, matmul flop/s) of the device, measured once per process: the fastest of
    5 calls each (a roof is the best the device reaches; a busy machine reads low)."""
    if dev not in _RATES:
        src, dst = torch.ones(1 << 24).to(dev), torch.empty(1 << 24, device=dev)
        a = torch.randn(1024, 1024).to(dev)
        copy_ms, mm_ms = _medians_ms([lambda: dst.copy_(src), lambda: torch.mm(a, a)], 5, pick=min)
        _RATES[dev] = (2 * src.numel() * 4 / (copy_ms * 1e-3), 2 * 1024 ** 3 / (mm_ms * 1e-3))
    return _RATES[dev]


def _bytes(value):
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_bytes(v) for v in value)
    return 0


def _flops(node, args, out):
    """2*M*N*K of a matmul or convolution node (its output times the length of its dot products)."""
    if node.target in (aten.mm.default, aten.bmm.default, aten.addmm.default):
        a = args[1] if node.target is aten.addmm.default else args[0]
        return 2 * out.numel() * a.shape[-1]
    conv2d_act = getattr(getattr(torch.ops, "opscope", None), "conv2d_act", None)
    if node.target is aten.convolution.default or (conv2d_act is not None and node.target is conv2d_act.default):
        transposed = node.target is aten.convolution.default and args[6]
        return 2 * (args[0] if transposed else out).numel() * args[1][0].numel()
    return 0


def _roofline_ms(nbytes, flops, dev):
    copy, mm = rates(dev)
    return max(nbytes / copy, flops / mm) * 1e3


def _at(a, s):
    """A dynamic plan's argument at size s: its Affine integers evaluated."""
    if isinstance(a, Affine):
        return a.at(s)
    if isinstance(a, (list, tuple)):
        return type(a)(_at(x, s) for x in a)
    if isinstance(a, dict):
        return {k: _at(v, s) for k, v in a.items()}
    return a


class _Eager:
    """Nodes run one by one, as eager torch runs them, on values from `env`; `s`: a dynamic
    plan's size for this call (its eager nodes' Affine integers follow it)."""

    def __init__(self, nodes, env, s=None):
        self.nodes, self.s = nodes, s
        self.inputs = {a: env[a] for n in nodes for a in n.all_input_nodes if a not in nodes}

    def __call__(self):
        env = dict(self.inputs)
        for n in self.nodes:
            target, args, kwargs = eager_call(n)
            args, kwargs = torch.fx.node.map_arg((args, kwargs), env.__getitem__)
            if self.s is not None:
                args, kwargs = _at(args, self.s), _at(kwargs, self.s)
            env[n] = target(*args, **kwargs)
        return env

    def costs(self, env):
        """[(bytes, flops)] of each op, from one run's values `env`: its inputs and outputs
        (none for a view), and its matmul or convolution flops."""
        costs = []
        for n in self.nodes:
            args = torch.fx.node.map_arg(n.args, env.__getitem__)
            args = args if self.s is None else _at(args, self.s)
            nbytes = 0 if n.target in _VIEWS else _bytes(list(args)) + _bytes(env[n])
            costs.append((nbytes, _flops(n, args, env[n])))
        return costs


def _became(report):
    """The compiled graph's launching nodes, in order: fused kernels and library calls."""
    if report.eager_fallback:
        return [f"eager fallback ({report.fallback_reason})"]
    names = re.findall(r"^  %\d+: .*? = (\w+)\(", report.compiled_graph, re.M)
    return [n for n in names if n not in _COMPILED_VIEWS]


def _modules(nodes):
    mods = [origin(n)[1][-1] for n in nodes if origin(n)[1]]
    return list(dict.fromkeys(mods))


def _ops(nodes):
    return [origin(n)[0] for n in nodes if n.target is not operator.getitem]


def _region_nodes(region, env, order):
    """The nodes the region's outputs are computed from that no earlier step computed, in graph order."""
    seen, stack = set(), list(region.outputs)
    while stack:
        n = stack.pop()
        if n not in seen and n not in env:
            seen.add(n)
            stack.extend(n.all_input_nodes)
    return sorted(seen, key=order.__getitem__)


def _kernel_times(fn):
    """The kernels one call of fn launches: [(name, launches, device ms, origins)], most
    device time first (opscope's profiler, runtime and device layers)."""
    from .profiler import profile  # here: the profiler imports the package
    _device.synchronize()
    with profile() as prof:
        fn()
        _device.synchronize()
    rows = sorted((r for r in prof.key_averages() if r.kind == "kernel"), key=lambda r: -r.device_time_total)
    return [(r.key, r.count, r.device_time_total / 1e3, r.origins) for r in rows]


def _region_row(k, region, env, order, dev, repeats):
    ins = [env[n] for n in region.inputs]
    eager = _Eager(_region_nodes(region, env, order), env)
    compiled_ms, eager_ms = _medians_ms([lambda: region.fn(ins), eager], repeats)
    outs = region.fn(ins)
    costs = eager.costs(eager())
    predicted = _roofline_ms(_bytes(ins) + _bytes(outs), sum(f for _, f in costs), dev)
    predicted_eager = sum(_roofline_ms(b, f, dev) for b, f in costs)
    row = Row("region", f"region {k}", _ops(eager.nodes), _became(region.fn.report(ins)), _modules(eager.nodes), "",
              predicted, predicted_eager, compiled_ms, eager_ms)
    row.kernels = _kernel_times(lambda: region.fn(ins))
    return row, dict(zip(region.outputs, outs))


def _eager_reason(plan, node):
    if node in plan.eager_reasons:
        return plan.eager_reasons[node]
    if node.target is operator.getitem:
        return "item of an eager op's result"
    if node.target in _VIEWS:
        return "a view, no kernel either way"
    return "one kernel either way"  # a region _worth_compiling turned down


def _mutates(node):
    schema = getattr(node.target, "_schema", None)
    return schema is not None and schema.is_mutable


def _eager_row(plan, node, env, dev, repeats, s=None):
    """An eager node, timed; one that writes into its inputs runs (and is timed) once only."""
    eager, values = _Eager([node], env, s), {}
    if _mutates(node):
        ms = _time_s(lambda: values.update(eager())) * 1e3
    else:
        (ms,) = _medians_ms([eager], repeats)
        values = eager()
    predicted = _roofline_ms(*eager.costs(values)[0], dev)
    row = Row("eager", node.name, _ops([node]) or [origin(node)[0]], [], _modules([node]), _eager_reason(plan, node),
              predicted, predicted, ms, ms)
    return row, {node: values[node]}


def explain_plan(name, plan, flat, repeats=5):
    """Explanation of one signature's plan (`flat`: state, then the arguments): runs its steps
    one by one, as the plan's code does, timing each on its inputs before going on."""
    dev = next(t.device for t in flat if isinstance(t, torch.Tensor))
    order = {n: i for i, n in enumerate(plan.gm.graph.nodes)}
    rows = []
    s = None if plan.size is None else flat[plan.size[0]].shape[plan.size[1]]  # dynamic=True: this call's size
    with torch.no_grad():
        env = plan.initial_env(flat)
        for kind, item in plan.steps:
            if kind == "region":
                k = sum(r.kind == "region" for r in rows)
                row, values = _region_row(k, item, env, order, dev, repeats)
            else:
                row, values = _eager_row(plan, item, env, dev, repeats, s)
            rows.append(row)
            env.update(values)
        out = next(n for n in plan.gm.graph.nodes if n.op == "output").args[0]
        output = torch.fx.node.map_arg(out, env.__getitem__)
    args = flat[len(plan.state):]
    signature = ", ".join(f"{t.dtype}{tuple(t.shape)}".replace("torch.", "") for t in args)
    if s is not None:
        signature += f"; the dynamic plan at s = {s}"
    return Explanation(name, signature, repeats, rates(dev), rows, output)


def _counted(names):
    """"addmm x2, gelu": each name once, in order, with its count."""
    counts = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(n if c == 1 else f"{n} x{c}" for n, c in counts.items())


def _folded(modules):
    """Module paths with layers alike folded: h.0.attn, h.1.attn -> "h.N.attn x2"."""
    return _counted(re.sub(r"(^|\.)\d+(?=\.|$)", r"\1N", m) for m in modules)


_FMT = "{:<16} {:<30} {:<36} {:<22} {:>8} {:>8} {:>9} {:>9} {:>5}"
_WIDTHS = (30, 36, 22)


def _row_lines(step, cells, times):
    """A row of the table; a cell too long for its column is cut, and given in full below."""
    shown, below = [], []
    for (label, text), width in zip(cells, _WIDTHS):
        shown.append(text if len(text) <= width else text[:width - 3] + "...")
        if len(text) > width:
            below += textwrap.wrap(f"{label}: {text}", 110, initial_indent=" " * 17, subsequent_indent=" " * 19)
    predicted, predicted_eager, compiled, eager = times
    ratio = f"{compiled / eager:.2f}" if eager > 0 else "-"
    us = [f"{ms * 1e3:.1f}" for ms in times]
    step = step if len(step) <= 16 else step[:13] + "..."
    return [_FMT.format(step, *shown, *us, ratio)] + below


_KERNELS_SHOWN = 6


def _kernel_lines(kernels):
    """A region's kernels under its row: the largest few with their share of its device time."""
    total = sum(ms for _, _, ms, _ in kernels)
    if not kernels or total <= 0:
        return []
    lines = [" " * 17 + f"kernels (one profiled call, {total * 1e3:.1f} us of device time):"]
    for name, n, ms, origins in kernels[:_KERNELS_SHOWN]:
        where = f"  <- {origins}" if origins else ""
        lines.append(" " * 19 + f"{100 * ms / total:5.1f}%  {ms * 1e3:9.1f} us  {name} x{n}{where}"[:140])
    if len(kernels) > _KERNELS_SHOWN:
        lines.append(" " * 19 + f"and {len(kernels) - _KERNELS_SHOWN} more")
    return lines


class Explanation:
    """What opscope.explain returns: `rows` (Row, graph order), `output`, and a table as str()."""

    def __init__(self, name, signature, repeats, rates, rows, output):
        self.name, self.signature, self.repeats = name, signature, repeats
        self.copy_gbps, self.matmul_gflops = rates[0] / 1e9, rates[1] / 1e9
        self.rows, self.output = rows, output

    @property
    def regions(self):
        return [r for r in self.rows if r.kind == "region"]

    @property
    def eager(self):
        return [r for r in self.rows if r.kind == "eager"]

    def totals(self):
        """Sums over the rows: predicted and measured ms, compiled and eager."""
        fields = ("predicted_ms", "predicted_eager_ms", "compiled_ms", "eager_ms")
        return {f: sum(getattr(r, f) for r in self.rows) for f in fields}

    def __str__(self):
        n = len(self.regions)
        head = (f"opscope.explain: {self.name} ({self.signature}): {n} region{'s' * (n != 1)}, {len(self.eager)} "
                f"eager nodes; times in us, measured: median of {self.repeats}; predicted: a roofline at "
                f"{self.copy_gbps:.1f} GB/s copy, {self.matmul_gflops:.1f} GFLOP/s matmul")
        lines = [head, _FMT.format("step", "aten ops", "became / why eager", "modules", "pred", "pred eg",
                                   "compiled", "eager", "c/e")]
        for r in self.rows:
            ops = (f"{len(r.ops)}: " if r.kind == "region" else "") + _counted(o.split("::")[-1] for o in r.ops)
            what = _counted(r.became) if r.kind == "region" else "eager: " + r.reason
            cells = (("ops", ops), ("became", what), ("modules", _folded(r.modules)))
            lines += _row_lines(r.name, cells, (r.predicted_ms, r.predicted_eager_ms, r.compiled_ms, r.eager_ms))
            lines += _kernel_lines(r.kernels)
        lines += _row_lines("total", (("", ""),) * 3, tuple(self.totals().values()))
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, *args, repeats=5):
    """For the signature of `args`: each region of fn's compiled graph and what it became, each
    eager node and why, with predicted (a roofline estimate) and measured times against the
    eager ops (see the module doc). fn: a function, an nn.Module or an opscope.compile result;
    args: tensors, or lists, tuples and dicts of them (a KV cache), as opscope.compile takes.
    A compile result with dynamic=True explains the plan its call would run: the plan for every
    size where it takes these arguments, its eager steps at their size s."""
    if not callable(fn):
        raise TypeError(f"[opscope.explain] expected a function or an nn.Module, got {type(fn).__name__}")
    if not args:
        raise TypeError("[opscope.explain] no arguments: explain compiles and times fn for the arguments given")
    bad = [type(a).__name__ for a in _flat_args(args)[0] if not isinstance(a, torch.Tensor)]
    if bad:
        raise TypeError(f"[opscope.explain] every argument must be a tensor, or lists, tuples or dicts of tensors "
                        f"(got {', '.join(bad)})")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"[opscope.explain] repeats: expected a positive int, got {repeats!r}")
    compiled = fn if isinstance(fn, CompiledFunction) else _compile(fn)
    plan, flat = compiled._plan(args)
    return explain_plan(compiled.name, plan, flat, repeats)
