"""Which machine this is, as the measured speeds name machines: the CPU's model name, its
family and model numbers (one name, "AMD EPYC", covers CPUs seven times apart), its bfloat16
instructions and cores."""

import os
import platform

from trainer_module.training.precision import cpu_bfloat16_flags, cpu_fields


def cpu_model() -> str:
    """The CPU's model name, as /proc/cpuinfo (lscpu) gives it."""
    return cpu_fields().get("model name") or platform.processor() or platform.machine()


def cpu_identity() -> dict:
    """The CPU's family and model numbers and its bfloat16 instructions (/proc/cpuinfo)."""
    fields = cpu_fields()
    return {
        "cpu_family": fields.get("cpu family"),
        "cpu_model_number": fields.get("model"),
        "bfloat16_flags": list(cpu_bfloat16_flags()),
    }


def this_machine() -> dict:
    """The fields a results file's `machine` shares with this one's (cpu, family, model,
    bfloat16 flags, cores)."""
    return {"cpu": cpu_model(), **cpu_identity(), "cores": os.cpu_count()}


def same_kind(a: dict, b: dict) -> bool:
    """Whether two machines are of one kind: the same CPU family and model, and cores."""
    keys = ("cpu_family", "cpu_model_number", "cores")
    return a.get("cpu_family") is not None and all(str(a.get(k)) == str(b.get(k)) for k in keys)


def describe(machine: dict) -> str:
    """ "AMD EPYC, CPU family 25 model 17, AVX512-BF16, 2 cores"."""
    flags = ", ".join(f.replace("_", "-").upper() for f in machine.get("bfloat16_flags") or [])
    return ", ".join(
        part
        for part in (
            machine.get("cpu") or "unknown CPU",
            f"CPU family {machine['cpu_family']} model {machine['cpu_model_number']}"
            if machine.get("cpu_family")
            else "CPU family unknown",
            flags or "no bfloat16 instructions",
            f"{machine['cores']} cores" if machine.get("cores") else "",
        )
        if part
    )
