"""opscope.compile(..., dynamic=True): one plan for every size of a dimension that changes
between calls (a KV cache's length during decode), without symbolic tracing (torch 1.13's
make_fx has none that works on real models).

Two traces at two sizes are compared node by node. Where the graphs have the same ops in
the same order, every integer argument that differs (a view's size, an arange's end) and
every input's shape and strides are fitted as a * s + b, s being the first input dimension
that changed. A third size is traced once to check the fit, and so is every power of two
of s after it (a branch on the size in the model's Python shows there as a graph that no
longer matches). Nodes whose shapes, strides or integer arguments move with s run eagerly,
their integers computed from s (the layouts they get are their kernels' to choose); every
other node compiles once, for all sizes.
"""
import torch

from . import _C
from ._graph_rewrites import eager_call

__all__ = ["Affine", "Fit", "fingerprint", "fit", "mark"]


class Affine:
    """An integer argument a * s + b of an eager step: rendered into the plan's code."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def at(self, s):
        return self.a * s + self.b

    def expr(self, s="s"):
        return f"({self.a} * {s} + {self.b})" if self.b else f"({self.a} * {s})"

    def __repr__(self):  # fx's code generation prints it (the plan never runs that code)
        return f"opscope_affine({self.a}, {self.b})"


def _walk(a, ints, shape):
    """The argument `a` with its integers taken out into `ints`, the rest described in
    `shape` (nodes by their position: two graphs' nodes line up by position, not identity)."""
    if isinstance(a, torch.fx.Node):
        shape.append(("node", a._opscope_index))
    elif isinstance(a, bool) or a is None:
        shape.append(a)
    elif isinstance(a, int):
        ints.append(a)
        shape.append("int")
    elif isinstance(a, (list, tuple)):
        shape.append(("seq", type(a).__name__, len(a)))
        for x in a:
            _walk(x, ints, shape)
    elif isinstance(a, dict):
        shape.append(("dict", tuple(a)))
        for x in a.values():
            _walk(x, ints, shape)
    else:
        shape.append(("const", repr(a)))


def _sizes_strides(t):
    """A tensor's sizes, then its strides (0 for a dim of size 1, whose stride nothing reads:
    torch gives a leading (1, s, s) mask the stride s * s), as one tuple."""
    shape = tuple(t.shape)
    return shape + tuple(0 if n == 1 else int(d) for n, d in zip(shape, t.stride()))


def _layout(node):
    """A node's tensors' _sizes_strides, each followed by -1, as one list (empty for no
    tensor)."""
    v = node.meta.get("val")
    vals = v if isinstance(v, (tuple, list)) else (v,)
    out = []
    for t in vals:
        if isinstance(t, torch.Tensor):
            out.extend(_sizes_strides(t))
            out.append(-1)  # a shape that changes rank does not line up
    return out


def _kind(node):
    v = node.meta.get("val")
    return (v.dtype, str(v.device)) if isinstance(v, torch.Tensor) else None


def fingerprint(gm):
    """Per node: (op, target, arguments' shape, their ints, the layout's ints, (dtype,
    device) of a tensor)."""
    nodes = list(gm.graph.nodes)
    for i, n in enumerate(nodes):
        n._opscope_index = i
    fp = []
    for n in nodes:
        ints, shape = [], []
        _, args, kwargs = eager_call(n)  # the arguments a step runs with (_reshape_alias: its sizes)
        _walk((args, kwargs), ints, shape)
        fp.append((n.op, n.target, tuple(shape), ints, _layout(n), _kind(n)))
    return fp


def _structure(entry):
    op, target, shape, _, _, kind = entry
    return op, target, shape, kind


class Fit:
    """What two traces agree on: the size s (placeholder `sym_leaf`'s dimension `sym_dim`),
    each changing integer as (a, b), and which nodes move with s."""

    def __init__(self, sym_leaf, sym_dim, args_fit, layout_fit, dynamic, structure, checked):
        self.sym_leaf, self.sym_dim = sym_leaf, sym_dim
        self.args_fit = args_fit      # node index -> [Affine per int of its arguments]
        self.layout_fit = layout_fit  # node index -> [Affine per int of its layout]: the inputs,
        #                               and the nodes whose layout does not move
        self.dynamic = dynamic        # node index -> why it runs eagerly
        self._structure = structure   # per node: _structure() of its fingerprint entry
        self.n_placeholders = sum(1 for st in structure if st[0] == "placeholder")
        self.checked = set(checked)   # sizes traced to check the fit
        self._checks = [self._input_check(i) for i in range(self.n_placeholders)]
        self._moving = [i for i, c in enumerate(self._checks) if c[3]]     # inputs with a dim that follows s
        self._fixed = [i for i, c in enumerate(self._checks) if not c[3]]  # the others (the parameters)
        self._fixed_key = None        # the signature key of the inputs that do not follow s, once taken

    def size_of(self, flat):
        return int(flat[self.sym_leaf].shape[self.sym_dim])

    def _input_check(self, i):
        """Input i's (dtype, device, its layout's constant ints with None where they follow s,
        [(position, a, b)] of those), read on every call."""
        fits = self.layout_fit[i][:-1]  # without the separator
        fixed = tuple(None if f.a else f.b for f in fits)
        moving = [(k, f.a, f.b) for k, f in enumerate(fits) if f.a]
        dtype, device = self._structure[i][3]
        return dtype, torch.device(device), fixed, moving

    @staticmethod
    def _takes(t, check, s):
        dtype, device, fixed, moving = check
        if t.dtype != dtype:
            return False
        got = _sizes_strides(t)
        if len(got) != len(fixed):
            return False
        if moving:
            got = list(got)
            for k, a, b in moving:
                if got[k] != a * s + b:
                    return False
                got[k] = None
            got = tuple(got)
        return got == fixed and t.device == device

    def accepts(self, flat):
        """Whether the inputs' dtypes, devices, shapes and strides are the fit's at their
        size s. On every decode step: the inputs that do not follow s (the parameters, most
        of them) are checked once per layout, by their exact signature key (checked one by
        one, 49 inputs took 50 us a step)."""
        if len(flat) != self.n_placeholders or flat[self.sym_leaf].dim() <= self.sym_dim:
            return False
        s = self.size_of(flat)
        key = _C._signature_key([flat[i] for i in self._fixed])
        if key is None or key != self._fixed_key:
            if not all(self._takes(flat[i], self._checks[i], s) for i in self._fixed):
                return False
            self._fixed_key = key
        return all(self._takes(flat[i], self._checks[i], s) for i in self._moving)

    def matches(self, fp, s):
        """Whether a trace at size s is what the fit predicts: the same ops on the same
        inputs, every integer argument a * s + b, the inputs' layouts a * s + b, and the
        layouts that did not move unchanged (those that move are the kernels' to choose)."""
        if len(fp) != len(self._structure):
            return False
        for i, entry in enumerate(fp):
            if _structure(entry) != self._structure[i]:
                return False
            ints, layout = entry[3], entry[4]
            want = self.args_fit[i]
            if len(ints) != len(want) or any(w.at(s) != g for w, g in zip(want, ints)):
                return False
            lay = self.layout_fit.get(i)
            if lay is not None and (len(layout) != len(lay) or any(w.at(s) != g for w, g in zip(lay, layout))):
                return False
        return True


def _fit_ints(v1, v2, s1, s2):
    """[Affine] for two samples of a list of ints, or None where one does not fit."""
    out = []
    for x1, x2 in zip(v1, v2):
        if x1 == x2:
            out.append(Affine(0, x1))
            continue
        a, r = divmod(x2 - x1, s2 - s1)
        if r:
            return None
        out.append(Affine(a, x1 - a * s1))
    return out


def fit(fp1, fp2):
    """A Fit of two fingerprints of the same function at two sizes, or (None, why)."""
    if len(fp1) != len(fp2):
        return None, f"the graphs have {len(fp1)} and {len(fp2)} nodes"
    sym = None
    for i, (a, b) in enumerate(zip(fp1, fp2)):
        if _structure(a) != _structure(b):
            return None, f"node {i} is {a[1]} in one graph and {b[1]} in the other"
        if len(a[3]) != len(b[3]) or len(a[4]) != len(b[4]):
            return None, f"node {i} ({a[1]}) changes rank"
        if sym is None and a[0] == "placeholder":
            rank = (len(a[4]) - 1) // 2
            for d in range(rank):
                if a[4][d] != b[4][d]:
                    sym = (i, d, a[4][d], b[4][d])
                    break
    if sym is None:
        return None, "no input's size changed"
    leaf, dim, s1, s2 = sym
    args_fit, layout_fit, dynamic = {}, {}, {}
    moves_layout = set()
    for i, (a, b) in enumerate(zip(fp1, fp2)):
        fa = _fit_ints(a[3], b[3], s1, s2)
        if fa is None:
            return None, f"node {i} ({a[1]}) has an integer argument that is not a * s + b of input {leaf}'s dim {dim}"
        args_fit[i] = fa
        if a[4] != b[4]:  # its layout moves: a kernel's outcome, fitted only for the inputs
            moves_layout.add(i)
            dynamic[i] = "its shape or strides change with the dynamic size"
            if a[0] == "placeholder":
                layout_fit[i] = _fit_ints(a[4], b[4], s1, s2)
                if layout_fit[i] is None:
                    return None, f"input {i}'s shape or strides are not a * s + b of input {leaf}'s dim {dim}"
            continue
        layout_fit[i] = [Affine(0, x) for x in a[4]]
        if any(f.a for f in fa):
            dynamic[i] = "its integer arguments change with the dynamic size"
        elif any(k[0] == "node" and k[1] in moves_layout for k in a[2] if isinstance(k, tuple)):
            dynamic[i] = "an input's shape or strides change with the dynamic size"
    return Fit(leaf, dim, args_fit, layout_fit, dynamic, [_structure(a) for a in fp2], (s1, s2)), None


def mark(gm, f):
    """Readies a raw trace for a dynamic plan: the nodes that move with s are flagged (they
    stay eager and are never folded into constants), and their changing integers become
    Affine. gm was fingerprinted (its nodes carry their index)."""
    for n in gm.graph.nodes:
        i = n._opscope_index
        why = f.dynamic.get(i)
        if why is None:
            continue
        n.meta["opscope_dynamic"] = why
        affines = iter(f.args_fit[i])

        def sub(a):
            if isinstance(a, bool) or not isinstance(a, int):
                if isinstance(a, (list, tuple)):
                    return type(a)(sub(x) for x in a)
                if isinstance(a, dict):
                    return {k: sub(v) for k, v in a.items()}
                return a
            w = next(affines)
            return w if w.a else a

        _, args, kwargs = eager_call(n)
        n.args, n.kwargs = sub(args), sub(kwargs)
