"""burnin-stress: a GPU matmul load that catches silent data corruption.

Every GPU multiplies the same deterministic matrices (one pair per seed) over and over for the
given time. An exact integer checksum of each result is compared across iterations (a GPU that
gives two answers to one question is corrupting data) and, by the check that reads this
program's JSON, across GPUs (all GPUs of a model must agree bit for bit). It also measures each
GPU's dense matmul TFLOP/s.

Runs on torch (bf16) or, without torch, CuPy (fp16: CuPy has no bf16). With neither, or with no
GPU, it prints an ``error`` and exits 2: the check says UNKNOWN, never PASS.

``--copy-bandwidth`` measures each GPU's host-to-device and device-to-host copy GB/s instead
(pinned memory, one GPU and direction at a time): the copy_bandwidth check's fallback where the
node has no nvbandwidth.

This file is also sent as-is to nodes that lack the installed package (``python3 - ARGS``), so
it imports nothing from the project: standard library plus torch/CuPy only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time

FORMAT_VERSION = 1
DIGEST_EVERY = 8  # a checksum costs about one matmul; take it every few iterations


def _torch_backend():
    import torch  # noqa: PLC0415 - optional, imported only when present

    if not torch.cuda.is_available():
        raise RuntimeError(f"torch {torch.__version__} sees no CUDA GPU")
    # Same inputs, same shapes, same GPU model -> cuBLAS picks the same kernels; this pins the
    # workspace so no reduction order depends on free memory.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    return "torch " + torch.__version__, "bf16", torch


def _cupy_backend():
    import cupy  # noqa: PLC0415

    if cupy.cuda.runtime.getDeviceCount() < 1:
        raise RuntimeError("CuPy sees no CUDA GPU")
    return "cupy " + cupy.__version__, "fp16", cupy


def pick_backend():
    problems = []
    for loader in (_torch_backend, _cupy_backend):
        try:
            return loader()
        except Exception as exc:  # noqa: BLE001 - try the next one, report all
            problems.append(
                f"{loader.__name__.strip('_').replace('_backend', '')}: {type(exc).__name__}: {exc}"
            )
    raise RuntimeError("neither torch nor CuPy can run on a GPU here (" + "; ".join(problems) + ")")


def _inputs_torch(torch, seed: int, size: int):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(size, size, generator=gen, dtype=torch.float32).to(torch.bfloat16)
    b = torch.randn(size, size, generator=gen, dtype=torch.float32).to(torch.bfloat16)
    return a, b


def _digest_torch(torch, c) -> str:
    # Exact: the result's raw 16-bit patterns, summed plain and position-weighted in int64.
    bits = c.view(torch.int16).to(torch.int64).flatten()
    weights = torch.arange(1, bits.numel() + 1, device=bits.device, dtype=torch.int64) % 65521
    parts = (int(bits.sum()), int((bits * weights).sum()), int((bits & 0xFF).sum()))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def run_torch(torch, gpus: list[int], seconds: float, size: int, seeds: list[int]) -> list[dict]:
    host_inputs = {s: _inputs_torch(torch, s, size) for s in seeds}
    results: list[dict] = [{} for _ in gpus]
    start_barrier = threading.Barrier(len(gpus))

    def worker(slot: int, index: int) -> None:
        out = results[slot]
        try:
            device = torch.device("cuda", index)
            props = torch.cuda.get_device_properties(index)
            out.update(index=index, name=props.name, uuid=_uuid(props), pci_bus_id=_bus_id(props))
            inputs = {s: (a.to(device), b.to(device)) for s, (a, b) in host_inputs.items()}
            digests: dict[str, str] = {}
            mismatches = iterations = 0
            torch.cuda.synchronize(device)
            start_barrier.wait()
            t0 = time.monotonic()
            while True:
                for seed in seeds:
                    a, b = inputs[seed]
                    c = a @ b
                    iterations += 1
                    if iterations % DIGEST_EVERY == 0 or str(seed) not in digests:
                        digest = _digest_torch(torch, c)  # synchronises
                        first = digests.setdefault(str(seed), digest)
                        mismatches += digest != first
                if time.monotonic() - t0 >= seconds:
                    break
            torch.cuda.synchronize(device)
            elapsed = time.monotonic() - t0
            out.update(
                iterations=iterations,
                seconds=round(elapsed, 3),
                tflops=round(2.0 * size**3 * iterations / elapsed / 1e12, 1),
                digests=digests,
                mismatches=mismatches,
            )
        except Exception as exc:  # noqa: BLE001 - one GPU's failure is that GPU's result
            start_barrier.abort()
            out.update(index=index, error=f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker, args=(i, g), daemon=True) for i, g in enumerate(gpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def run_cupy(cupy, gpus: list[int], seconds: float, size: int, seeds: list[int]) -> list[dict]:
    import numpy  # noqa: PLC0415 - CuPy depends on it

    results = []
    host_inputs = {}
    for s in seeds:
        rng = numpy.random.default_rng(s)
        host_inputs[s] = (
            rng.standard_normal((size, size)).astype(numpy.float16),
            rng.standard_normal((size, size)).astype(numpy.float16),
        )
    for index in gpus:  # one at a time: CuPy's matmul holds the GIL less predictably than torch
        with cupy.cuda.Device(index):
            props = cupy.cuda.runtime.getDeviceProperties(index)
            inputs = {s: (cupy.asarray(a), cupy.asarray(b)) for s, (a, b) in host_inputs.items()}
            digests: dict[str, str] = {}
            mismatches = iterations = 0
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds / max(1, len(gpus)) or iterations < len(seeds):
                for seed in seeds:
                    c = inputs[seed][0] @ inputs[seed][1]
                    iterations += 1
                    if iterations % DIGEST_EVERY == 0 or str(seed) not in digests:
                        raw = cupy.asnumpy(c.view(cupy.int16)).tobytes()
                        digest = hashlib.sha256(raw).hexdigest()
                        mismatches += digest != digests.setdefault(str(seed), digest)
            cupy.cuda.Device(index).synchronize()
            elapsed = time.monotonic() - t0
            name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            results.append(
                dict(
                    index=index,
                    name=name,
                    uuid=None,
                    pci_bus_id=None,
                    iterations=iterations,
                    seconds=round(elapsed, 3),
                    tflops=round(2.0 * size**3 * iterations / elapsed / 1e12, 1),
                    digests=digests,
                    mismatches=mismatches,
                )
            )
    return results


# -- --copy-bandwidth: host<->device copies, one GPU and one direction at a time (as nvbandwidth's
# unidirectional testcases), pinned host memory, timed by CUDA events; GB/s = 1e9 bytes/s.
COPY_BYTES = 256 << 20
COPY_MIN_REPEATS = 4


def copy_torch(torch, gpus: list[int], seconds: float) -> list[dict]:
    results = []
    host = torch.empty(COPY_BYTES, dtype=torch.uint8).pin_memory()
    for index in gpus:
        out: dict = {"index": index}
        try:
            device = torch.device("cuda", index)
            props = torch.cuda.get_device_properties(index)
            out.update(name=props.name, uuid=_uuid(props), pci_bus_id=_bus_id(props))
            dev = torch.empty(COPY_BYTES, dtype=torch.uint8, device=device)
            out["h2d_gbps"] = _time_copies(torch, device, dev, host, seconds)
            out["d2h_gbps"] = _time_copies(torch, device, host, dev, seconds)
            del dev
        except Exception as exc:  # noqa: BLE001 - one GPU's failure is that GPU's result
            out["error"] = f"{type(exc).__name__}: {exc}"
        results.append(out)
    return results


def _time_copies(torch, device, dst, src, seconds: float) -> float:
    """GB/s of ``dst.copy_(src)`` repeated for about ``seconds`` (at least COPY_MIN_REPEATS times)."""
    with torch.cuda.device(device):
        dst.copy_(src, non_blocking=True)  # warm-up: first-touch and page-table costs are not bandwidth
        torch.cuda.synchronize(device)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        repeats, began = 0, time.monotonic()
        start.record()
        while repeats < COPY_MIN_REPEATS or time.monotonic() - began < seconds:
            for _ in range(COPY_MIN_REPEATS):
                dst.copy_(src, non_blocking=True)
            repeats += COPY_MIN_REPEATS
            torch.cuda.synchronize(device)
        stop.record()
        torch.cuda.synchronize(device)
        return round(COPY_BYTES * repeats / (start.elapsed_time(stop) / 1e3) / 1e9, 2)


def copy_cupy(cupy, gpus: list[int], seconds: float) -> list[dict]:
    import numpy  # noqa: PLC0415 - CuPy depends on it

    results = []
    pinned = cupy.cuda.alloc_pinned_memory(COPY_BYTES)
    host = numpy.frombuffer(pinned, dtype=numpy.uint8, count=COPY_BYTES)
    for index in gpus:
        out: dict = {"index": index}
        try:
            with cupy.cuda.Device(index):
                props = cupy.cuda.runtime.getDeviceProperties(index)
                name = props["name"]
                out["name"] = name.decode() if isinstance(name, bytes) else str(name)
                dev = cupy.empty(COPY_BYTES, dtype=cupy.uint8)
                for key in ("h2d_gbps", "d2h_gbps"):
                    out[key] = _time_cupy_copies(cupy, index, dev, host, key == "h2d_gbps", seconds)
        except Exception as exc:  # noqa: BLE001
            out["error"] = f"{type(exc).__name__}: {exc}"
        results.append(out)
    return results


def _time_cupy_copies(cupy, index: int, dev, host, to_device: bool, seconds: float) -> float:
    def copy() -> None:
        dev.set(host) if to_device else dev.get(out=host)

    copy()  # warm-up
    cupy.cuda.Device(index).synchronize()
    repeats, began = 0, time.perf_counter()
    while repeats < COPY_MIN_REPEATS or time.perf_counter() - began < seconds:
        copy()
        repeats += 1
    cupy.cuda.Device(index).synchronize()
    return round(COPY_BYTES * repeats / (time.perf_counter() - began) / 1e9, 2)


def _uuid(props) -> str | None:
    value = getattr(props, "uuid", None)
    if value is None:
        return None
    text = str(value)
    return text if text.startswith("GPU-") else "GPU-" + text


def _bus_id(props) -> str | None:
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    domain, device = getattr(props, "pci_domain_id", 0), getattr(props, "pci_device_id", 0)
    return f"{domain:08x}:{bus:02x}:{device:02x}.0"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="burnin-stress", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to load every GPU")
    parser.add_argument(
        "--size", type=int, default=8192, help="square matrix side (8192: docs/reference.md GPU)"
    )
    parser.add_argument("--seeds", type=int, default=2, help="distinct input pairs, cycled")
    parser.add_argument("--gpus", default="all", help="comma-separated GPU indices, or all")
    parser.add_argument("--json", action="store_true", help="print one JSON document (the default)")
    parser.add_argument(
        "--copy-bandwidth",
        action="store_true",
        help="measure host-to-device and device-to-host copy GB/s per GPU instead (--seconds per copy)",
    )
    args = parser.parse_args(argv)
    report: dict = {
        "tool": "burnin-stress",
        "version": FORMAT_VERSION,
        "size": args.size,
        "seconds": args.seconds,
        "error": None,
        "gpus": [],
    }
    if args.copy_bandwidth:
        report.update(mode="copy-bandwidth", bytes=COPY_BYTES)
        del report["size"]
    try:
        backend, dtype, module = pick_backend()
        report.update(backend=backend, dtype=dtype)
        count = module.cuda.device_count() if dtype == "bf16" else module.cuda.runtime.getDeviceCount()
        gpus = list(range(count)) if args.gpus == "all" else [int(g) for g in args.gpus.split(",")]
        if args.copy_bandwidth:
            copier = copy_torch if dtype == "bf16" else copy_cupy
            report["gpus"] = copier(module, gpus, args.seconds)
        else:
            seeds = list(range(max(1, args.seeds)))
            runner = run_torch if dtype == "bf16" else run_cupy
            report["gpus"] = runner(module, gpus, args.seconds, args.size, seeds)
    except Exception as exc:  # noqa: BLE001 - the check reads the error and says UNKNOWN
        report["error"] = str(exc)
    json.dump(report, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 2 if report["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
