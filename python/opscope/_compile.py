"""opscope.compile: PyTorch functions and modules through opscope's compiler (the
torch.compile analog for torch 1.13, which has make_fx but no dynamo).

    f = opscope.compile(naive_rms_norm)
    y = f(x, w)          # first call for this signature: make_fx (fake tensors), lower, compile
    y = f(x, w)          # later calls: the cached plan, one fused kernel

A call traces once per input signature into an aten graph, cuts it into regions of ops
opscope lowers (elementwise, reductions, norms, softmax, matmul, views, casts), and hands
each region to the compiler (passes dce, cse, fold, fuse; generated C++; cached artifact).
Nodes it cannot lower run eagerly on the device, with one warning each: the result is
never wrong. Module parameters and buffers are inputs of the graph, not constants, so a
changed weight needs no recompile.
"""
import operator
import warnings

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils import stateless

from . import _C

aten = torch.ops.aten

__all__ = ["compile", "CompiledFunction", "lower_graph", "LOWERINGS"]

_UNARY = {aten.neg.default: "neg", aten.abs.default: "abs", aten.exp.default: "exp", aten.log.default: "log",
          aten.sqrt.default: "sqrt", aten.rsqrt.default: "rsqrt", aten.sin.default: "sin", aten.cos.default: "cos",
          aten.tanh.default: "tanh", aten.sigmoid.default: "sigmoid", aten.silu.default: "silu",
          aten.relu.default: "relu", aten.clone.default: "clone"}
_BINARY = {aten.add.Tensor: "add", aten.sub.Tensor: "sub", aten.mul.Tensor: "mul", aten.div.Tensor: "div",
           aten.add.Scalar: "add", aten.sub.Scalar: "sub", aten.mul.Scalar: "mul", aten.div.Scalar: "div",
           aten.pow.Tensor_Scalar: "pow", aten.pow.Tensor_Tensor: "pow", aten.maximum.default: "maximum",
           aten.minimum.default: "minimum"}
_REDUCE = {aten.sum.dim_IntList: "sum", aten.mean.dim: "mean", aten.amax.default: "max", aten.amin.default: "min"}
_DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.int32: "i32", torch.int64: "i64"}


class _Unlowered(Exception):
    """This node stays eager (the message says why)."""


def _val(node):
    v = node.meta.get("val")
    if not isinstance(v, torch.Tensor):
        raise _Unlowered("no tensor metadata")
    return v


def _dims(node, dims):
    rank = _val(node).dim()
    if isinstance(dims, int):
        dims = [dims]
    return sorted(d % rank if rank else 0 for d in dims)


def _check_dtype(node):
    if _val(node).dtype not in _DTYPES:
        raise _Unlowered(f"dtype {_val(node).dtype} has no opscope kernels")


# Each lowering: (node, ref) -> [(op, refs, ints, floats, flag)], the last one the node's value.
# ref(arg) gives the operand's value index (or raises _Unlowered for a non-tensor).
def _lower_unary(op):
    return lambda n, ref: [(op, [ref(n.args[0])], [], [], 0)]


def _lower_binary(op):
    def lower(n, ref):
        a, b = n.args[0], n.args[1]
        alpha = n.kwargs.get("alpha", 1)
        if len(n.args) > 2:
            alpha = n.args[2]
        if alpha != 1:
            if op not in ("add", "sub") or not isinstance(b, torch.fx.Node):
                raise _Unlowered("alpha")
            return [("mul", [ref(b)], [], [float(alpha)], 0), (op, [ref(a), -1], [], [], 0)]
        if isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node):
            return [(op, [ref(a), ref(b)], [], [], 0)]
        if isinstance(a, torch.fx.Node) and isinstance(b, (int, float)) and not isinstance(b, bool):
            return [(op, [ref(a)], [], [float(b)], 0)]
        if isinstance(b, torch.fx.Node) and isinstance(a, (int, float)) and op in ("add", "sub", "mul", "div"):
            return [(op, [ref(b)], [], [float(a)], 1)]
        raise _Unlowered("operands")
    return lower


def _lower_reduce(op):
    def lower(n, ref):
        x = n.args[0]
        dims = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", [])
        keepdim = n.args[2] if len(n.args) > 2 else n.kwargs.get("keepdim", False)
        if n.kwargs.get("dtype") is not None:
            raise _Unlowered("dtype argument")
        if not dims:
            dims = list(range(_val(x).dim()))
        return [(op, [ref(x)], _dims(x, dims), [], int(bool(keepdim)))]
    return lower


def _lower_softmax(n, ref):
    x, dim, half_to_float = n.args
    if half_to_float:
        raise _Unlowered("half_to_float")
    return [("softmax", [ref(x)], [dim % max(_val(x).dim(), 1)], [], 0)]


def _lower_layer_norm(n, ref):
    x, shape, w, b, eps = n.args
    if len(shape) != 1:
        raise _Unlowered("normalized over more than the last axis")
    if any(u.target is not operator.getitem or (u.args[1] != 0 and u.users) for u in n.users):
        raise _Unlowered("its mean or rstd is used")
    # Negative refs name this lowering's own instructions: -k = k instructions before.
    prog, refs = [], [ref(x)]
    for t, fill in ((w, "ones"), (b, "zeros")):
        if t is None:
            prog.append((fill, [ref(x)], list(shape), [], 0))
            refs.append(("local", len(prog) - 1))
        else:
            refs.append(ref(t))
    at = len(prog)
    refs = [-(at - r[1]) if isinstance(r, tuple) else r for r in refs]
    prog.append(("layer_norm", refs, [], [float(eps)], 0))
    return prog


def _lower_view(n, ref):
    shape = list(_val(n).shape)
    return [("reshape", [ref(n.args[0])], shape, [], 0)]


def _lower_expand(n, ref):
    return [("expand", [ref(n.args[0])], list(_val(n).shape), [], 0)]


def _lower_permute(n, ref):
    x, dims = n.args
    rank = _val(x).dim()
    return [("permute", [ref(x)], [d % rank for d in dims], [], 0)]


def _lower_transpose(n, ref):
    x, a, b = n.args
    rank = _val(x).dim()
    return [("transpose", [ref(x)], [a % rank, b % rank], [], 0)]


def _lower_t(n, ref):
    x = n.args[0]
    if _val(x).dim() < 2:
        return [("reshape", [ref(x)], list(_val(n).shape), [], 0)]
    return [("transpose", [ref(x)], [0, 1], [], 0)]


def _lower_unsqueeze(n, ref):
    x, d = n.args
    return [("unsqueeze", [ref(x)], [d % (_val(x).dim() + 1)], [], 0)]


def _lower_squeeze_dim(n, ref):
    x, d = n.args
    if _val(x).shape[d] != 1:
        return [("reshape", [ref(x)], list(_val(n).shape), [], 0)]
    return [("squeeze", [ref(x)], [d % _val(x).dim()], [], 0)]


def _lower_slice(n, ref):
    x = n.args[0]
    dim = n.args[1] if len(n.args) > 1 else 0
    start = n.args[2] if len(n.args) > 2 else None
    end = n.args[3] if len(n.args) > 3 else None
    step = n.args[4] if len(n.args) > 4 else 1
    size = _val(x).shape[dim]
    start = 0 if start is None else max(min(start + size if start < 0 else start, size), 0)
    end = size if end is None else max(min(end + size if end < 0 else end, size), start)
    return [("slice", [ref(x)], [dim % _val(x).dim(), start, end, step], [], 0)]


def _lower_mm(n, ref):
    return [("matmul", [ref(n.args[0]), ref(n.args[1])], [], [], 0)]


def _lower_addmm(n, ref):
    bias, a, b = n.args[:3]
    if n.kwargs.get("beta", 1) != 1 or n.kwargs.get("alpha", 1) != 1:
        raise _Unlowered("beta/alpha")
    return [("matmul", [ref(a), ref(b)], [], [], 0), ("add", [-1, ref(bias)], [], [], 0)]


def _lower_to_copy(n, ref):
    extra = {k: v for k, v in n.kwargs.items() if k not in ("dtype", "layout", "device") and v is not None}
    if extra or n.kwargs.get("device") not in (None, _val(n.args[0]).device):
        raise _Unlowered("device or memory format change")
    dt = _val(n).dtype
    if dt not in _DTYPES:
        raise _Unlowered(f"dtype {dt}")
    return [("to", [ref(n.args[0])], [_C._dtype_code(_DTYPES[dt])], [], 0)]


def _lower_gelu(n, ref):
    if n.kwargs.get("approximate", "none") != "none":
        raise _Unlowered("tanh approximation")
    return [("gelu", [ref(n.args[0])], [], [], 0)]


def _lower_cat(n, ref):
    xs = n.args[0]
    dim = n.args[1] if len(n.args) > 1 else 0
    return [("concat", [ref(x) for x in xs], [dim % _val(n).dim()], [], 0)]


def _lower_rms_norm(n, ref):
    x, w, eps = n.args
    return [("rms_norm", [ref(x), ref(w)], [], [float(eps)], 0)]


LOWERINGS = {}
LOWERINGS.update({t: _lower_unary(op) for t, op in _UNARY.items()})
LOWERINGS.update({t: _lower_binary(op) for t, op in _BINARY.items()})
LOWERINGS.update({t: _lower_reduce(op) for t, op in _REDUCE.items()})
LOWERINGS.update({
    aten._softmax.default: _lower_softmax,
    aten.native_layer_norm.default: _lower_layer_norm,
    aten.view.default: _lower_view, aten._unsafe_view.default: _lower_view, aten._reshape_alias.default: _lower_view,
    aten.reshape.default: _lower_view,
    aten.expand.default: _lower_expand, aten.permute.default: _lower_permute,
    aten.transpose.int: _lower_transpose, aten.t.default: _lower_t,
    aten.unsqueeze.default: _lower_unsqueeze, aten.squeeze.dim: _lower_squeeze_dim,
    aten.slice.Tensor: _lower_slice,
    aten.mm.default: _lower_mm, aten.bmm.default: _lower_mm, aten.addmm.default: _lower_addmm,
    aten._to_copy.default: _lower_to_copy, aten.gelu.default: _lower_gelu, aten.cat.default: _lower_cat,
})
if hasattr(torch.ops, "opscope") and hasattr(torch.ops.opscope, "rms_norm"):
    LOWERINGS[torch.ops.opscope.rms_norm.default] = _lower_rms_norm
_VIEWS = {"reshape", "expand", "permute", "transpose", "unsqueeze", "squeeze", "slice"}


def _tensor_ref(a):
    """A lowering's operand: an fx node (a tensor the graph computes or takes)."""
    if not isinstance(a, torch.fx.Node):
        raise _Unlowered(f"argument {a!r} is not a tensor")
    return a


# ---- cutting the graph into regions


class _Segment:
    def __init__(self):
        self.nodes = []      # fx nodes in order
        self.program = {}    # node -> list of instructions (refs as nodes / negative locals)


def lower_graph(gm):
    """Splits gm's graph into steps: ("region", _Segment) of lowered nodes, ("eager", node).
    Returns (steps, {node: reason} for the nodes left eager)."""
    steps, eager_reasons = [], {}
    current = _Segment()

    def flush():
        nonlocal current
        if current.nodes:
            steps.append(("region", current))
        current = _Segment()

    for n in gm.graph.nodes:
        if n.op in ("placeholder", "output", "get_attr"):
            continue
        if n.op == "call_function" and n.target is operator.getitem:
            src = n.args[0]
            if not n.users:  # native_layer_norm's unused mean and rstd
                continue
            if src in current.program and src.target is aten.native_layer_norm.default and n.args[1] == 0:
                current.nodes.append(n)
                current.program[n] = "alias"
                continue
            flush()
            steps.append(("eager", n))
            continue
        lower = LOWERINGS.get(n.target) if n.op == "call_function" else None
        try:
            if lower is None:
                raise _Unlowered("no lowering")
            # native_layer_norm's value is a tuple: its input's dtype is the one that counts
            _check_dtype(n.args[0] if n.target is aten.native_layer_norm.default else n)
            prog = lower(n, _tensor_ref)
        except _Unlowered as e:
            eager_reasons[n] = str(e)
            flush()
            steps.append(("eager", n))
            continue
        current.nodes.append(n)
        current.program[n] = prog
    flush()
    return steps, eager_reasons


def _is_view_only(region):
    return all(p == "alias" or all(i[0] in _VIEWS for i in p) for p in region.program.values())


class _CompiledRegion:
    """One output of a region: the program of the nodes it needs, compiled by opscope."""

    def __init__(self, name, region, out, explain, disabled):
        needed, stack = set(), [out]
        while stack:
            n = stack.pop()
            if n in needed or n not in region.program:
                continue
            needed.add(n)
            if region.program[n] == "alias":
                stack.append(n.args[0])
                continue
            for instr in region.program[n]:
                stack.extend(r for r in instr[1] if isinstance(r, torch.fx.Node))
        inputs, index = [], {}
        for n in region.nodes:
            if n not in needed or region.program[n] == "alias":
                continue
            for instr in region.program[n]:
                for r in instr[1]:
                    if isinstance(r, torch.fx.Node) and r not in region.program and r not in index:
                        index[r] = len(inputs)
                        inputs.append(r)
        program = []
        for n in region.nodes:
            if n not in needed:
                continue
            if region.program[n] == "alias":
                index[n] = index[n.args[0]]
                continue
            for instr in region.program[n]:
                op, refs, ints, floats, flag = instr
                here = len(inputs) + len(program)
                resolved = [index[r] if isinstance(r, torch.fx.Node) else here + r for r in refs]
                program.append(_C._Instr(op, resolved, list(ints), list(floats), flag))
            index[n] = len(inputs) + len(program) - 1
        self.inputs = inputs
        self.output = out
        self.ops = [i.op for i in program]
        self.fn = _C._Region(name, program, len(inputs), index[out], explain, disabled)


class _Plan:
    """A traced and lowered graph for one input signature."""

    def __init__(self, name, gm, explain, disabled=()):
        self.gm = gm
        steps, reasons = lower_graph(gm)
        self.eager_reasons = reasons
        users_after = {}
        order = {n: i for i, n in enumerate(gm.graph.nodes)}
        for n in gm.graph.nodes:
            for u in n.users:
                if u.target is operator.getitem and not u.users:
                    continue  # native_layer_norm's unused mean and rstd
                users_after[n] = max(users_after.get(n, -1), order[u])
        self.steps = []
        for kind, item in steps:
            if kind == "eager":
                self.steps.append(("eager", item))
                continue
            region = item
            last = order[region.nodes[-1]]
            outs = [n for n in region.nodes if users_after.get(n, -1) > last or any(u.op == "output" for u in n.users)]
            computing = sum(1 for n in region.nodes if region.program[n] != "alias" and
                            any(i[0] not in _VIEWS for i in region.program[n]))
            if computing < 2:  # one kernel either way: the eager op is that kernel
                self.steps.extend(("eager", n) for n in region.nodes)
                continue
            for out in outs:
                self.steps.append(("region", _CompiledRegion(name, region, out, explain, list(disabled))))
        self.regions = [s[1] for s in self.steps if s[0] == "region"]

    def _bind(self):
        """What run() needs of the graph, found once: placeholders, constants, the output."""
        nodes = list(self.gm.graph.nodes)
        self._placeholders = [n for n in nodes if n.op == "placeholder"]
        self._constants = {n: getattr(self.gm, n.target) for n in nodes if n.op == "get_attr"}
        self._out = next(n for n in nodes if n.op == "output").args[0]

    def run(self, flat, reports=None):
        """Runs the steps on the flat inputs (state, then arguments); with `reports`, each
        region's compile report is appended to it first."""
        if not hasattr(self, "_out"):
            self._bind()
        env = dict(zip(self._placeholders, flat))
        env.update(self._constants)
        for kind, item in self.steps:
            if kind == "eager":
                args, kwargs = torch.fx.node.map_arg((item.args, item.kwargs), env.__getitem__)
                env[item] = item.target(*args, **kwargs)
            else:
                ins = [env[i] for i in item.inputs]
                if reports is not None:
                    reports.append(item.fn.report(ins))
                env[item.output] = item.fn(ins)
        out = self._out
        return env[out] if isinstance(out, torch.fx.Node) else torch.fx.node.map_arg(out, env.__getitem__)


def _signature(flat):
    sig = []
    for t in flat:
        if isinstance(t, torch.Tensor):
            sig.append((t.shape, t.stride(), t.dtype, t.device, t.requires_grad))
        else:
            sig.append(("const", repr(t)))
    return tuple(sig)


class CompiledFunction:
    """What opscope.compile returns: call it as the original. `.plans` holds one lowered
    graph per input signature; `.report(*args)` tells what that signature compiled into."""

    def __init__(self, fn, name=None, explain=False, disabled=()):
        self.module = fn if isinstance(fn, torch.nn.Module) else None
        self.disabled = tuple(disabled)
        self.fn = fn
        self.name = name or (type(fn).__name__ if self.module is not None else getattr(fn, "__name__", "compiled"))
        self.explain = explain
        self.plans = {}
        self._warned = set()
        # In a profile the whole call is one op (regions and the eager ops between them);
        # the call that traces and builds a signature is "compile:<name>", as in C++.
        self._op = _C._FrameworkOp(self.name)
        self._compile_op = _C._FrameworkOp("compile:" + self.name)

    def _state(self):
        if self.module is None:
            return [], []
        names, tensors = [], []
        for k, v in list(self.module.named_parameters()) + list(self.module.named_buffers()):
            names.append(k)
            tensors.append(v)
        return names, tensors

    def _trace(self, names, state, args):
        if self.module is not None:
            module = self.module
            n = len(state)

            def f(*flat):
                return stateless.functional_call(module, dict(zip(names, flat[:n])), tuple(flat[n:]))
        else:
            fn = self.fn

            def f(*flat):
                return fn(*flat)
        with torch.no_grad():
            return make_fx(f, tracing_mode="fake")(*state, *args)

    def _key(self, args):
        names, state = self._state()
        flat = state + list(args)
        return (tuple(names), _signature(flat)), names, state, flat

    def _plan(self, args):
        key, names, state, flat = self._key(args)
        return self._build(key, names, state, args), flat

    def _build(self, key, names, state, args):
        plan = self.plans.get(key)
        if plan is None:
            if any(not isinstance(a, torch.Tensor) for a in args):
                raise TypeError(f"[opscope.compile] {self.name}: every argument must be a tensor "
                                f"(got {[type(a).__name__ for a in args]})")
            plan = _Plan(self.name, self._trace(names, state, args), self.explain, self.disabled)
            for node, why in plan.eager_reasons.items():
                key_w = str(node.target)
                if key_w not in self._warned:
                    self._warned.add(key_w)
                    warnings.warn(f"opscope.compile: {self.name}: {node.target} runs eagerly ({why})", stacklevel=3)
            self.plans[key] = plan
        return plan

    def __call__(self, *args):
        key, names, state, flat = self._key(args)
        plan = self.plans.get(key)
        op = self._op if plan is not None else self._compile_op
        opened = op.begin(args)  # False unless a profile records torch's ops
        grad = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)  # what torch.no_grad() does, without its object
        try:
            if plan is None:
                plan = self._build(key, names, state, args)
            return plan.run(flat)
        finally:
            torch._C._set_grad_enabled(grad)
            if opened:
                op.end()

    def report(self, *args):
        """The compiler's report of each region for this signature (compiling it first)."""
        plan, flat = self._plan(args)
        reports = []
        with torch.no_grad():
            plan.run(flat, reports)
        return reports


PASSES = ("dce", "cse", "fold", "fuse")


def compile(fn, *, name=None, dynamic=False, passes=PASSES, explain=False):
    """Compiles a function of tensors or an nn.Module for opscope's device (see module doc).
    passes: the compiler passes to run, a subset of ("dce", "cse", "fold", "fuse"), in their
    fixed order (passes=() runs the graph op by op, for comparison). explain=True prints the
    graph after each pass. dynamic=True is not supported yet: each new shape compiles again."""
    if dynamic:
        raise ValueError("[opscope.compile] dynamic=True is not supported: each input shape compiles its own graph")
    if not callable(fn):
        raise TypeError(f"[opscope.compile] expected a function or an nn.Module, got {type(fn).__name__}")
    if isinstance(passes, str):
        passes = [p.strip() for p in passes.split(",") if p.strip()]
    unknown = [p for p in passes if p not in PASSES]
    if unknown:
        raise ValueError(f"[opscope.compile] passes: unknown pass {unknown[0]!r} (expected some of {', '.join(PASSES)})")
    return CompiledFunction(fn, name=name, explain=explain, disabled=[p for p in PASSES if p not in passes])


def _dynamo_backend(gm, example_inputs):
    """torch.compile(model, backend="opscope") on a torch with dynamo: dynamo hands over a
    torch-level FX graph; make_fx turns it into aten ops and the same lowering runs."""
    aten_gm = make_fx(gm, tracing_mode="fake")(*example_inputs)
    name = getattr(gm, "_get_name", lambda: "dynamo_graph")()
    plan = _Plan(name, aten_gm, False)
    op = _C._FrameworkOp(name)

    def run(*args):
        opened = op.begin(args)
        try:
            with torch.no_grad():
                return plan.run(list(args))
        finally:
            if opened:
                op.end()
    return run


if hasattr(torch, "_dynamo") and hasattr(torch._dynamo, "register_backend"):  # torch >= 2.0; not 1.13
    torch._dynamo.register_backend(name="opscope")(_dynamo_backend)
