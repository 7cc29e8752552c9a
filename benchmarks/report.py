"""What the benchmarks share: the machine, peak memory and the side-by-side comparison table."""
import json
import os
import platform
import resource
import sys


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def peak_memory_gb() -> float:
    """Peak resident memory of this process and its children, in GB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round((own + children) / 1024 ** 2, 2)  # ru_maxrss is in KiB on Linux


def print_comparison(measured: dict, references) -> None:
    """One row per (name, measured key, reference value, what the reference is), with the ratio."""
    print(f"{'measure':32} {'measured':>10} {'reference':>10} {'ratio':>7}  reference")
    for name, key, reference, kind in references:
        value = measured.get(key)
        if value is None:
            print(f"{name:32} {'-':>10} {reference:>10.4g} {'-':>7}  {kind}")
            continue
        print(f"{name:32} {value:>10.4g} {reference:>10.4g} {value / reference:>7.3f}  {kind}")


def print_components(components: dict) -> None:
    print(f"\n{'component':32} {'state':>9} {'seconds':>8}")
    for node, info in components.items():
        print(f"{node:32} {info['state']:>9} {info['seconds']:>8.1f}")


def save(result: dict, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"machine": machine(), "command": " ".join(sys.argv), **result}, f, indent=1)
    print(f"\nwritten to {path}")
