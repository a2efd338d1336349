"""Allocates GPU memory inside a session's pod and says how each allocation went.

hami_vram_limit.py copies it into the pod and runs it through `kubectl exec`, so it uses only
the standard library plus whichever of torch or cupy the image has, falling back to the CUDA
driver API through ctypes. Each result is one line: `GSHARE-PROBE {json}`.

    hold <mib>                  allocate and fill <mib>, then keep it until stdin closes and say
                                whether it still reads back intact
    exceed <within> <beyond>    allocate <within> MiB (expected to work), free it, then
                                <beyond> MiB (expected to fail with CUDA out of memory)
"""

from __future__ import annotations

import ctypes
import json
import sys
from typing import Any

PREFIX = "GSHARE-PROBE "
MIB = 1 << 20
PATTERN = 0xA5
CUDA_ERROR_OUT_OF_MEMORY = 2


def say(**fields: Any) -> None:
    print(PREFIX + json.dumps(fields), flush=True)


class OutOfMemory(Exception):
    pass


class Torch:
    name = "torch"

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no GPU")
        self.torch = torch
        torch.zeros(1, device="cuda")  # the context exists before the first measured allocation

    def allocate(self, mib: int) -> Any:
        try:
            block = self.torch.empty(mib * MIB, dtype=self.torch.uint8, device="cuda")
            block.fill_(PATTERN)
            self.torch.cuda.synchronize()
        except RuntimeError as exc:  # torch.cuda.OutOfMemoryError is one
            if "out of memory" in str(exc).lower():
                raise OutOfMemory(str(exc)) from exc
            raise
        return block

    def intact(self, block: Any) -> bool:
        # Reductions, not a comparison: that would need a second block as large.
        return int(block.min().item()) == PATTERN == int(block.max().item())

    def trim(self) -> None:
        self.torch.cuda.empty_cache()  # back to the driver, so HAMi counts it free


class Cupy:
    name = "cupy"

    def __init__(self) -> None:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        self.cupy = cupy

    def allocate(self, mib: int) -> Any:
        try:
            block = self.cupy.empty(mib * MIB, dtype=self.cupy.uint8)
            block.fill(PATTERN)
            self.cupy.cuda.runtime.deviceSynchronize()
        except self.cupy.cuda.memory.OutOfMemoryError as exc:
            raise OutOfMemory(str(exc)) from exc
        except self.cupy.cuda.runtime.CUDARuntimeError as exc:
            if "memory" in str(exc).lower():
                raise OutOfMemory(str(exc)) from exc
            raise
        return block

    def intact(self, block: Any) -> bool:
        return int(block.min()) == PATTERN == int(block.max())

    def trim(self) -> None:
        self.cupy.get_default_memory_pool().free_all_blocks()


class Driver:
    """The CUDA driver API, which every GPU container has (HAMi's limit sits in front of it)."""

    name = "libcuda"

    def __init__(self) -> None:
        cuda = ctypes.CDLL("libcuda.so.1")
        u64, size = ctypes.c_uint64, ctypes.c_size_t
        cuda.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        cuda.cuCtxCreate_v2.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_uint,
            ctypes.c_int,
        ]
        cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(u64), size]
        cuda.cuMemsetD8_v2.argtypes = [u64, ctypes.c_ubyte, size]
        cuda.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, u64, size]
        cuda.cuMemFree_v2.argtypes = [u64]
        self.cuda = cuda
        self._ok(cuda.cuInit(0), "cuInit")
        device, context = ctypes.c_int(), ctypes.c_void_p()
        self._ok(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
        self._ok(cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device), "cuCtxCreate")

    @staticmethod
    def _ok(code: int, call: str) -> None:
        if code != 0:
            raise RuntimeError(f"{call} returned CUDA error {code}")

    def allocate(self, mib: int) -> tuple[int, int]:
        pointer, length = ctypes.c_uint64(), mib * MIB
        code = self.cuda.cuMemAlloc_v2(ctypes.byref(pointer), length)
        if code == CUDA_ERROR_OUT_OF_MEMORY:
            raise OutOfMemory(f"cuMemAlloc of {mib} MiB: CUDA_ERROR_OUT_OF_MEMORY (out of memory)")
        self._ok(code, "cuMemAlloc")
        self._ok(self.cuda.cuMemsetD8_v2(pointer.value, PATTERN, length), "cuMemsetD8")
        self._ok(self.cuda.cuCtxSynchronize(), "cuCtxSynchronize")
        return pointer.value, length

    def intact(self, block: tuple[int, int]) -> bool:
        """Reads back its first, middle and last MiB (the pod's own memory is small)."""
        pointer, length = block
        buffer = (ctypes.c_ubyte * MIB)()
        for offset in (0, length // 2, length - MIB):
            self._ok(self.cuda.cuMemcpyDtoH_v2(buffer, pointer + offset, MIB), "cuMemcpyDtoH")
            if bytes(buffer).count(PATTERN) != MIB:
                return False
        return True

    def free(self, block: tuple[int, int]) -> None:
        self._ok(self.cuda.cuMemFree_v2(block[0]), "cuMemFree")

    def trim(self) -> None:
        pass


def first_backend() -> Any:
    tried = []
    for kind in (Torch, Cupy, Driver):
        try:
            return kind()
        except Exception as exc:  # not installed, or it sees no GPU: try the next one
            tried.append(f"{kind.name}: {exc}")
    say(step="start", outcome="error", message="; ".join(tried))
    sys.exit(2)


def hold(mib: int) -> None:
    gpu = first_backend()
    try:
        block = gpu.allocate(mib)
    except OutOfMemory as exc:
        say(step="hold", outcome="oom", backend=gpu.name, mib=mib, message=str(exc)[:1000])
        sys.exit(1)
    say(step="hold", outcome="ok", backend=gpu.name, mib=mib)
    sys.stdin.read()  # keep the memory until the suite has tried its neighbour's limit
    say(step="check", outcome="ok" if gpu.intact(block) else "corrupt", backend=gpu.name, mib=mib)


def exceed(within: int, beyond: int) -> None:
    gpu = first_backend()
    try:
        block = gpu.allocate(within)
        intact = gpu.intact(block)
        if isinstance(gpu, Driver):
            gpu.free(block)
        del block  # torch and cupy free on the last reference
        gpu.trim()
        say(step="within", outcome="ok" if intact else "corrupt", backend=gpu.name, mib=within)
    except OutOfMemory as exc:
        say(step="within", outcome="oom", backend=gpu.name, mib=within, message=str(exc)[:1000])
    try:
        gpu.allocate(beyond)
        say(step="beyond", outcome="ok", backend=gpu.name, mib=beyond)
    except OutOfMemory as exc:
        say(step="beyond", outcome="oom", backend=gpu.name, mib=beyond, message=str(exc)[:1000])


if __name__ == "__main__":
    mode, *sizes = sys.argv[1:]
    if mode == "hold":
        hold(int(sizes[0]))
    else:
        exceed(int(sizes[0]), int(sizes[1]))
