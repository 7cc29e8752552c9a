"""Whether the output directory can be written: read-only, full, or over the process's file
size limit show up as an error that names the directory, before a run starts and after one
fails (where ML Metadata's SQLite would only say "disk I/O error")."""

import errno
import os
import tempfile
from typing import Optional

PROBE_BYTES = 1 << 20  # a disk with less than this free is full for a pipeline run


def problem(directory: str, probe_bytes: int = PROBE_BYTES) -> Optional[str]:
    """None when `probe_bytes` can be written to `directory` (and synced), else why not."""
    directory = os.path.abspath(directory)
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".write-probe-") as probe:
            probe.write(b"\0" * probe_bytes)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            reason += f" (could not write {probe_bytes // 1024:,} KiB)"
        return f"cannot write to {directory}: {reason}"
    return None
