"""How much of a cell's output grading keeps: a few MB, whatever the cell prints.

A cell that prints a gigabyte (a `sys.stdout.write` in a loop) must not make the grader hold a
gigabyte, nor the kernel either. Two caps, one on each side of the wire:

* in the kernel (warm kernels, `zygote.py`): the standard streams stop sending what a cell writes
  past `KERNEL_BYTES`, and say so once, so the bulk never leaves the kernel (nor is kept there:
  IPython's own copy of every write, for its output history, is turned off);
* in the grader (`CappedClient`): nbclient keeps at most `KEEP_BYTES` of a cell's outputs and one
  note that the rest was cut, whatever the kernel sends (a submission can undo the kernel's cap in
  its own process); a single message larger than `MAX_MESSAGE_BYTES` is refused by ZeroMQ itself
  before it is read.

The probe's cells (marked `PROBE_META`) may keep more: their lines carry the results.
"""

from __future__ import annotations

import contextlib
import re

import nbformat
from byhand.i18n import N_
from nbclient import NotebookClient

KERNEL_BYTES = 2 << 20  # what the kernel's streams send per cell
KEEP_BYTES = 4 << 20  # what the grader keeps of one cell's outputs
PROBE_BYTES = 64 << 20  # ... of a probe cell's (its results)
MAX_MESSAGE_BYTES = 96 << 20  # the largest message the grader's sockets accept
PROBE_META = "tbb_probe"
CUT_NOTE = N_("[the grader kept the first {mb} MB of this cell's output; the rest was cut]")
CUT = "\n" + CUT_NOTE + "\n"
CUT_FOUND = re.compile(re.escape(CUT_NOTE).replace(re.escape("{mb}"), r"(?P<mb>\d+)"))


def cap_kernel_streams(limit: int = KERNEL_BYTES) -> None:
    """In the kernel, before it starts: each cell's stdout and stderr together send at most
    `limit` characters, then one line saying the rest was cut. (Counted per request, so the next
    cell starts again from zero.)"""
    from ipykernel.iostream import OutStream

    write = OutStream.write
    state = {"request": None, "sent": 0}

    def capped(self, string):
        if not isinstance(string, str):
            return write(self, string)
        request = (self.parent_header or {}).get("msg_id")
        if request != state["request"]:
            state["request"], state["sent"] = request, 0
        room = limit - state["sent"]
        state["sent"] += len(string)
        if room >= len(string):
            return write(self, string)
        if room >= 0:  # crossing the limit: what fits, then the note, once
            write(self, string[:room] + CUT.format(mb=limit >> 20))
            state["sent"] = limit + 1
        return len(string)

    capped.__wrapped__ = write  # the probe writes its own lines past the cap
    OutStream.write = capped
    # IPython 9 also keeps every string a cell writes, for its output history (`_tee` in
    # `run_cell`, never cleared): a 1 GB print stayed in the kernel's memory. Grading needs no
    # such history.
    from IPython.core.interactiveshell import InteractiveShell

    if hasattr(InteractiveShell, "_tee"):
        InteractiveShell._tee = lambda self, channel: contextlib.nullcontext()


class CappedClient(NotebookClient):
    """nbclient keeping at most `KEEP_BYTES` of each cell's outputs (`PROBE_BYTES` for probe
    cells), plus one note where it cut."""

    def output(self, outs, msg, display_id, cell_index):
        counted = getattr(self, "_tbb_kept", None)
        if counted is None or counted[0] != cell_index:
            counted = self._tbb_kept = [cell_index, 0, False]  # cell, bytes kept, cut
        if counted[2]:
            return None
        size = _size(msg["content"])
        cell = self.nb.cells[cell_index] if 0 <= cell_index < len(self.nb.cells) else {}
        limit = PROBE_BYTES if cell.get("metadata", {}).get(PROBE_META) else KEEP_BYTES
        if counted[1] + size <= limit:
            counted[1] += size
            return super().output(outs, msg, display_id, cell_index)
        counted[2] = True
        text = msg["content"].get("text", "") if msg["msg_type"] == "stream" else ""
        text = str(text)[: max(limit - counted[1], 0)] + CUT.format(mb=limit >> 20)
        note = nbformat.v4.new_output("stream", name="stdout", text=text)
        outs.append(note)
        return note

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        self._tbb_kept = [cell_index, 0, False]
        return await super().async_execute_cell(cell, cell_index, execution_count, store_history)


def localize_cut_notes(nb, lang: str) -> None:
    """The notes that say where a cell's output was cut, in the notebook's language (the catalogue's
    PAGE entry for CUT_NOTE): a Chinese student reads them in the feedback page and in the notebook
    kept for formgrader. The note is written in English where it is cut (in the kernel, or here)."""
    from byhand import i18n

    if lang == i18n.DEFAULT:
        return
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            text = out.get("text") if out.get("output_type") == "stream" else None
            if isinstance(text, str) and "[the grader kept the first " in text:
                out["text"] = CUT_FOUND.sub(lambda m: i18n.page(CUT_NOTE, lang, mb=m["mb"]), text)


def _size(out) -> int:
    """What an output (or a message's content) weighs: its text and its data's text."""
    n = len(out.get("text", "") or "")
    for value in (out.get("data") or {}).values():
        n += len(value) if isinstance(value, str) else len(str(value))
    n += len(str(out.get("evalue", ""))) + sum(len(str(t)) for t in out.get("traceback", []) or [])
    return n
