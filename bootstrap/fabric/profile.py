"""A fabric's profile script (gcp_tcpxo: Google's ``nccl-env-profile.sh``), run once in a subshell for what it exports.

Google's GPUDirect-TCPXO plugin ships ``nccl-env-profile.sh`` beside its library: sourced with ``NCCL_LIB_DIR`` set to
that directory, it finds the NICs and exports the ``NCCL_FASTRAK_*`` and other NCCL variables of that plugin release
(google/nccl-plugin-gpudirect-tcpxo ``scripts/nccl-env-profile.sh``). The bootstrap hard-codes none of them.

The script is looked for in ``$NCCL_LIB_DIR``, then each directory of ``LD_LIBRARY_PATH`` that holds it, then where
Google's images put it. It runs only when it is a regular file owned by root that group and others cannot write
(checked on the open file, and the open file is what runs: ``/dev/fd/N``), with a time limit; only the ``NCCL_*``
variables it exports are taken.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import subprocess
from pathlib import Path
from typing import Dict, List, Mapping

from bootstrap.doors.errors import ConfigError

DIRECTORIES = ("/usr/local/nvidia/lib64", "/usr/local/tcpxo/lib64", "/var/lib/tcpxo/lib64")  # GKE, Google's sample, VMs
MAX_OUTPUT = 1 << 20  # bytes of the subshell's environment read back
MAX_VALUE = 4096
_SHELL_OWN = {"NCCL_LIB_DIR"}  # what the bootstrap set for the script itself


def candidates(name: str, environ: Mapping[str, str]) -> List[Path]:
    """Where the profile ``name`` is looked for, in order."""
    found = [environ["NCCL_LIB_DIR"]] if environ.get("NCCL_LIB_DIR") else []
    found += [part for part in environ.get("LD_LIBRARY_PATH", "").split(":") if part]
    return [Path(folder) / name for folder in dict.fromkeys([*found, *DIRECTORIES])]


def find(name: str, environ: Mapping[str, str]) -> Path:
    for path in candidates(name, environ):
        if os.path.lexists(path):
            return path
    raise ConfigError(f"env.fabric.profile: {name} was not found (looked in $NCCL_LIB_DIR, LD_LIBRARY_PATH, "
                      f"{', '.join(DIRECTORIES)}), and env/fabric=gcp_tcpxo sets no NCCL_FASTRAK_* value itself: "
                      "install the GPUDirect-TCPXO plugin (its installer puts nccl-env-profile.sh beside "
                      "libnccl-net.so) and set NCCL_LIB_DIR to that directory, or choose another env/fabric.")


def exports(name: str, environ: Mapping[str, str], timeout_s: float) -> Dict[str, str]:
    """The ``NCCL_*`` variables the profile exports, run once in a subshell of ``environ``; ConfigError says why not."""
    path = find(name, environ)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        why = "it is a link" if error.errno == errno.ELOOP else error.strerror
        raise ConfigError(f"env.fabric.profile: {path} is not run: {why}. Point NCCL_LIB_DIR at the plugin's "
                          "own directory.") from None
    try:
        info = os.fstat(fd)
        why = "not a regular file" if not stat.S_ISREG(info.st_mode) else \
            f"owned by uid {info.st_uid}, not root" if info.st_uid != 0 else \
            f"group or others may write it (mode {stat.S_IMODE(info.st_mode):o})" if info.st_mode & 0o022 else ""
        if why:
            raise ConfigError(f"env.fabric.profile: {path} is not run: {why}. Only the plugin's installer "
                              "(root) may write the script the job runs: reinstall the plugin, or fix its mode "
                              "(chmod go-w).")
        env = {**environ, "NCCL_LIB_DIR": str(path.parent)}
        script = f'. /dev/fd/{fd} >/dev/null 2>&1 </dev/null; env -0'
        output = _run(["bash", "--noprofile", "--norc", "-c", script], env, fd, timeout_s, path)
    finally:
        os.close(fd)
    return _exported(output[:MAX_OUTPUT], env)


def _run(command: List[str], env: Mapping[str, str], fd: int, timeout_s: float, path: Path) -> bytes:
    """The script's output, in a session of its own: past ``timeout_s`` its whole process group is killed, so a
    child it left in the background holding the pipe cannot keep the job waiting."""
    try:
        process = subprocess.Popen(command, env=dict(env), pass_fds=(fd,), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as error:
        raise ConfigError(f"env.fabric.profile: {path} could not run: {error.strerror}") from None
    try:
        output, _ = process.communicate(timeout=timeout_s)
        return output
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        # the pipe is not read again: a child that left for a session of its own may still hold it open
        process.stdout.close()  # type: ignore[union-attr]
        process.wait()  # bash, killed: reaped at once
        raise ConfigError(f"env.fabric.profile: {path} did not finish within {timeout_s:g} s: fix the script, "
                          "or choose another env/fabric.") from None


def _exported(output: bytes, before: Mapping[str, str]) -> Dict[str, str]:
    found: Dict[str, str] = {}
    for entry in output.split(b"\0"):
        name, sep, value = entry.decode("utf-8", errors="replace").partition("=")
        if sep and name.startswith("NCCL_") and name not in _SHELL_OWN and before.get(name) != value \
                and name.isidentifier() and len(value) <= MAX_VALUE:
            found[name] = value
    return found
