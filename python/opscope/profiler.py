"""torch.profiler's workflow over opscope's profiler: one Config says what to capture,
`profile` records the framework op (every aten op, record_function range and nn.Module),
the runtime's launches and the device's kernels, linked by correlation ids.

    from opscope.profiler import profile, ProfilerActivity, Config, Exporter
    cfg = Config(layers="framework,runtime,device", cores="0-1", output_dir="opscope-profile")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.DEVICE], experimental_config=cfg,
                 schedule=torch.profiler.schedule(wait=1, warmup=1, active=3),
                 on_trace_ready=Exporter(cfg).export_trace, record_shapes=True) as prof:
        for step in range(5):
            model(x); prof.step()
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=10))

Debian's torch 1.13 has no Kineto: torch.profiler sees no device there. This profiler does
not use torch's; it hooks the same RecordFunction callbacks torch.profiler does.
"""
import enum
import json
import os
import tempfile
import threading
import weakref

import torch
import torch.nn.modules.module as _module
from torch.profiler import ProfilerAction

from . import _C

__all__ = ["Config", "Exporter", "KeyAverages", "ProfilerAction", "ProfilerActivity", "profile", "schedule"]

_LAYERS = ("framework", "runtime", "device", "instructions")
# with_stack names the user's line, not torch's or opscope's own Python that passed the op on.
_C._profiler_skip_frames([os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep])


class ProfilerActivity(enum.Enum):
    """What to record: CPU = the framework layer (aten ops, record_function ranges,
    nn.Module ranges); DEVICE = the runtime's launches and the device's kernels."""
    CPU = "cpu"
    DEVICE = "device"
    PRIVATEUSE1 = "device"  # the device's name in torch 1.13


def _activity_layers(a):
    if a is ProfilerActivity.CPU or a == torch.profiler.ProfilerActivity.CPU:
        return {"framework"}
    # torch's CUDA activity: a script written for a GPU profiles this device unchanged.
    if a is ProfilerActivity.DEVICE or a == torch.profiler.ProfilerActivity.CUDA:
        return {"runtime", "device"}
    raise ValueError(f"[activities] {a!r} is not a profiler activity "
                     "(expected ProfilerActivity.CPU or ProfilerActivity.DEVICE)")


def _check_type(arg, value, types, what):
    types = types if isinstance(types, tuple) else (types,)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise TypeError(f"[{arg}] expected {what}, got {type(value).__name__} {value!r}")


def _check_creatable(arg, path):
    """Raises unless `path` is a directory or could be made one (nothing is left behind)."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    if not os.path.isdir(p):
        raise ValueError(f"[{arg}] '{path}' cannot be created: '{p}' is not a directory")
    # A folder made and removed: os.access says yes to root on a read-only file system
    # (/proc, a read-only mount), where the export after the whole run would fail.
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".opscope-check-", dir=p))
    except OSError as e:
        raise ValueError(f"[{arg}] '{path}' cannot be created: '{p}' is not writable ({e.strerror})") from None


def _native(fn, *args):
    """Calls the extension, turning its "[field] ..." errors into ValueError."""
    try:
        return fn(*args)
    except _C.Error as e:
        raise ValueError(str(e)) from None


class Config:
    """What a profile captures (the analog of Neuron's NeuronConfig; the same fields as the
    C++ ProfilerConfig and its OPSCOPE_PROFILE_* environment variables).

    layers:      "framework,runtime,device", any subset, or "all"; add "instructions" for
                 samples inside kernels (key_averages(group_by="line"), `opscope kernel`)
    cores:       device cores whose kernels are recorded: "all", "0,1", "0-3"
    output_dir:  where Exporter writes trace.json and profile.db
    max_events:  capacity of each recording buffer (a full one drops and counts)
    sample_rate: the instructions layer's samples per second of each core's time, or "auto"
                 (10 kHz, lower where one sample's interrupt costs more than 1.5% of a core)
    """

    def __init__(self, *, layers="framework,runtime,device", cores="all", output_dir="opscope-profile",
                 max_events=1 << 20, sample_rate="auto"):
        _check_type("layers", layers, str, "a string such as 'framework,runtime,device'")
        _check_type("sample_rate", sample_rate, (str, int), "'auto' or samples per second")
        if isinstance(sample_rate, bool):
            raise TypeError("[sample_rate] expected 'auto' or samples per second, got a bool")
        sample_rate = str(sample_rate)
        _check_type("cores", cores, (str, int), "a core list such as 'all', '0,1' or '0-3'")
        _check_type("output_dir", output_dir, (str, os.PathLike), "a folder path")
        _check_type("max_events", max_events, int, "an integer")
        cores = str(cores)
        output_dir = os.fspath(output_dir)
        if not output_dir:
            raise ValueError("[output_dir] is empty")
        native = json.loads(_native(_C._profiler_config, layers, cores, output_dir, max_events, False, False, True,
                                    sample_rate))
        _check_creatable("output_dir", output_dir)
        self.layers = native["layers"]
        self.cores = native["cores"]
        self.output_dir = output_dir
        self.max_events = max_events
        self.sample_rate = native["sample_rate_hz"]  # "auto" or an int

    @classmethod
    def from_env(cls):
        """The settings of OPSCOPE_PROFILE_DIR, _LAYERS, _CORES, _MAX_EVENTS, _SAMPLE_RATE (bad
        values raise, naming the variable)."""
        d = _native(_C._profiler_env)
        return cls(layers=d["layers"], cores=d["cores"], output_dir=d["output_dir"], max_events=d["max_events"],
                   sample_rate=d["sample_rate"])

    def __repr__(self):
        return (f"Config(layers={self.layers!r}, cores={self.cores!r}, output_dir={self.output_dir!r}, "
                f"max_events={self.max_events}, sample_rate={self.sample_rate!r})")


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """torch.profiler.schedule, with errors that name the bad argument."""
    for name, v, least in (("wait", wait, 0), ("warmup", warmup, 0), ("active", active, 1), ("repeat", repeat, 0),
                           ("skip_first", skip_first, 0)):
        _check_type(f"schedule.{name}", v, int, "an integer")
        if v < least:
            raise ValueError(f"[schedule.{name}] must be >= {least}, got {v}")
    return torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)


class EventAverage:
    """One key_averages row, with torch's FunctionEventAvg names (times in µs, as torch)."""

    def __init__(self, row):
        self._row = row
        self.key = row["name"]
        self.kind = row["kind"]  # "op", "range" or "kernel"
        self.count = row["count"]
        self.input_shapes = row["input_shapes"]
        self.stack = [row["source"]] if row.get("source") else []  # the calling Python line (with_stack)
        self.origins = row.get("origins", "")  # a compiled kernel: its aten ops and modules
        self.self_cpu_time_total = row["self_cpu_ns"] / 1e3
        self.cpu_time_total = row["cpu_total_ns"] / 1e3
        self.cpu_time = row["cpu_avg_ns"] / 1e3
        self.self_device_time_total = row["self_device_ns"] / 1e3
        self.device_time_total = row["device_total_ns"] / 1e3
        self.device_time = row["device_avg_ns"] / 1e3
        self.self_device_memory_usage = row["self_device_memory"]
        self.device_memory_usage = row["device_memory"]
        # torch's CUDA spellings read the device's figures
        self.self_cuda_time_total = self.self_device_time_total
        self.cuda_time_total = self.device_time_total
        self.cuda_time = self.device_time
        self.self_cuda_memory_usage = self.self_device_memory_usage
        self.cuda_memory_usage = self.device_memory_usage

    def as_dict(self):
        return dict(self._row)

    def __repr__(self):
        return (f"<EventAverage key={self.key!r} count={self.count} self_cpu_time_total={self.self_cpu_time_total:.1f}us "
                f"self_device_time_total={self.self_device_time_total:.1f}us>")


class LineAverages(list):
    """prof.key_averages(group_by="line"): one dict per (source line, kernel, op), hottest
    first (file, line, function, kernel, op, samples, share, est_ns, text); .table() prints
    them as `opscope table --group-by-line` does."""

    def __init__(self, trace):
        data, self._text = _native(trace.line_averages)
        data = json.loads(data)
        super().__init__(data["rows"])
        self.total_samples = data["total_samples"]
        self.sampling = data["sampling"]

    def table(self, row_limit=20):
        _check_type("row_limit", row_limit, int, "an integer (0: all)")
        lines = self._text.splitlines()
        head, rows = lines[:2], lines[2:2 + len(self)]
        shown = rows if row_limit <= 0 else rows[:row_limit]
        more = [f"({len(rows) - len(shown)} more lines; row_limit=0 shows all)"] if len(shown) < len(rows) else []
        return "\n".join(head + shown + more) + "\n"

    def __str__(self):
        return self.table()


class KeyAverages(list):
    """prof.key_averages(): the rows (EventAverage) in first-appearance order; .table() prints
    torch's table with Device columns beside CPU ones; .rows() gives plain dicts (for pandas)."""

    def __init__(self, trace, group_by_input_shape, group_by_stack_n=0):
        self._averages = trace.key_averages(group_by_input_shape, group_by_stack_n)  # averaged once, here
        data = json.loads(self._averages.to_json(""))
        super().__init__(EventAverage(r) for r in data["rows"])
        self.self_cpu_time_total = data["self_cpu_time_total_ns"] / 1e3
        self.self_device_time_total = data["self_device_time_total_ns"] / 1e3
        self.dropped = data["dropped"]

    def table(self, sort_by=None, row_limit=100, time_unit=None, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None, top_level_events_only=False,
              width=160, wide=False, columns=None):
        """torch's table. It fits `width` characters (columns zero in every row go, headers
        shorten, then the least telling columns go; a line says which); wide=True shows every
        column with torch's headers; `columns` picks them (opscope table --columns' keys)."""
        if top_level_events_only:
            raise ValueError("[table] top_level_events_only is not supported: every op and range has its row")
        if isinstance(columns, str):
            columns = [c.strip() for c in columns.split(",") if c.strip()]
        text = _native(self._averages.table, sort_by or "", int(row_limit), time_unit or "", 0 if wide else int(width),
                       list(columns or []))
        return f"{header}\n{text}" if header else text

    def rows(self):
        return [e.as_dict() for e in self]

    def __str__(self):
        return self.table()


# ---- nn.Module hierarchy as ranges (Neuron Explorer's hierarchy view)
class _ModuleRanges:
    """Global forward hooks: each module call while a window records is a range named by
    the module's path from the outermost module called ("layers.0.self_attn"); the
    outermost one is named by its class ("LlamaForCausalLM")."""

    def __init__(self):
        self.names = weakref.WeakKeyDictionary()
        self.local = threading.local()
        self.recording = False
        self.handles = [_module.register_module_forward_pre_hook(self._pre),
                        _module.register_module_forward_hook(self._post)]

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def _stack(self):
        s = getattr(self.local, "stack", None)
        if s is None:
            s = self.local.stack = []
        return s

    def _name(self, module):
        name = self.names.get(module)
        if name is None:
            # The outermost module called: its class names it, and every module below it
            # (through ModuleLists and dicts, which are never called) gets its path.
            name = type(module).__name__
            self.names[module] = name
            for path, sub in module.named_modules():
                if path and sub not in self.names:
                    self.names[sub] = path
        return name

    def _pre(self, module, inputs):
        if not self.recording:
            return
        _C._range_push(self._name(module))
        self._stack().append(module)

    def _post(self, module, inputs, output):
        stack = self._stack()
        if module not in stack:
            return
        # A forward that raised left its inner ranges open: they end here, with this one.
        while stack:
            top = stack.pop()
            _C._range_pop()
            if top is module:
                break

    def close_open(self):
        stack = self._stack()
        while stack:
            stack.pop()
            _C._range_pop()


_running = None  # the profile running in this process


class profile:
    """torch.profiler.profile's arguments and methods, over opscope's profiler.

    activities: ProfilerActivity.CPU (framework) and/or .DEVICE (runtime + device); torch's
        ProfilerActivity.CPU/.CUDA are accepted too. Default: both.
    schedule: a callable step -> ProfilerAction (torch.profiler.schedule or opscope.profiler.schedule).
    on_trace_ready: called with this profile when a window's trace is collected.
    experimental_config: a Config (layers, cores, output_dir); the layers recorded are those
        both it and `activities` ask for.
    profile_memory: records the caching allocator's events (the runtime layer) for the
        Device Mem columns. with_modules: nn.Module ranges (default on).
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=True,
                 experimental_config=None, correlate_device_time=True):
        cfg = experimental_config if experimental_config is not None else Config()
        if not isinstance(cfg, Config):
            raise TypeError(f"[experimental_config] expected an opscope.profiler.Config, got {type(cfg).__name__}")
        if activities is None:
            activities = [ProfilerActivity.CPU, ProfilerActivity.DEVICE]
        if isinstance(activities, (str, bytes)) or not hasattr(activities, "__iter__"):
            raise TypeError(f"[activities] expected a list of ProfilerActivity, got {activities!r}")
        wanted = set()
        for a in activities:
            wanted |= _activity_layers(a)
        if profile_memory:
            wanted.add("runtime")
        cfg_layers = set(cfg.layers.split(","))
        if "device" in wanted:
            wanted.add("instructions")  # samples inside kernels, when the config's layers ask for them
        layers = [l for l in _LAYERS if l in wanted and l in cfg_layers]
        if not layers:
            raise ValueError(f"[activities] nothing to record: activities ask for {sorted(wanted)}, "
                             f"experimental_config's layers are '{cfg.layers}'")
        if schedule is not None and not callable(schedule):
            raise TypeError(f"[schedule] expected a callable step -> ProfilerAction, got {schedule!r}")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError(f"[on_trace_ready] expected a callable, got {on_trace_ready!r}")
        for name, v in (("record_shapes", record_shapes), ("profile_memory", profile_memory),
                        ("with_stack", with_stack), ("with_flops", with_flops), ("with_modules", with_modules),
                        ("correlate_device_time", correlate_device_time)):
            _check_type(name, v, bool, "True or False")
        self.config = cfg
        self.layers = ",".join(layers)
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules and "framework" in layers
        self.correlate_device_time = correlate_device_time
        self._args = (self.layers, cfg.cores, cfg.output_dir, cfg.max_events, record_shapes, with_stack,
                      correlate_device_time, str(cfg.sample_rate))
        _native(_C._profiler_config, *self._args)  # bad values fail here, before any step runs
        self.step_num = 0
        self.current_action = None
        self._running = False
        self._window = None
        self._window_first_step = 0
        self._step_range_open = False
        self._modules = None
        self._trace = None
        self.windows = []  # (first step, last step) of each collected window

    # ---- lifecycle
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    def start(self):
        global _running
        if self._running:
            raise RuntimeError("[profile.start] this profile is already running")
        if _running is not None:
            raise RuntimeError("[profile.start] another opscope profile is running in this process; stop it first")
        _running = self
        self._running = True
        self.step_num = 0
        self._step_ranges = self.schedule is not None
        try:
            if self.with_modules:
                self._modules = _ModuleRanges()
            self.current_action = self._action(0)
            self._transit(None, self.current_action, 0)
        except BaseException:
            self._teardown()
            raise

    def step(self):
        if not self._running:
            raise RuntimeError("[profile.step] step() called outside a running profile "
                               "(use `with profile(...) as prof:` or call prof.start() first)")
        prev = self.current_action
        self._step_ranges = True  # as torch: steps are ranges once the program steps
        self.step_num += 1
        self.current_action = self._action(self.step_num)
        self._transit(prev, self.current_action, self.step_num - 1)

    def stop(self):
        if not self._running:
            return
        try:
            self._transit(self.current_action, None, self.step_num)
        finally:
            self._teardown()

    def _teardown(self):
        global _running
        if self._step_range_open:
            _C._range_pop()
            self._step_range_open = False
        if self._window is not None:  # an error mid-transition: end the window
            self._end_window(self.step_num)
        if self._modules is not None:
            self._modules.remove()
            self._modules = None
        self._running = False
        if _running is self:
            _running = None

    def _action(self, step):
        if self.schedule is None:
            return ProfilerAction.RECORD
        a = self.schedule(step)
        if not isinstance(a, ProfilerAction):
            raise TypeError(f"[schedule] returned {a!r} for step {step}, expected a torch.profiler.ProfilerAction")
        return a

    # torch.profiler's action map: a window records from its first RECORD step; the last
    # step of a cycle (RECORD_AND_SAVE) ends it and hands the trace over.
    def _transit(self, prev, cur, last_step):
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if self._step_range_open:
            _C._range_pop()
            self._step_range_open = False
        if prev in recording and (prev == ProfilerAction.RECORD_AND_SAVE or cur not in recording):
            self._end_window(last_step)
            self._trace_ready()
        if cur in recording:
            if self._window is None:
                self._begin_window()
            if self._step_ranges:
                _C._range_push(f"ProfilerStep#{self.step_num}")
                self._step_range_open = True

    def _begin_window(self):
        w = _C._Window(*self._args)
        w.start()
        self._window = w
        self._window_first_step = self.step_num
        if self._modules is not None:
            self._modules.recording = True

    def _end_window(self, last_step):
        if self._modules is not None:
            self._modules.recording = False
            self._modules.close_open()
        w, self._window = self._window, None
        self._trace = w.stop()
        self.windows.append((self._window_first_step, last_step))

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ---- reading the last collected window
    def _last(self, what):
        if self._trace is None:
            raise RuntimeError(f"[{what}] no trace collected yet: a window ends at its last active step or at stop()")
        return self._trace

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by=None):
        """Rows per op, range and kernel; group_by_input_shape (needs record_shapes) and
        group_by_stack_n > 0 (needs with_stack: the calling Python line) split them further.
        group_by="line": the hottest source lines across all kernels, each with its kernel
        and op (needs the instructions layer: Config(layers="...,device,instructions"))."""
        if group_by is not None:
            if group_by != "line":
                raise ValueError(f"[group_by] expected 'line' or None, got {group_by!r}")
            return LineAverages(self._last("key_averages"))
        _check_type("group_by_stack_n", group_by_stack_n, int, "an integer >= 0")
        if group_by_stack_n < 0:
            raise ValueError(f"[group_by_stack_n] must be >= 0, got {group_by_stack_n}")
        return KeyAverages(self._last("key_averages"), bool(group_by_input_shape), group_by_stack_n)

    def events(self):
        """The last window's events as (kind, name, id, parent, t0_ns, t1_ns, device, track, shapes, value)."""
        return self._last("events").events()

    @property
    def dropped(self):
        return self._last("dropped").dropped

    def export(self, dir):
        """trace.json + profile.db into `dir`, as the C++ path writes them (atomically)."""
        _native(self._last("export").export, os.fspath(dir))
        return os.fspath(dir)

    def export_chrome_trace(self, path):
        _native(self._last("export_chrome_trace").export_chrome_trace, os.fspath(path))
        return os.fspath(path)


class Exporter:
    """on_trace_ready=Exporter(cfg).export_trace writes each window into cfg.output_dir: the
    first window there, window k (k >= 1) into '<output_dir>-<k>'. `.written` lists them.
    In a job of several ranks (torch.distributed), each rank writes into <that>/rank-N, which
    `opscope table|explore <that>` open as one job."""

    def __init__(self, config=None):
        cfg = config if config is not None else Config()
        if not isinstance(cfg, Config):
            raise TypeError(f"[Exporter] expected an opscope.profiler.Config, got {type(cfg).__name__}")
        self.output_dir = cfg.output_dir
        self.written = []

    def export_trace(self, prof):
        k = len(self.written)
        from .distributed import rank_dir
        d = rank_dir(self.output_dir if k == 0 else f"{self.output_dir}-{k}")
        prof.export(d)
        self.written.append(d)
        return d


def _auto_profile():
    """OPSCOPE_PROFILE=1 python3 script.py: the whole run is one window, written at exit
    to OPSCOPE_PROFILE_DIR (default opscope-profile) with the OPSCOPE_PROFILE_* settings."""
    import atexit
    import sys
    try:
        if not _native(_C._profiler_env_enabled):
            return None
        cfg = Config.from_env()
        prof = profile(experimental_config=cfg, on_trace_ready=Exporter(cfg).export_trace, profile_memory=True)
        prof.start()
    except (ValueError, TypeError, RuntimeError) as e:
        print(f"opscope: OPSCOPE_PROFILE ignored: {e}", file=sys.stderr)
        return None

    def finish():
        try:
            prof.stop()
            where = prof.on_trace_ready.__self__.written
            print(f"opscope: profile written to {where[-1] if where else cfg.output_dir}", file=sys.stderr)
        except Exception as e:  # noqa: BLE001  (at exit: say why, never raise)
            print(f"opscope: profile not written: {e}", file=sys.stderr)

    atexit.register(finish)
    return prof
