"""The problem-state area of an SPE: where its mailbox and signal registers
are in the effective-address space (the CBEA's layout, libspe2's
``cbea_map.h``), for programs that reach them by address: a PPE store, an
SPE's ``mfc_put`` or ``mfc_sndsig``.

``spe_ps_area_get(ctx, area)`` (:mod:`cellsim.ppe`) returns the address of
one of libspe2's areas; the register offsets here are from the start of the
whole problem-state area, i.e. ``spe_ps_area_get(ctx, SPE_MSSYNC_AREA)``::

    sig1 = spe_ps_area_get(ctx) + SIG_NOTIFY_1     # SPU_Sig_Notify_1
    sig1 = spe_ps_area_get(ctx, SPE_SIG_NOTIFY_1_AREA) + SIG_NOTIFY_1_AREA_OFFSET   # the same
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AREA_OFFSETS",
    "SIG_NOTIFY_1",
    "SIG_NOTIFY_1_AREA_OFFSET",
    "SIG_NOTIFY_2",
    "SIG_NOTIFY_2_AREA_OFFSET",
    "SPE_CONTROL_AREA",
    "SPE_MFC_COMMAND_AREA",
    "SPE_MSSYNC_AREA",
    "SPE_SIG_NOTIFY_1_AREA",
    "SPE_SIG_NOTIFY_2_AREA",
    "SPU_IN_MBOX",
    "SPU_MBOX_STAT",
    "SPU_OUT_MBOX",
]

# libspe2's ps_area values (spe_ps_area_get's second argument)
SPE_MSSYNC_AREA: Final = 0
SPE_MFC_COMMAND_AREA: Final = 1
SPE_CONTROL_AREA: Final = 2
SPE_SIG_NOTIFY_1_AREA: Final = 3
SPE_SIG_NOTIFY_2_AREA: Final = 4

AREA_OFFSETS: Final[dict[int, int]] = {
    SPE_MSSYNC_AREA: 0x0000,
    SPE_MFC_COMMAND_AREA: 0x3000,
    SPE_CONTROL_AREA: 0x4000,
    SPE_SIG_NOTIFY_1_AREA: 0x14000,
    SPE_SIG_NOTIFY_2_AREA: 0x1C000,
}
"""Where each libspe2 area starts in the problem-state area."""

# Registers, from the start of the problem-state area (CBEA).
SPU_OUT_MBOX: Final = 0x4004
"""SPU_Out_Mbox: the SPE's outbound mailbox (read by the PPE)."""
SPU_IN_MBOX: Final = 0x400C
"""SPU_In_Mbox: the SPE's inbound mailbox (a 4-byte write delivers a message)."""
SPU_MBOX_STAT: Final = 0x4014
"""SPU_Mbox_Stat: the mailboxes' counts."""
SIG_NOTIFY_1: Final = 0x1400C
"""SPU_Sig_Notify_1: signal-notification register 1 (``mfc_sndsig`` target)."""
SIG_NOTIFY_2: Final = 0x1C00C
"""SPU_Sig_Notify_2: signal-notification register 2."""

# The signal registers within their own areas (libspe2's spe_sig_notify_N_area_t).
SIG_NOTIFY_1_AREA_OFFSET: Final = SIG_NOTIFY_1 - AREA_OFFSETS[SPE_SIG_NOTIFY_1_AREA]
SIG_NOTIFY_2_AREA_OFFSET: Final = SIG_NOTIFY_2 - AREA_OFFSETS[SPE_SIG_NOTIFY_2_AREA]
