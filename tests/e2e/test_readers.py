"""Every row of ``bootstrap.readers.READERS``, checked against the real torch by experiment.

The bootstrap runs after ``import torch``. For each variable the table says whether
setting it *then* still takes effect in this process (``still_read``). Here a fresh
Python process does exactly that: it imports torch, records the bootstrap's own view of
the process (``current_state()``), sets the variable in ``os.environ``, and looks at
whether the behaviour changed. Where the row promises child processes, the same process
then starts a child that must see the effect. A child started with the variable is also
the positive control: it shows that the probe can see the effect at all, so a "no effect"
in the late process means "too late", not "probe blind".

Three top-level scripts (five torch processes in all) run at the same time and report
JSON; the tests only compare those observations with the table. A new row, or a new
pattern in a row, fails ``test_every_pattern_is_proved_or_listed_as_not_observable``
until it has an experiment here or a reason in ``NOT_OBSERVABLE_ON_CPU``.
"""
import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from bootstrap.variables.readers import READERS, ProcessState, reader_for

# Row.apply_now keys whose call (bootstrap.core.runtime.APPLY_NOW[key]) LATE_SCRIPT makes, and what it wraps.
APPLY_NOW_PROVED = {"distributed_debug": "torch.distributed.set_debug_level_from_env()"}

# Where a case has no child/control of its own, the case that shows the probe works.
CONTROL_FROM = {
    ("TORCH_SHOW_CPP_STACKTRACES", "after_cpp_error"): ("TORCH_SHOW_CPP_STACKTRACES", "after_import"),
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "group_exists"): ("TORCH_NCCL_TRACE_BUFFER_SIZE", "before_first_group"),
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "after_group_destroyed"):
        ("TORCH_NCCL_TRACE_BUFFER_SIZE", "before_first_group"),
    ("TORCH_FR_BUFFER_SIZE", "group_exists"): ("TORCH_FR_BUFFER_SIZE", "before_first_group"),
    ("TORCH_FR_BUFFER_SIZE", "after_group_destroyed"): ("TORCH_FR_BUFFER_SIZE", "before_first_group"),
}


def _promises_children(name):
    return "child" in reader_for(name).applied_by

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="LD_PRELOAD/LD_LIBRARY_PATH and /proc/self/maps are Linux facts")
# Patterns a CPU build of torch cannot exercise, each with the reason.
NOT_OBSERVABLE_ON_CPU = {
    "CUDA_VISIBLE_DEVICES": "read by the CUDA driver when a context is created; the CPU build creates none",
    "CUDA_DEVICE_MAX_CONNECTIONS": "read by the CUDA driver when a context is created; the CPU build creates none",
    "CUDA_LAUNCH_BLOCKING": "read by the CUDA runtime; the CPU build launches no kernels",
    "CUDA_MODULE_LOADING": "read by the CUDA runtime at context creation; the CPU build creates none",
    "CUBLAS_WORKSPACE_CONFIG": "read at cuBLAS calls (and by the determinism check only when CUDA is present)",
    "NCCL_*": "read by libnccl when a communicator is created; the CPU build has no NCCL backend",
    "TORCH_FR_DUMP_TEMP_FILE": "read by ProcessGroupNCCL's watchdog at its first dump; gloo writes none",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "read by ProcessGroupNCCL's watchdog at its first dump; gloo writes none",
}
# (variable, case) -> what the experiment does. Every case is run by one of the scripts
# below and reported as {"late": took effect in that process, "state": current_state()
# when it was set, "child": a child started afterwards saw it (or None), "control": the
# probe saw the effect where the variable was read (or None), "evidence": text}.
CASES = {
    ("OMP_NUM_THREADS", "after_import"):
        "torch.get_num_threads() after a parallel matmul; child: started with it, no MKL_NUM_THREADS",
    ("MKL_NUM_THREADS", "after_import"):
        "torch.get_num_threads() after a parallel matmul; child: started with it, no OMP_NUM_THREADS",
    ("PYTHONHASHSEED", "after_import"):
        "hash() of a fresh str before and after; children: two started with it agree",
    ("PYTHONPATH", "after_import"):
        "a module in a new directory cannot be imported; child: it can",
    ("PYTHONUNBUFFERED", "after_import"):
        "sys.stdout.write_through (stdout is a pipe); child: started with it",
    ("PYTHONDONTWRITEBYTECODE", "after_import"):
        "sys.dont_write_bytecode; child: started with it",
    ("PYTHONWARNINGS", "after_import"):
        "sys.warnoptions; child: started with it",
    ("PYTHONBREAKPOINT", "after_import"):
        "breakpoint() calls the hook it names (os.getpid) at once",
    ("PYTHONASYNCIODEBUG", "after_import"):
        "asyncio.new_event_loop().get_debug() at once",
    ("LD_LIBRARY_PATH", "after_import"):
        "ctypes.CDLL of a library only in a new directory fails; child: it loads",
    ("LD_PRELOAD", "after_import"):
        "a library named in it is not in /proc/self/maps; child: it is",
    ("TORCH_DISTRIBUTED_DEBUG", "after_import"):
        "torch.distributed.get_debug_level(); child: started with DETAIL; then the row's apply_now call",
    ("TORCH_SHOW_CPP_STACKTRACES", "after_import"):
        "'Exception raised from' in a C++ error's message (no C++ error raised before); child: started with it",
    ("TORCH_SHOW_CPP_STACKTRACES", "after_cpp_error"):
        "same, in a process that already raised a C++ error before the variable was set",
    ("PYTORCH_ALLOC_CONF", "after_import"):
        "torch._C._accelerator_getAllocatorSettings() (the allocator config, parsed on first use)",
    ("PYTORCH_CUDA_ALLOC_CONF", "after_import"):
        "torch._C._accelerator_getAllocatorSettings() (the allocator config, parsed on first use)",
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "before_first_group"):
        "flight recorder entries after 3 gloo all_reduce: capped at 1 if the size 1 was read",
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "group_exists"):
        "same, set after init_process_group",
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "after_group_destroyed"):
        "same, set after destroy_process_group and before a second init_process_group",
    ("TORCH_FR_BUFFER_SIZE", "before_first_group"):
        "flight recorder entries after 3 gloo all_reduce: capped at 1 if the size 1 was read",
    ("TORCH_FR_BUFFER_SIZE", "group_exists"):
        "same, set after init_process_group",
    ("TORCH_FR_BUFFER_SIZE", "after_group_destroyed"):
        "same, set after destroy_process_group and before a second init_process_group",
}
TIMEOUT = 120  # seconds, for each top-level script; its children get 60
# Shared by the scripts: the bootstrap's view of this process, a C++ error's message.
PRELUDE = textwrap.dedent("""
    import dataclasses, json, os, subprocess, sys
    sys.path.insert(0, @ROOT@)
    import torch
    from bootstrap.variables.readers import current_state

    PROBE_DIR = @PROBE_DIR@
    out = {}

    def state():
        return dataclasses.asdict(current_state())

    def cpp_error_message():
        try:
            torch.empty(2, 3) @ torch.empty(4, 5)  # raised by ATen's C++ shape check
        except RuntimeError as e:
            return str(e)
        raise AssertionError("no error")

    def record(name, case, late, st, evidence, child=None, control=None, **extra):
        out[name + "@" + case] = dict(late=late, state=st, child=child, control=control,
                                      evidence=evidence, **extra)
""")
# After import torch, set every start-up variable, look in this process, then start
# children that inherit os.environ as it is now.
LATE_SCRIPT = PRELUDE + textwrap.dedent("""
    import ctypes, ctypes.util
    import torch.distributed as dist

    def fresh_str():  # a new object: str caches its hash
        return "".join(["reader", "probe"])

    def threads():
        torch.ones(256, 256) @ torch.ones(256, 256)  # parallel work: no lazy re-read of the env
        return torch.get_num_threads()

    def in_maps(name):
        with open("/proc/self/maps") as f:
            return name in f.read()

    def can_load(lib):
        try:
            ctypes.CDLL(lib)
            return True
        except OSError:
            return False

    def can_import(module):
        try:
            __import__(module)
            return True
        except ImportError:
            return False

    default_threads = threads()
    few = "1" if default_threads != 1 else "2"
    hash_before = hash(fresh_str())
    level_before = str(dist.get_debug_level())
    st = state()

    os.environ["TORCH_SHOW_CPP_STACKTRACES"] = "1"
    cpp_late = "Exception raised from" in cpp_error_message()  # the first C++ error here
    os.environ["OMP_NUM_THREADS"] = few
    omp_threads = threads()
    os.environ["MKL_NUM_THREADS"] = few
    mkl_threads = threads()
    os.environ["PYTHONHASHSEED"] = "12345"
    hash_after = hash(fresh_str())
    os.environ["PYTHONPATH"] = PROBE_DIR
    path_late = PROBE_DIR in sys.path or can_import("readerprobe_mod")
    stdout_write_through = sys.stdout.write_through
    os.environ["PYTHONUNBUFFERED"] = "1"
    unbuffered_late = sys.stdout.write_through != stdout_write_through
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    bytecode_late = sys.dont_write_bytecode
    os.environ["PYTHONWARNINGS"] = "default::ResourceWarning"
    warnings_late = "default::ResourceWarning" in sys.warnoptions
    os.environ["PYTHONBREAKPOINT"] = "os.getpid"
    breakpoint_late = breakpoint() == os.getpid()
    import asyncio
    os.environ["PYTHONASYNCIODEBUG"] = "1"
    loop = asyncio.new_event_loop()
    asyncio_late = loop.get_debug()
    loop.close()
    os.environ["LD_LIBRARY_PATH"] = PROBE_DIR + os.pathsep + os.environ.get("LD_LIBRARY_PATH", "")
    ld_path_late = can_load("libreaderprobe_path.so")
    os.environ["LD_PRELOAD"] = os.path.join(PROBE_DIR, "libreaderprobe_preload.so")
    ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")  # a later dlopen does not preload either
    preload_late = in_maps("libreaderprobe_preload.so")
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    level_late = str(dist.get_debug_level())
    os.environ["PYTORCH_ALLOC_CONF"] = "max_split_size_mb:64"
    alloc_late = torch._C._accelerator_getAllocatorSettings()

    # Children, started now: A (torch) without MKL_NUM_THREADS, B (torch) without
    # OMP_NUM_THREADS, C (no torch) for the hash.
    CHILD = '''
    import ctypes, json, os, sys
    import torch, torch.distributed as dist
    torch.ones(256, 256) @ torch.ones(256, 256)
    try:
        torch.empty(2, 3) @ torch.empty(4, 5)
    except RuntimeError as e:
        cpp = "Exception raised from" in str(e)
    try:
        import readerprobe_mod
        imported = True
    except ImportError:
        imported = False
    try:
        ctypes.CDLL("libreaderprobe_path.so")
        loaded = True
    except OSError:
        loaded = False
    print(json.dumps(dict(
        threads=torch.get_num_threads(),
        hash=hash("".join(["reader", "probe"])),
        path=imported and os.environ["PYTHONPATH"] in sys.path,
        loaded=loaded,
        preloaded="libreaderprobe_preload.so" in open("/proc/self/maps").read(),
        level=str(dist.get_debug_level()),
        cpp=cpp,
        alloc=torch._C._accelerator_getAllocatorSettings(),
        unbuffered=sys.stdout.write_through,
        nobytecode=sys.dont_write_bytecode,
        warnoptions=sys.warnoptions,
    )))
    '''
    def start(code, drop):
        env = {k: v for k, v in os.environ.items() if k != drop}
        return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)

    procs = [start(CHILD, "MKL_NUM_THREADS"), start(CHILD, "OMP_NUM_THREADS"),
             start('print(hash("".join(["reader", "probe"])))', None)]
    try:
        outs = [p.communicate(timeout=60)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert all(p.returncode == 0 for p in procs), [p.returncode for p in procs]
    a, b, c_hash = json.loads(outs[0]), json.loads(outs[1]), int(outs[2])

    # The bootstrap's apply_now call for TORCH_DISTRIBUTED_DEBUG, after the children started.
    from bootstrap.variables.readers import reader_for
    from bootstrap.core.runtime import APPLY_NOW
    APPLY_NOW[reader_for("TORCH_DISTRIBUTED_DEBUG").apply_now]()
    level_applied = str(dist.get_debug_level())

    want = int(few)
    record("TORCH_SHOW_CPP_STACKTRACES", "after_import", cpp_late, st,
           f"late: trace shown={cpp_late}; child: {a['cpp']}", child=a["cpp"])
    record("OMP_NUM_THREADS", "after_import", omp_threads != default_threads, st,
           f"default {default_threads}, late {few} -> {omp_threads}; child -> {a['threads']}",
           child=a["threads"] == want)
    record("MKL_NUM_THREADS", "after_import", mkl_threads != default_threads, st,
           f"default {default_threads}, late {few} -> {mkl_threads}; child -> {b['threads']}",
           child=b["threads"] == want)
    record("PYTHONHASHSEED", "after_import", hash_after != hash_before, st,
           f"hash before {hash_before}, after {hash_after}; children {a['hash']}, {c_hash}",
           child=a["hash"] == c_hash and a["hash"] != hash_after)
    record("PYTHONPATH", "after_import", path_late, st,
           f"late: in sys.path or importable={path_late}; child: {a['path']}", child=a["path"])
    record("PYTHONUNBUFFERED", "after_import", unbuffered_late, st,
           f"late: write_through changed={unbuffered_late}; child: {a['unbuffered']}", child=a["unbuffered"])
    record("PYTHONDONTWRITEBYTECODE", "after_import", bytecode_late, st,
           f"late: dont_write_bytecode={bytecode_late}; child: {a['nobytecode']}", child=a["nobytecode"])
    record("PYTHONWARNINGS", "after_import", warnings_late, st,
           f"late: in sys.warnoptions={warnings_late}; child: {a['warnoptions']}",
           child="default::ResourceWarning" in a["warnoptions"])
    record("PYTHONBREAKPOINT", "after_import", breakpoint_late, st, f"late: breakpoint() called it={breakpoint_late}")
    record("PYTHONASYNCIODEBUG", "after_import", asyncio_late, st, f"late: new loop in debug mode={asyncio_late}")
    record("LD_LIBRARY_PATH", "after_import", ld_path_late, st,
           f"late: CDLL loads={ld_path_late}; child: {a['loaded']}", child=a["loaded"])
    record("LD_PRELOAD", "after_import", preload_late, st,
           f"late: in /proc/self/maps={preload_late}; child: {a['preloaded']}", child=a["preloaded"])
    record("TORCH_DISTRIBUTED_DEBUG", "after_import", level_late != level_before, st,
           f"before {level_before}, late {level_late}, child {a['level']}, "
           f"after the bootstrap's apply_now call {level_applied}",
           child=a["level"] == "DebugLevel.DETAIL", applied=level_applied == "DebugLevel.DETAIL")
    record("PYTORCH_ALLOC_CONF", "after_import", alloc_late == "max_split_size_mb:64", st,
           f"settings {alloc_late!r}; child {a['alloc']!r}", child=a["alloc"] == "max_split_size_mb:64")
    print(json.dumps(out))
""")
# A fresh process: variables read later than import torch, before anything reads them.
FRESH_SCRIPT = PRELUDE + textwrap.dedent("""
    st = state()
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:64"
    alloc = torch._C._accelerator_getAllocatorSettings()
    record("PYTORCH_CUDA_ALLOC_CONF", "after_import", alloc == "max_split_size_mb:64", st, f"settings {alloc!r}")

    first = "Exception raised from" in cpp_error_message()
    st = state()
    os.environ["TORCH_SHOW_CPP_STACKTRACES"] = "1"
    second = "Exception raised from" in cpp_error_message()
    record("TORCH_SHOW_CPP_STACKTRACES", "after_cpp_error", second, st,
           f"trace shown before setting={first}, after={second}")
    print(json.dumps(out))
""")
# A process that already made a process group, and then destroyed it.
GROUP_SCRIPT = PRELUDE + textwrap.dedent("""
    import pickle
    import torch.distributed as dist

    def fr_entries():
        return len(pickle.loads(torch._C._distributed_c10d._dump_fr_trace()).get("entries", []))

    def group_and_three_collectives():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        for _ in range(3):
            dist.all_reduce(torch.ones(2))

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    st = state()
    os.environ[@FR_VAR@] = "1"
    for _ in range(3):
        dist.all_reduce(torch.ones(2))
    n = fr_entries()
    record(@FR_VAR@, "group_exists", n <= 1, st,
           f"size 1 set while a group exists: {n} entries after 3 all_reduce")
    dist.destroy_process_group()

    st = state()
    os.environ[@FR_VAR@] = "2"
    group_and_three_collectives()
    n2 = fr_entries()
    dist.destroy_process_group()
    record(@FR_VAR@, "after_group_destroyed", n2 <= 2, st,
           f"size 2 set after destroy_process_group, before a new group: {n2} entries "
           f"({n} before + 3 all_reduce)")
    print(json.dumps(out))
""")
# A fresh process whose first group is made after the flight recorder's size is set.
FR_FRESH_SCRIPT = PRELUDE + textwrap.dedent("""
    import pickle
    import torch.distributed as dist

    st = state()
    os.environ[@FR_VAR@] = "1"
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    for _ in range(3):
        dist.all_reduce(torch.ones(2))
    n = len(pickle.loads(torch._C._distributed_c10d._dump_fr_trace()).get("entries", []))
    dist.destroy_process_group()
    record(@FR_VAR@, "before_first_group", n == 1, st,
           f"size 1 set before the first group: {n} entries after 3 all_reduce", control=n == 1)
    print(json.dumps(out))
""")


def _library_to_copy() -> Path:
    """The file of a real shared library already on this machine (libz, else libm)."""
    for short in ("z", "m"):
        soname = ctypes.util.find_library(short)
        if not soname:
            continue
        ctypes.CDLL(soname)
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split()[-1]
            if os.path.basename(path).startswith(f"lib{short}.so") or os.path.basename(path).startswith(f"lib{short}-"):
                return Path(path)
    pytest.fail("no libz or libm on this machine to copy for the loader experiments")


def _base_env() -> dict:
    """This environment without any variable under test, so every script starts at the defaults."""
    # LD_LIBRARY_PATH stays (torch may need it here); LATE_SCRIPT puts the probe directory in front.
    tested = ({name for name, _ in CASES} | {"PYTHONPATH", "LD_PRELOAD", "PYTHONHASHSEED"}) - {"LD_LIBRARY_PATH"}
    env = {k: v for k, v in os.environ.items()
           if k not in tested and not k.startswith(("TORCH_", "PYTORCH_", "NCCL_", "OMP_", "MKL_"))}
    env["TORCH_DISABLE_ADDR2LINE"] = "1"  # a C++ trace without addr2line: same header, much faster
    return env


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    """Run the scripts at once; {"NAME@case": observation}."""
    work = tmp_path_factory.mktemp("readers")
    probe_dir = work / "probe"
    probe_dir.mkdir()
    lib = _library_to_copy()
    shutil.copy(lib, probe_dir / "libreaderprobe_path.so")
    shutil.copy(lib, probe_dir / "libreaderprobe_preload.so")
    (probe_dir / "readerprobe_mod.py").write_text("")

    procs = []
    scripts = [("late", LATE_SCRIPT, ""), ("fresh", FRESH_SCRIPT, "")]
    scripts += [(f"{kind}_{var}", script, var) for var in ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE")
                for kind, script in (("group", GROUP_SCRIPT), ("fr_fresh", FR_FRESH_SCRIPT))]
    for name, script, fr_var in scripts:
        path = work / f"{name}.py"
        path.write_text(script.replace("@ROOT@", repr(str(ROOT))).replace("@PROBE_DIR@", repr(str(probe_dir)))
                        .replace("@FR_VAR@", repr(fr_var)))
        procs.append((name, subprocess.Popen([sys.executable, str(path)], cwd=work, env=_base_env(),
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    results = {}
    try:
        for name, proc in procs:
            try:
                stdout, stderr = proc.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
                pytest.fail(f"{name}.py ran past {TIMEOUT}s\n{stderr[-3000:]}")
            assert proc.returncode == 0, f"{name}.py failed ({proc.returncode}):\n{stderr[-3000:]}"
            results.update(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for _, proc in procs:  # none outlives the fixture, whatever failed
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return results


def _key(name, case):
    return f"{name}@{case}"


@pytest.mark.parametrize("name, case", sorted(CASES), ids=[_key(*k) for k in sorted(CASES)])
def test_row_says_what_the_experiment_shows(observed, name, case):
    """Set in a running process (state as the bootstrap sees it): did it take effect?"""
    obs = observed[_key(name, case)]
    state = ProcessState(**obs["state"])
    reader = reader_for(name)
    claimed = reader.still_read(state)
    assert obs["late"] == claimed, (
        f"readers.py says {name} {'is' if claimed else 'is not'} still read in {state} "
        f"(read_when={reader.read_when!r}); the experiment says it "
        f"{'is' if obs['late'] else 'is not'}: {obs['evidence']}")


@pytest.mark.parametrize("name, case", sorted(CASES), ids=[_key(*k) for k in sorted(CASES)])
def test_probe_sees_the_variable_where_it_is_read(observed, name, case):
    """A "no effect" only counts if the same probe shows the effect when the variable is read."""
    obs = observed[_key(name, case)]
    if obs["late"]:
        return  # the late value itself showed the effect
    source = observed[_key(*CONTROL_FROM[(name, case)])] if (name, case) in CONTROL_FROM else obs
    seen = source["control"] if source["control"] is not None else source["child"]
    assert seen is True, f"{name}: the probe never saw the variable take effect: {source['evidence']}"


@pytest.mark.parametrize("name", sorted({n for n, _ in CASES if _promises_children(n)}))
def test_a_child_started_afterwards_runs_with_it(observed, name):
    """The rows that say the variable reaches child processes: a child started after the late set does."""
    obs = observed[_key(name, "after_import")]
    assert obs["child"] is True, f"{name}: {obs['evidence']}"


@pytest.mark.parametrize("reader", [r for r in READERS if r.apply_now], ids=lambda r: r.apply_now)
def test_apply_now_makes_a_late_value_take_effect(observed, reader):
    assert reader.apply_now in APPLY_NOW_PROVED, (
        f"{reader.patterns}: apply_now={reader.apply_now!r} has no experiment in this file")
    for pattern in reader.patterns:
        names = [n for n, _ in CASES if fnmatchcase(n, pattern)]
        assert names, f"{pattern}: apply_now without an experiment"
        for name in names:
            obs = observed[_key(name, "after_import")]
            proof = APPLY_NOW_PROVED[reader.apply_now]
            assert obs["applied"] is True, f"{proof} did not apply {name}: {obs['evidence']}"
            # ...and afterwards this process and a child started with the variable agree.
            assert obs["child"] is True, obs["evidence"]


def test_rows_that_promise_children_have_a_child_experiment():
    missing = [p for r in READERS if "child" in r.applied_by for p in r.patterns
               if p not in NOT_OBSERVABLE_ON_CPU
               and not any(fnmatchcase(n, p) for n, case in CASES if case == "after_import")]
    assert not missing, f"rows promise child processes but no experiment starts one: {missing}"


def test_every_pattern_is_proved_or_listed_as_not_observable():
    patterns = [p for r in READERS for p in r.patterns]
    unproved = [p for p in patterns
                if p not in NOT_OBSERVABLE_ON_CPU and not any(fnmatchcase(n, p) for n, _ in CASES)]
    assert not unproved, f"rows with no experiment in tests/e2e/test_readers.py: {unproved}"
    stale = sorted(set(NOT_OBSERVABLE_ON_CPU) - set(patterns))
    assert not stale, f"NOT_OBSERVABLE_ON_CPU names patterns that are not in READERS: {stale}"
    both = [p for p in NOT_OBSERVABLE_ON_CPU if any(fnmatchcase(n, p) for n, _ in CASES)]
    assert not both, f"listed as not observable but an experiment covers them: {both}"
    # Each experiment's variable is governed by a row, not by the UNKNOWN fallback.
    stray = [n for n, _ in CASES if not any(fnmatchcase(n, p) for p in patterns)]
    assert not stray, f"experiments for variables READERS does not list: {stray}"
