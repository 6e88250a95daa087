# SPDX-License-Identifier: MIT
"""The one exception tutti raises for a failed C call, and the check that raises it."""
from . import _lib


class TuttiError(RuntimeError):
    """A tutti call failed.

    Attributes:
        status: the tutti_status_t value (an int).
        name: its name, such as ``"TUTTI_ERR_TIMEOUT"``.
        detail: what tutti_comm_last_error() said: the argument, peer rank,
            collective and step that went wrong.
        call: the C function that failed.
    """

    def __init__(self, status, detail, call):
        self.status = int(status)
        self.name = _lib.STATUS_NAMES.get(self.status, f"status {self.status}")
        self.detail = detail
        self.call = call
        text = _lib.lib.tutti_strerror(self.status).decode()
        super().__init__(f"{call}: {self.name} ({text})" + (f": {detail}" if detail else ""))


def check(status, comm, call):
    """Raises TuttiError with comm's last error (this thread's when comm is None) unless status is 0."""
    if status:
        raise TuttiError(status, _lib.last_error(comm), call)
