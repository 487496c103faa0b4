"""Devices by name: `reference`, `opencl` / `opencl:N` (the N-th OpenCL
device), `llvm` (the host CPU through llvmlite's JIT), and `auto`, the
default: an OpenCL GPU when one works, else `llvm`. A new device is one
entry of `DEVICES`.

Device modules are imported only when asked for, so a machine without OpenCL
still compiles for the reference device; a device that cannot load says why.
"""

from __future__ import annotations

import threading
from importlib import import_module

from accy.env import EnvVarError
from accy.runtime.device import Device

# name -> "module:Class". A device class takes its index as the one optional
# constructor argument ("opencl:1" -> OpenCLDevice(1)).
DEVICES: dict[str, str] = {
    "reference": "accy.runtime.reference_device:ReferenceDevice",
    "opencl": "accy.runtime.opencl:OpenCLDevice",
    "llvm": "accy.runtime.llvm:LLVMDevice",
}

_instances: dict[str, Device] = {}
# Two threads asking for a device at once get the same one.
_instances_lock = threading.RLock()


class DeviceUnavailable(ValueError):
    """The named device exists in accy but cannot run here."""


#: The name that picks the best device here (`best_device`).
AUTO = "auto"


def known_devices() -> list[str]:
    return [AUTO, *DEVICES, "opencl:N"]


def get_device(name: str) -> Device:
    """The device called `name`, created once per process (devices own
    contexts, queues and program caches worth keeping); `auto` is
    `best_device()`'s choice."""
    key = name.strip().lower()
    with _instances_lock:
        if key not in _instances:
            # `auto` is chosen once per process (it enumerates OpenCL platforms).
            _instances[key] = best_device()[0] if key == AUTO else _create(name, key)
        return _instances[key]


def _create(name: str, key: str) -> Device:
    """Makes the device `name` (`key` is its normalised form)."""
    base, _, index_text = key.partition(":")
    if base not in DEVICES:
        raise ValueError(f"unknown device '{name}' (known: {', '.join(known_devices())})")
    if index_text and not index_text.isdigit():
        raise ValueError(f"bad device index in '{name}': expected {base}:N with N a number")
    module_name, cls_name = DEVICES[base].split(":")
    try:
        cls = getattr(import_module(module_name), cls_name)
        device = cls(int(index_text)) if index_text else cls()
    except (DeviceUnavailable, EnvVarError):  # a bad ACCY_* setting (ACCY_MEMORY_LIMIT=lots) is the user's to fix, not the device's
        raise
    except Exception as e:  # a missing driver, no platform, a bad index
        reason = str(e) or type(e).__name__
        raise DeviceUnavailable(f"device '{name}' is not available: {reason}") from e
    return device


def best_device() -> tuple[Device, str | None]:
    """The device a program runs on when none is named (`auto`): an OpenCL
    GPU when one works, else the LLVM device (the host CPU, which needs
    nothing but pip), else the reference; and why the first choices were
    skipped (None when the best one was taken)."""
    notes: list[str] = []
    try:
        from accy.runtime.opencl import opencl_devices

        gpus = [i for i, d in enumerate(opencl_devices()) if d.type & _CL_DEVICE_TYPE_GPU]
        if gpus:
            return get_device(f"opencl:{gpus[0]}"), None
        notes.append("no OpenCL GPU")
    except Exception as e:  # no pyopencl, no ICD loader
        notes.append(f"no OpenCL GPU ({str(e) or type(e).__name__})")
    try:
        return get_device("llvm"), None
    except DeviceUnavailable as e:
        notes.append(str(e))
    return get_device("reference"), "; ".join(notes)


#: CL_DEVICE_TYPE_GPU (pyopencl's cl.device_type.GPU), without importing pyopencl here.
_CL_DEVICE_TYPE_GPU = 1 << 2
