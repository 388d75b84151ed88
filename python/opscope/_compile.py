"""opscope.compile: PyTorch functions and modules through opscope's compiler (the
torch.compile analog for torch 1.13, which has make_fx but no dynamo).

    f = opscope.compile(naive_rms_norm)
    y = f(x, w)          # first call for this signature: make_fx (fake tensors), lower, compile
    y = f(x, w)          # later calls: the cached plan, one fused kernel

The first call's values come from the eager ops (each region traces by running them); the
generated kernels compute from the second call on, so compare a later call's values when
checking them.

A call traces once per input signature into an aten graph, cuts it into regions of ops
opscope lowers (elementwise, reductions, norms, softmax, matmul, views, casts), and hands
each region to the compiler (passes dce, cse, fold, fuse; generated C++; cached artifact; weights packed).
Nodes it cannot lower run eagerly on the device, with one warning each: the result is
never wrong. Module parameters and buffers are inputs of the graph, not constants, so a
changed weight needs no recompile.
"""
import builtins
import operator
import sys
import warnings

import torch
import torch.nn.modules.module as _module_hooks
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils import stateless
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack as _get_dispatch_modes

from . import _C
from ._dynamic import Affine
from . import _dynamic
from ._graph_rewrites import (drop_unused, eager_call, fold_batch_norms, foldable_nodes, fuse_conv_epilogues,
                              rewrite_constant_masks)

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
            da, db = _val(a).dtype, _val(b).dtype
            if da != db:  # opscope's ops take one dtype; the eager op promotes as torch does
                raise _Unlowered(f"operands of dtypes {da} and {db}")
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


def _lower_split(n, ref):
    """split's value is a list: its items (getitem nodes) are slices of its input."""
    _tensor_ref(n.args[0])
    return []


def _split_bounds(n):
    x = n.args[0]
    dim = n.args[2] if len(n.args) > 2 else n.kwargs.get("dim", 0)
    size = _val(x).shape[dim]
    if n.target is aten.split_with_sizes.default:
        sizes = list(n.args[1])
    else:
        step = n.args[1]
        sizes = [min(step, size - i) for i in range(0, size, step)] if step > 0 else [size]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return dim % _val(x).dim(), starts, sizes


def _lower_split_item(split, i):
    dim, starts, sizes = _split_bounds(split)
    return [("slice", [split.args[0]], [dim, starts[i], starts[i] + sizes[i], 1], [], 0)]


def _lower_embedding(n, ref):
    w, idx = n.args[:2]
    if len(n.args) > 2 and n.args[2] != -1 or any(bool(a) for a in n.args[3:]):
        raise _Unlowered("padding_idx, scale_grad_by_freq or sparse")
    if _val(idx).dtype not in (torch.int64, torch.int32):
        raise _Unlowered(f"indices of dtype {_val(idx).dtype}")
    return [("embedding", [ref(w), ref(idx)], [], [], 0)]


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
    aten.split.Tensor: _lower_split, aten.split_with_sizes.default: _lower_split,
    aten.embedding.default: _lower_embedding,
})
_SPLITS = (aten.split.Tensor, aten.split_with_sizes.default)
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


def lower_graph(gm, folded=()):
    """Splits gm's graph into steps: ("region", _Segment) of lowered nodes, ("eager", node).
    Nodes in `folded` are constants of the plan (computed once). Returns (steps, {node:
    reason} for the nodes left eager)."""
    steps, eager_reasons = [], {}
    current = _Segment()

    def flush():
        nonlocal current
        if current.nodes:
            steps.append(("region", current))
        current = _Segment()

    for n in gm.graph.nodes:
        if n.op in ("placeholder", "output", "get_attr") or n in folded:
            continue
        if "opscope_dynamic" in n.meta:  # dynamic=True: its shapes or sizes change between calls
            eager_reasons[n] = n.meta["opscope_dynamic"]
            flush()
            steps.append(("eager", n))
            continue
        if n.op == "call_function" and n.target is operator.getitem:
            src = n.args[0]
            if not n.users:  # native_layer_norm's unused mean and rstd
                continue
            if src in current.program and src.target is aten.native_layer_norm.default and n.args[1] == 0:
                current.nodes.append(n)
                current.program[n] = "alias"
                continue
            if src in current.program and src.target in _SPLITS:
                current.nodes.append(n)
                current.program[n] = _lower_split_item(src, n.args[1])
                continue
            flush()
            steps.append(("eager", n))
            continue
        lower = LOWERINGS.get(n.target) if n.op == "call_function" else None
        try:
            if lower is None:
                raise _Unlowered("no lowering")
            # native_layer_norm's value is a tuple: its input's dtype is the one that counts
            _check_dtype(n.args[0] if n.target is aten.native_layer_norm.default or n.target in _SPLITS else n)
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


_MATMULS = {aten.mm.default, aten.bmm.default, aten.addmm.default}


def _worth_compiling(region):
    """Whether compiling the region can beat its eager ops: two or more ops that launch
    (one fused kernel for several), or a matmul (a library call with strides folded in)."""
    computing = 0
    for n in region.nodes:
        prog = region.program[n]
        if prog == "alias" or not any(i[0] not in _VIEWS for i in prog):
            continue
        computing += 2 if n.target in _MATMULS else 1
    return computing >= 2


def origin(node):
    """(aten op, module calls around it) of an fx node: what a kernel made from it names."""
    schema = getattr(node.target, "_schema", None)
    op = schema.name if schema is not None else getattr(node.target, "__name__", str(node.target))
    return op, tuple(node.meta.get("opscope_modules", ()))


class _CompiledRegion:
    """A region's nodes that its outputs need, as one program compiled by opscope: one
    graph computes every output (values two consumers share are computed once)."""

    def __init__(self, name, region, outs, explain, disabled):
        needed, stack = set(), list(outs)
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
        program, origins, origin_of = [], [], {}
        for n in region.nodes:
            if n not in needed:
                continue
            if region.program[n] == "alias":
                index[n] = index[n.args[0]]
                continue
            where = origin(n)
            if where not in origin_of:
                origin_of[where] = len(origins)
                origins.append(where)
            for instr in region.program[n]:
                op, refs, ints, floats, flag = instr
                here = len(inputs) + len(program)
                resolved = [index[r] if isinstance(r, torch.fx.Node) else here + r for r in refs]
                program.append(_C._Instr(op, resolved, list(ints), list(floats), flag, origin_of[where]))
            index[n] = len(inputs) + len(program) - 1
        self.inputs = inputs
        self.outputs = list(outs)
        self.nodes = [n for n in region.nodes if n in needed]
        self.ops = [i.op for i in program]
        self.origins = origins
        self.fn = _C._Region(name, program, len(inputs), [index[o] for o in outs], explain, disabled, origins)


class _Plan:
    """A traced and lowered graph for one input signature."""

    def __init__(self, name, gm, explain, disabled=(), n_state=0, size=None):
        self.gm = gm
        self.size = size  # dynamic=True: (placeholder, dim) of the size s, else None
        self.state = [n for n in gm.graph.nodes if n.op == "placeholder"][:n_state]
        # What the rewrites did, a line each (explain=True prints them).
        self.rewrites = (drop_unused(gm) + rewrite_constant_masks(gm, self.state) + fold_batch_norms(gm, self.state)
                         + fuse_conv_epilogues(gm))
        if explain:
            for line in self.rewrites:
                print(f"[opscope.compile] {name}: {line}", file=sys.stderr)
        self.folded, everything, self.stateful = foldable_nodes(gm, self.state)
        steps, reasons = lower_graph(gm, everything)
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
            if not _worth_compiling(region):  # one kernel either way: the eager op is that kernel
                self.steps.extend(("eager", n) for n in region.nodes if n.target not in _SPLITS)
                continue
            last = order[region.nodes[-1]]
            outs = [n for n in region.nodes if n.target not in _SPLITS and
                    (users_after.get(n, -1) > last or any(u.op == "output" for u in n.users))]
            if outs:
                self.steps.append(("region", _CompiledRegion(name, region, outs, explain, list(disabled))))
        self.regions = [s[1] for s in self.steps if s[0] == "region"]

    def _fold(self, env, which):
        with torch.no_grad():
            for n in self.gm.graph.nodes:
                if n in which:
                    target, args, kwargs = eager_call(n)
                    args, kwargs = torch.fx.node.map_arg((args, kwargs), env.__getitem__)
                    env[n] = target(*args, **kwargs)
        return env

    def _bind(self):
        """What run() needs, made once: argument-independent values computed on the
        device, and the steps as one Python function (no interpreter loop per call)."""
        nodes = list(self.gm.graph.nodes)
        placeholders = [n for n in nodes if n.op == "placeholder"]
        self._get_attrs = {n: getattr(self.gm, n.target) for n in nodes if n.op == "get_attr"}
        _, everything, _ = foldable_nodes(self.gm, self.state)
        env = self._fold(dict(self._get_attrs), everything - self.stateful)
        constants = {n: env[n] for n in list(self._get_attrs) + list(self.folded - self.stateful)}
        self._const_env = env
        # Values that read the state: computed again when a state tensor changes.
        self._stateful_kept = [n for n in nodes if n in self.folded and n in self.stateful]
        self._state_deps = [n for n in self.state if any(u in self.stateful for u in n.users)]
        self._state_dep_at = [self.state.index(n) for n in self._state_deps]  # their places in `flat`
        self._state_key = None
        out = next(n for n in nodes if n.op == "output").args[0]
        stateful = {n: i for i, n in enumerate(self._stateful_kept)}
        self._run = _StepCode(placeholders, constants, self.steps, out, stateful, size=self.size).function()
        self._run_profiled = _StepCode(placeholders, constants, self.steps, out, stateful, profiled=True,
                                       size=self.size).function()

    def _stateful_values(self, flat):
        """The folded values that read parameters or buffers, for the state in `flat`:
        computed again when one of those tensors is another or was changed in place."""
        if not self._stateful_kept:
            return ()
        key = tuple((id(flat[i]), flat[i]._version) for i in self._state_dep_at)
        if key != self._state_key:
            env = dict(self._const_env)
            env.update(zip(self.state, flat))  # flat starts with the state, in order
            env = self._fold(env, self.stateful)
            self._state_values = [env[n] for n in self._stateful_kept]
            self._state_key = key
        return self._state_values

    def initial_env(self, flat):
        """{node: value} before the first step, for the flat inputs: the placeholders, the
        constants and the folded values (opscope.explain runs the steps from it)."""
        if not hasattr(self, "_run"):
            self._bind()
        env = dict(self._const_env)
        env.update(zip(self._stateful_kept, self._stateful_values(flat)))
        env.update(zip((n for n in self.gm.graph.nodes if n.op == "placeholder"), flat))
        return env

    def run(self, flat, reports=None, profiled=False):
        """Runs the steps on the flat inputs (state, then arguments); with `reports`, each
        region's compile report is appended to it first. profiled: while a profile records,
        the eager steps run inside the ranges of the modules they came from (the regions'
        launches open their own)."""
        if not hasattr(self, "_run"):
            self._bind()
        return (self._run_profiled if profiled else self._run)(flat, reports, self._stateful_values(flat))


class _ModuleRanges:
    """Module ranges around a compiled call's eager steps: between two steps only the
    ranges that differ close and open (as the C++ executor does for its launches)."""

    def __init__(self):
        self.open = ()

    def enter(self, want):
        k = 0
        while k < len(self.open) and k < len(want) and self.open[k] == want[k]:
            k += 1
        for _ in range(len(self.open) - k):
            _C._range_pop()
        for name in want[k:]:
            _C._range_push(name)
        self.open = want


class _StepCode:
    """A plan's steps as the source of one Python function, as fx turns a graph into
    code: each eager node a call of its aten op, each region a call of its compiled
    function, values in local variables."""

    def __init__(self, placeholders, constants, steps, out, stateful=None, profiled=False, size=None):
        self.ns = {"_ModuleRanges": _ModuleRanges}
        self.names = {n: f"sf[{i}]" for n, i in (stateful or {}).items()}
        self.lines = ["    ranges = _ModuleRanges()"] if profiled else []
        for i, n in enumerate(placeholders):
            self.names[n] = f"a{i}"
        self.lines.append(f"    {', '.join(self.names[n] for n in placeholders)}{',' if placeholders else ''} = flat"
                          if placeholders else "    pass")
        if size is not None:  # dynamic=True: s, the size the eager steps' Affine integers follow
            self.lines.append(f"    s = flat[{size[0]}].shape[{size[1]}]")
        for n, value in constants.items():
            self.names[n] = self._const(value)
        last_use = self._last_uses(steps, out)
        for k, (kind, item) in enumerate(steps):
            if profiled:  # a region opens its launches' ranges itself, from the call's op
                stack = origin(item)[1][1:] if kind == "eager" else ()
                self.lines.append(f"    ranges.enter({self._const(stack)})")
            if kind == "eager":
                name = self.names[item] = f"v{len(self.names)}"
                target, item_args, item_kwargs = eager_call(item)
                args = ", ".join(self._expr(a) for a in item_args)
                kwargs = ", ".join(f"{key}={self._expr(v)}" for key, v in item_kwargs.items())
                self.lines.append(f"    {name} = {self._const(target)}({', '.join(x for x in (args, kwargs) if x)})")
            else:
                fn = self._const(item.fn)
                ins = ", ".join(self._expr(i) for i in item.inputs)
                self.lines.append(f"    if reports is not None: reports.append({fn}.report([{ins}]))")
                outs = []
                for o in item.outputs:
                    outs.append(f"v{len(self.names)}")
                    self.names[o] = outs[-1]
                self.lines.append(f"    {', '.join(outs)}, = {fn}([{ins}])")
            # An intermediate is dropped after its last step, as eager drops it: a plan that
            # held every one to the end of the call (mobilenet_v3_small: 67 MB still allocated
            # when its `features` range closed, eager 0.6) spread over memory the caches miss.
            dead = [self.names[n] for n in last_use.get(k, ()) if self.names.get(n, "").startswith("v")]
            if dead:
                self.lines.append(f"    del {', '.join(dead)}")
        if profiled:
            self.lines.append("    ranges.enter(())")
        self.lines.append(f"    return {self._expr(out)}")

    @staticmethod
    def _last_uses(steps, out):
        """{step index: the nodes no later step or the output reads}; a step's own outputs
        that nothing reads are dead after it too."""
        last = {}
        for k, (kind, item) in enumerate(steps):
            produced = [item] if kind == "eager" else item.outputs
            for n in produced:
                last.setdefault(n, k)
            read = []
            if kind == "eager":
                torch.fx.node.map_arg((item.args, item.kwargs), read.append)
            else:
                read = item.inputs
            for n in read:
                last[n] = k
        kept = []
        torch.fx.node.map_arg(out, kept.append)
        by_step = {}
        for n, k in last.items():
            if n not in kept:
                by_step.setdefault(k, []).append(n)
        return by_step

    def _const(self, value):
        name = f"k{len(self.ns)}"
        self.ns[name] = value
        return name

    def _expr(self, a):
        if isinstance(a, torch.fx.Node):
            return self.names[a]
        if isinstance(a, (list, tuple)):
            items = ", ".join(self._expr(x) for x in a)
            return f"[{items}]" if isinstance(a, list) else f"({items}{',' if len(a) == 1 else ''})"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self._const(k)}: {self._expr(v)}" for k, v in a.items()) + "}"
        if a is None or isinstance(a, (bool, int)):
            return repr(a)
        if isinstance(a, Affine):
            return a.expr("s")
        return self._const(a)

    def source(self):
        return "def run(flat, reports, sf):\n" + "\n".join(self.lines) + "\n"

    def function(self):
        exec(builtins.compile(self.source(), "<opscope.compile plan>", "exec"), self.ns)
        return self.ns["run"]


class _ModuleStacks:
    """While make_fx traces a module: the module calls open around each node it records,
    kept as node.meta["opscope_modules"] (outermost first, named as opscope.profiler names
    module ranges: the outermost by its class, the rest by their path in it)."""

    def __init__(self, root):
        self.root = root
        self.stack = []
        self.handles = []
        self.paths = {}
        if root is not None:
            self.paths = {m: (p or type(root).__name__) for p, m in root.named_modules()}

    def __enter__(self):
        if self.root is not None:
            self.handles = [_module_hooks.register_module_forward_pre_hook(self._pre),
                            _module_hooks.register_module_forward_hook(self._post)]
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        return False

    def _pre(self, module, inputs):
        self.stack.append(self.paths.get(module))

    def _post(self, module, inputs, output):
        if self.stack:
            self.stack.pop()

    def tagging(self, f):
        """f, with the tracer's nodes tagged by the module calls open when each is made."""
        stacks = self

        def traced(*flat):
            for mode in _get_dispatch_modes():
                tracer = getattr(mode, "tracer", None)
                if tracer is not None and not hasattr(tracer, "_opscope_tagged"):
                    make = tracer.create_node

                    def create_node(*a, **k):
                        node = make(*a, **k)
                        node.meta["opscope_modules"] = tuple(p for p in stacks.stack if p is not None)
                        return node
                    tracer.create_node = create_node
                    tracer._opscope_tagged = True
            return f(*flat)
        return traced


def _shown(x):
    return str(tuple(x)) if isinstance(x, (torch.Size, tuple, list)) else str(x)


def _signature(flat):
    sig = []
    for t in flat:
        if isinstance(t, torch.Tensor):
            sig.append((t.shape, t.stride(), t.dtype, t.device, t.requires_grad))
        else:
            sig.append(("const", repr(t)))
    return tuple(sig)


def _flat_args(args):
    """(the arguments' leaves, a hashable key of their lists, tuples and dicts), in
    pytree's order, without pytree's cost on every call (0.1 ms for a 2-layer KV cache).
    The key is None where every argument is a tensor."""
    if all(isinstance(a, torch.Tensor) for a in args):
        return list(args), None
    leaves = []

    def walk(x):
        if isinstance(x, (list, tuple)):
            return (type(x).__name__, tuple(walk(v) for v in x))
        if isinstance(x, dict):
            return ("dict", tuple(x), tuple(walk(v) for v in x.values()))
        leaves.append(x)
        return None

    return leaves, walk(tuple(args))


class CompiledFunction:
    """What opscope.compile returns: call it as the original. `.plans` holds one lowered
    graph per input signature; `.report(*args)` tells what that signature compiled into."""

    def __init__(self, fn, name=None, explain=False, disabled=(), recompile_limit=8, dynamic=False):
        self.module = fn if isinstance(fn, torch.nn.Module) else None
        self.dynamic = dynamic
        self._dyn = None         # dynamic=True: (Fit, plan) once two sizes fitted
        self._dyn_key = None     # the state's names and the arguments' structure it holds for
        self._dyn_off = None     # why dynamic=True gave up, once it has
        self._last_trace = None  # ((names, structure), fingerprint) of the last raw trace
        self._fits = 0           # fits of two sizes made
        self.recompile_limit = recompile_limit
        self.disabled = tuple(disabled)
        self.fn = fn
        self.name = name or (type(fn).__name__ if self.module is not None else getattr(fn, "__name__", "compiled"))
        self.explain = explain
        self.plans = {}
        self._signatures = {}  # plan key -> its readable signature, for the recompile report
        self._slots = None
        self._warned = set()
        # In a profile the whole call is one op (regions and the eager ops between them);
        # the call that traces and builds a signature is "compile:<name>", as in C++.
        self._op = _C._FrameworkOp(self.name)
        self._compile_op = _C._FrameworkOp("compile:" + self.name)

    def _state(self):
        """The module's parameters and buffers, (names, tensors). Where each lives (its
        module's _parameters or _buffers, and key) is found once by walking the module tree;
        later calls read those slots (a walk was ~0.5 ms a call on mobilenet_v3_small), and
        walk again when a slot is gone or holds no tensor. A tensor assigned to a slot, or
        its .data replaced, is read as the new value by the next call."""
        if self.module is None:
            return (), []
        if self._slots is not None:
            try:
                tensors = [d[k] for d, k in self._slots]
                if all(isinstance(t, torch.Tensor) for t in tensors):
                    return self._names, tensors
            except KeyError:
                pass
        names, tensors, slots = [], [], []
        for kind, items in (("_parameters", self.module.named_parameters()), ("_buffers", self.module.named_buffers())):
            for k, v in items:
                path, _, attr = k.rpartition(".")
                names.append(k)
                tensors.append(v)
                slots.append((getattr(self.module.get_submodule(path), kind), attr))
        self._names, self._slots = tuple(names), slots
        return self._names, tensors

    def _trace(self, names, state, leaves, spec):
        """make_fx of the call on flat tensors (the state, then the arguments' leaves): the
        arguments' lists, tuples and dicts (a KV cache) are rebuilt inside the traced function,
        so the graph's placeholders are the leaves and its output keeps the call's structure."""
        n = len(state)
        if self.module is not None:
            module = self.module

            def f(*flat):
                args = tuple(flat[n:]) if spec is None else pytree.tree_unflatten(list(flat[n:]), spec)
                return stateless.functional_call(module, dict(zip(names, flat[:n])), tuple(args))
        else:
            fn = self.fn

            def f(*flat):
                return fn(*(flat if spec is None else pytree.tree_unflatten(list(flat), spec)))
        with torch.no_grad(), _ModuleStacks(self.module) as stacks:
            return make_fx(stacks.tagging(f), tracing_mode="fake")(*state, *leaves)

    def _leaves(self, args):
        """(the arguments' leaves, their structure for make_fx): None where every argument is
        a tensor. The leaves are _flat_args' (what a call's key reads), in the same order."""
        if all(isinstance(a, torch.Tensor) for a in args):
            return list(args), None
        leaves, spec = pytree.tree_flatten(tuple(args))
        mine, _ = _flat_args(args)
        if len(leaves) != len(mine) or any(a is not b for a, b in zip(leaves, mine)):
            raise TypeError(f"[opscope.compile] {self.name}: arguments of a structure pytree flattens another way "
                            f"({type(args).__name__} of {[type(a).__name__ for a in args]}) are not supported")
        return leaves, spec

    def _key(self, args):
        names, state = self._state()
        leaves, shape = _flat_args(args)
        flat = state + leaves
        sig = _C._signature_key(flat)  # bytes, exact; None where an argument is not a tensor
        return (names, shape, sig if sig is not None else _signature(flat)), names, state, flat

    def _plan(self, args):
        """The plan a call with `args` runs, compiling its signature where none does: with
        dynamic=True, the plan for every size where it takes this call (as __call__ finds
        it, without a trace); (plan, the call's flat inputs)."""
        key, names, state, flat = self._key(args)
        if key not in self.plans and self._dynamic_takes(key, flat):
            return self._dyn[1], flat
        return self._build(key, names, state, args), flat

    def _dynamic_takes(self, key, flat):
        """Whether the learnt plan for every size takes a call of this key and flat inputs."""
        return self._dyn is not None and key[:2] == self._dyn_key and self._dyn[0].accepts(flat)

    def _build(self, key, names, state, args):
        plan = self.plans.get(key)
        if plan is None:
            leaves, spec = self._leaves(args)
            if any(not isinstance(a, torch.Tensor) for a in leaves):
                raise TypeError(f"[opscope.compile] {self.name}: every argument must be a tensor, or lists, tuples "
                                f"or dicts of tensors (got {[type(a).__name__ for a in leaves]})")
            gm = self._trace(names, state, leaves, spec)
            if self.dynamic:  # before the plan's rewrites change the graph
                self._last_trace = (key[:2], _dynamic.fingerprint(gm))
            plan = self._add_plan(key, names, state, leaves, _Plan(self.name, gm, self.explain, self.disabled,
                                                                    n_state=len(state)))
        return plan

    def _add_plan(self, key, names, state, leaves, plan):
        self._warn_eager(plan)
        self.plans[key] = plan
        self._signatures[key] = (names, _signature(state + leaves))
        return plan

    def _warn_eager(self, plan, skip=None):
        """One warning per op type the plan runs eagerly, saying why (but `skip`'s reasons)."""
        for node, why in plan.eager_reasons.items():
            if (skip is None or skip not in why) and str(node.target) not in self._warned:
                self._warned.add(str(node.target))
                warnings.warn(f"opscope.compile: {self.name}: {node.target} runs eagerly ({why})", stacklevel=4)

    def _dynamic_plan(self, key, names, state, args, flat):
        """dynamic=True: the plan for every size, where this call's inputs fit it, checked by a
        trace at the next size and at each power of two after (_dynamic.py). A call it does
        not fit is traced and fitted against the last trace (the first size seen is often
        another layout: a prefill's cache is a view, a decode step's a new tensor); where
        that does not fit either, its trace becomes this signature's own plan. None: give
        the call to the static path."""
        if self._dyn_off is not None:
            return None
        if self._dynamic_takes(key, flat):
            fit, plan = self._dyn
            s = fit.size_of(flat)
            if s not in fit.checked and (len(fit.checked) < 3 or s & (s - 1) == 0):
                fit.checked.add(s)
                leaves, spec = self._leaves(args)
                if not fit.matches(_dynamic.fingerprint(self._trace(names, state, leaves, spec)), s):
                    self._give_up_dynamic(f"the graph at size {s} is not the one the sizes before it predict")
                    return None
            return plan
        if self._last_trace is None or self._last_trace[0] != key[:2]:
            return None
        leaves, spec = self._leaves(args)
        if any(not isinstance(a, torch.Tensor) for a in leaves):
            return None
        self._fits += 1
        if self._fits > 4:
            self._give_up_dynamic("four fits of two sizes did not hold for the next call")
            return None
        gm = self._trace(names, state, leaves, spec)
        fp = _dynamic.fingerprint(gm)
        fit, why = _dynamic.fit(self._last_trace[1], fp)
        self._last_trace = (key[:2], fp)
        if fit is None:  # this size on its own, from the trace made
            if not self._admit(names, flat):
                return None
            return self._add_plan(key, names, state, leaves, _Plan(self.name, gm, self.explain, self.disabled,
                                                                    n_state=len(state)))
        _dynamic.mark(gm, fit)
        plan = _Plan(self.name, gm, self.explain, self.disabled, n_state=len(state), size=(fit.sym_leaf, fit.sym_dim))
        self._dyn, self._dyn_key = (fit, plan), key[:2]
        n = len(state)
        where = f"argument leaf {fit.sym_leaf - n}" if fit.sym_leaf >= n else f"state {names[fit.sym_leaf]}"
        moving = sorted({str(node.target) for node, why in plan.eager_reasons.items() if "dynamic size" in why})
        if "dynamic" not in self._warned:
            self._warned.add("dynamic")
            none = (": every op follows s, so the plan runs eagerly; without dynamic=True each size compiles on its "
                    "own" if not plan.regions else "")
            warnings.warn(f"[opscope.compile] {self.name}: dynamic: one plan for every size s of {where}, dim "
                          f"{fit.sym_dim} ({len(plan.regions)} compiled regions; {len(moving)} op types run eagerly "
                          f"as their shapes follow s: {', '.join(moving)}){none}", stacklevel=3)
        self._warn_eager(plan, skip="dynamic size")
        return plan

    def _give_up_dynamic(self, why):
        self._dyn, self._dyn_off = None, why
        warnings.warn(f"[opscope.compile] {self.name}: dynamic=True gave up: {why}; each size compiles on its own "
                      f"from now on (recompile_limit={self.recompile_limit})", stacklevel=4)

    def _describe_change(self, names, flat):
        """What differs between the call's inputs and the signature compiled last: "argument
        0: shape (1, 12) -> (1, 13)" (sequence lengths, dtypes, devices), for the recompile report."""
        sig, (old_names, old_sig) = _signature(flat), self._signatures[next(reversed(self.plans))]
        if names != old_names:
            return "the module's parameters or buffers changed"
        n = len(names)
        for i, (new, old) in enumerate(zip(sig, old_sig)):
            if new == old:
                continue
            what = f"argument {i - n}" if i >= n else f"state {names[i]}"
            if new[0] == "const" or old[0] == "const":
                return f"{what}: {old} -> {new}"
            fields = ("shape", "stride", "dtype", "device", "requires_grad")
            shown = [f"{f} {_shown(o)} -> {_shown(v)}" for f, v, o in zip(fields, new, old) if v != o]
            return f"{what}: " + ", ".join(shown)
        return f"{len(sig)} inputs instead of {len(old_sig)}"

    def _admit(self, names, flat):
        """Whether a new signature compiles: reported as a recompile (what changed), and
        refused past recompile_limit (as dynamo's cache_size_limit): then the call runs
        eagerly, with one warning, instead of compiling without end."""
        if not self.plans:
            return True
        if len(self.plans) >= self.recompile_limit:
            if "recompile_limit" not in self._warned:
                self._warned.add("recompile_limit")
                warnings.warn(f"[opscope.compile] {self.name}: {len(self.plans)} input signatures compiled "
                              f"(recompile_limit={self.recompile_limit}); new ones run eagerly from now on. "
                              f"Last change: {self._describe_change(names, flat)}", stacklevel=3)
            return False
        change = self._describe_change(names, flat)
        hint = "" if self.dynamic or " shape " not in change else "; dynamic=True makes one plan for every size"
        warnings.warn(f"[opscope.compile] {self.name}: recompiling ({len(self.plans) + 1} of at most "
                      f"{self.recompile_limit}) for {change}{hint}", stacklevel=3)
        return True

    def __call__(self, *args):
        key, names, state, flat = self._key(args)
        plan = self.plans.get(key)
        if plan is None and self.dynamic:
            plan = self._dynamic_plan(key, names, state, args, flat)
        if plan is None and not self._admit(names, flat):
            return self.fn(*args)
        op = self._op if plan is not None else self._compile_op
        opened = op.begin(args)  # False unless a profile records torch's ops
        grad = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)  # what torch.no_grad() does, without its object
        fresh = plan is None
        try:
            if fresh:
                plan = self._build(key, names, state, args)
            out = plan.run(flat, profiled=opened)
        finally:
            torch._C._set_grad_enabled(grad)
            if opened:
                op.end()
        if fresh and self.explain:  # the first call of a signature: what each region became, and its times
            from ._explain import explain_plan  # here: _explain imports this module
            print(explain_plan(self.name, plan, flat), file=sys.stderr)
        return out

    def report(self, *args):
        """The compiler's report of each region for this signature (compiling it first)."""
        plan, flat = self._plan(args)
        reports = []
        with torch.no_grad():
            plan.run(flat, reports)
        return reports


PASSES = ("dce", "cse", "fold", "fuse", "attention", "rotary", "pack", "residual")


def compile(fn, *, name=None, dynamic=False, passes=PASSES, explain=False, recompile_limit=8):
    """Compiles a function of tensors or an nn.Module for opscope's device (see module doc).
    passes: the compiler passes to run, a subset of ("dce", "cse", "fold", "fuse", "attention",
    "rotary", "pack", "residual"), in their fixed order (passes=() runs the graph op by op, for
    comparison; "attention" makes f32 attention, its matmuls, score scale and masks and
    softmax, one kernel on the CPU; "rotary" makes f32 RoPE, x * cos + rotate_half(x) * sin,
    one kernel on the CPU; "pack" packs the weights of f32 and bf16 matmuls once for oneDNN,
    and repacks one that was written; "residual", with "pack", has such an f32 matmul add a
    residual or multiply a gate in its launch). explain=True prints the
    graph after each pass and, on the first call of each signature, opscope.explain's table
    (each region, what it became, its predicted and measured time against its eager ops).
    A new input shape compiles again, with a warning that says what changed; past
    recompile_limit signatures (dynamo's cache_size_limit is 8) new ones run eagerly.
    dynamic=True: from the second size of a dimension that changes between calls (a KV
    cache's length in decode), one plan serves every size (opscope/_dynamic.py): the ops
    whose shapes follow that size run eagerly, the others compile once. It assumes the
    function's Python does not branch on the size; the plan is checked against a fresh trace
    at the third size and at each power of two, and gives up (each size compiling on its own)
    where they differ."""
    if not isinstance(dynamic, bool):
        raise TypeError(f"[opscope.compile] dynamic: expected True or False, got {dynamic!r}")
    if not callable(fn):
        raise TypeError(f"[opscope.compile] expected a function or an nn.Module, got {type(fn).__name__}")
    if isinstance(passes, str):
        passes = [p.strip() for p in passes.split(",") if p.strip()]
    unknown = [p for p in passes if p not in PASSES]
    if unknown:
        raise ValueError(f"[opscope.compile] passes: unknown pass {unknown[0]!r} (expected some of {', '.join(PASSES)})")
    if not isinstance(recompile_limit, int) or recompile_limit < 1:
        raise ValueError(f"[opscope.compile] recompile_limit: expected a positive int, got {recompile_limit!r}")
    return CompiledFunction(fn, name=name, explain=explain, disabled=[p for p in PASSES if p not in passes],
                            recompile_limit=recompile_limit, dynamic=dynamic)


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
