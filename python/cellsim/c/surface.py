"""The libspe2 surface: every function of libspe2's public header (the SDK 3.x
libspe2 API reference) and what cellsim does with it.

A function cellsim does not implement is declared nowhere in cellsim's
``libspe2.h`` bodies, so a program calling it fails to link (images are linked
with ``-z defs``), and the build names it: never an undefined symbol at run
time. docs/c-programs.md's table is checked against this list.
"""

from __future__ import annotations

import re

WORKS = "works"
MISSING = "link-time error naming it"

LIBSPE2: dict[str, str] = {
    "spe_context_create": WORKS,
    "spe_context_create_affinity": WORKS,
    "spe_context_destroy": WORKS,
    "spe_gang_context_create": WORKS,
    "spe_gang_context_destroy": WORKS,
    "spe_image_open": WORKS,
    "spe_image_close": WORKS,
    "spe_program_load": WORKS,
    "spe_context_run": WORKS,
    "spe_stop_info_read": WORKS,
    "spe_event_handler_create": WORKS,
    "spe_event_handler_destroy": WORKS,
    "spe_event_handler_register": WORKS,
    "spe_event_handler_deregister": WORKS,
    "spe_event_wait": WORKS,
    "spe_mfcio_get": WORKS,
    "spe_mfcio_getb": WORKS,
    "spe_mfcio_getf": WORKS,
    "spe_mfcio_put": WORKS,
    "spe_mfcio_putb": WORKS,
    "spe_mfcio_putf": WORKS,
    "spe_mfcio_tag_status_read": WORKS,
    "spe_in_mbox_write": WORKS,
    "spe_in_mbox_status": WORKS,
    "spe_out_mbox_read": WORKS,
    "spe_out_mbox_status": WORKS,
    "spe_out_intr_mbox_read": WORKS,
    "spe_out_intr_mbox_status": WORKS,
    "spe_signal_write": WORKS,
    "spe_mssync_start": MISSING,
    "spe_mssync_status": MISSING,
    "spe_ls_area_get": WORKS,
    "spe_ls_size_get": WORKS,
    "spe_ps_area_get": WORKS,
    "spe_callback_handler_register": MISSING,
    "spe_callback_handler_deregister": MISSING,
    "spe_callback_handler_query": MISSING,
    "spe_cpu_info_get": WORKS,
}

_UNDEFINED = re.compile(r"undefined (?:reference|symbol)[^`'\"]*[`'\"]?([A-Za-z_]\w*)")


def undefined_symbols(linker_output: str) -> list[str]:
    """The symbols a failed link names as undefined, in order, each once."""
    return list(dict.fromkeys(_UNDEFINED.findall(linker_output)))


def explain_link_error(linker_output: str, spu: bool = False) -> str:
    """One line on what the linker refused: libspe2 functions cellsim does not
    implement (or, in an SPU program, any: libspe2 is the PPU's library), or
    other undefined functions (a missing source file, a typo)."""
    missing = undefined_symbols(linker_output)
    if not missing:
        return ""
    ours = [s for s in missing if s in LIBSPE2]
    others = [s for s in missing if s not in LIBSPE2]
    parts = []
    if ours and spu:
        parts.append(f"{', '.join(ours)}: libspe2 is the PPU's library, an SPU program cannot call it")
    elif ours:
        parts.append(
            f"{', '.join(ours)} {'is' if len(ours) == 1 else 'are'} part of libspe2 but not implemented by "
            "cellsim (docs/c-programs.md lists each libspe2 call with its status)"
        )
    if others:
        parts.append(f"undefined: {', '.join(others)} (a source file missing from the build?)")
    return "; ".join(parts)
