"""Helpers the scripts had each written for themselves: comma-separated integer options,
JSON written so that a reader never sees half a file, the run's metadata block (date, commit,
GPU, library versions), progress lines with the elapsed time, and the repository's paths.
Standard library only: torch and transformers are imported inside environment(), when present.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
START = time.perf_counter()


def models_dir():
    """$FDPP_MODELS_DIR, else the repository's models/ (stories260K, tokenizers)."""
    return os.environ.get("FDPP_MODELS_DIR") or os.path.join(REPO, "models")


def int_list(text, name="value"):
    """'1,8,32' -> [1, 8, 32]; an argparse error unless every item is a positive integer."""
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: comma-separated integers expected, got {text!r}")
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"{name}: positive integers expected, got {text!r}")
    return vals


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, obj, indent=2, ensure_ascii=True):
    """Writes to PATH.tmp, then renames: a run cut short (or a reader polling the file) sees
    the previous complete version, never half of this one."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=indent, ensure_ascii=ensure_ascii)
        f.write("\n")
    os.replace(tmp, path)


def now_iso():
    """Local time with its offset, to the second: '2026-12-01T20:31:07+00:00'."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def log(msg):
    """A progress line with the wall clock and the seconds since the script started (torch
    compilation and model writes take minutes; the stamps say where they went)."""
    now = datetime.datetime.now().strftime("%H:%M:%S")
    print(f"[{now} +{time.perf_counter() - START:7.1f}s] {msg}", flush=True)


def git_commit(short=True):
    """The repository's HEAD (with '+dirty' when the tree has changes), or None outside git."""
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse"] + (["--short"] if short else []) + ["HEAD"],
                             capture_output=True, text=True, timeout=10)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def nvidia_smi():
    """Driver and clocks as nvidia-smi reports them: a figure is read with its clocks."""
    fields = ["driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "power.limit"]
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(fields),
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        vals = [v.strip() for v in out.stdout.splitlines()[0].split(",")]
        return {"nvidia_smi": dict(zip(fields, vals))}
    except (OSError, IndexError, subprocess.SubprocessError):
        return {}


def environment(smi=True):
    """The metadata block every result file carries: date, commit, and where torch is
    importable its version, transformers', CUDA's and the GPU's name, SM count and memory."""
    env = {"date": now_iso(), "commit": git_commit()}
    try:
        import torch
    except ImportError:
        return env
    env.update(torch=torch.__version__, cuda=torch.version.cuda)
    try:
        import transformers
        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=p.name, sm_count=p.multi_processor_count,
                   gpu_memory_gb=round(p.total_memory / 1e9, 1))
    if smi:
        env.update(nvidia_smi())
    return env


def die(tool, msg, code=2):
    print(f"{tool}: {msg}", file=sys.stderr)
    sys.exit(code)
