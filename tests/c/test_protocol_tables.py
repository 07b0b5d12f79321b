"""The protocol tables written more than once agree (issue 35, item 3).

The SPU channel numbers live in the engine (``program.rs``), the SDK header C programs include
(``spu_mfcio.h``), ``cellsim.spu`` and the C requests' names (``cellsim.c.requests``); the MFC
opcodes in the engine (``mfc/command.rs``), the header and ``cellsim.spu``; the atomic status
and SPU event bits in the engine, the header and ``cellsim.spu``; the C runtime's request codes
in ``cellsim_rt.h`` and ``cellsim.c.requests``; the control block shared with a C program's process
in ``cellsim_proto.h`` and ``cellsim.c.process``; the SDK calls a program makes in the engine's
``Request`` (with the SDK names its ``describe`` gives each), the binding's methods that submit
them (``cellsim-py/src/spu.rs``, ``ppe.rs``) and the SDK functions of ``cellsim.spu`` and
``cellsim.ppe``. Until they come from one source, every copy is read here and compared with the
others.
"""

import re
from pathlib import Path

import cellsim.ppe as ppe
import cellsim.spu as spu
from cellsim import _engine
from cellsim.c import requests

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "crates" / "cellsim-engine" / "src"
BINDING = ROOT / "crates" / "cellsim-py" / "src"
INCLUDE = ROOT / "python" / "cellsim" / "include"

# The engine's channels by the SDK's names (the CBEA's channel mnemonics).
RUST_CHANNEL = {
    "ReadEventStatus": "SPU_RdEventStat",
    "WriteEventMask": "SPU_WrEventMask",
    "WriteEventAck": "SPU_WrEventAck",
    "Signal1": "SPU_RdSigNotify1",
    "Signal2": "SPU_RdSigNotify2",
    "ReadEventMask": "SPU_RdEventMask",
    "WriteTagUpdate": "MFC_WrTagUpdate",
    "ListStallStatus": "MFC_RdListStallStat",
    "ListStallAck": "MFC_WrListStallAck",
    "AtomicStatus": "MFC_RdAtomicStat",
    "OutMbox": "SPU_WrOutMbox",
    "InMbox": "SPU_RdInMbox",
    "OutIntrMbox": "SPU_WrOutIntrMbox",
}


def python_name(mnemonic: str) -> str:
    """``SPU_RdSigNotify1`` -> ``SPU_RD_SIG_NOTIFY_1``, ``MFC_TagID`` -> ``MFC_TAG_ID``."""
    head, rest = mnemonic.split("_", 1)
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[a-zA-Z])(?=[0-9])", "_", rest)
    return f"{head}_{words.upper()}"


def header_defines(name: str) -> dict[str, int]:
    text = (INCLUDE / name).read_text()
    return {m[1]: int(m[2], 0) for m in re.finditer(r"^#define (\w+) (0x[0-9A-Fa-f]+|\d+)\s*$", text, re.M)}


def header_channels() -> dict[str, int]:
    """The header's channel mnemonics: SPU_/MFC_ and one word (``MFC_WrTagMask``, ``MFC_LSA``), below 32."""
    return {
        k: v
        for k, v in header_defines("spu_mfcio.h").items()
        if re.fullmatch(r"(SPU|MFC)_[A-Z][A-Za-z0-9]*", k) and v < 32
    }


def rust_channels() -> dict[str, int]:
    text = (ENGINE / "program.rs").read_text()
    table = text[text.index("pub const NUMBERS") :]
    table = table[: table.index("];")]
    return {RUST_CHANNEL[m[2]]: int(m[1]) for m in re.finditer(r"\((\d+), Channel::(\w+)\)", table)}


def test_the_engines_channels_are_the_headers():
    header, rust = header_channels(), rust_channels()
    assert len(rust) == len(RUST_CHANNEL), "a channel of the engine is missing from this test's map"
    assert {k: header.get(k) for k in rust} == rust


def test_python_channel_numbers_are_the_headers():
    """Every channel Python names has the header's number; every channel the engine models
    has a Python name (the others, such as SPU_WrSRR0, only a name in error messages)."""
    modelled = rust_channels()
    for mnemonic, number in header_channels().items():
        name = python_name(mnemonic)
        value = getattr(spu, name, getattr(requests, name, None))
        if value is None:
            assert mnemonic not in modelled, f"the engine models {mnemonic}: cellsim has no {name}"
            continue
        assert value == number, f"{mnemonic} = {number}: cellsim has {name} = {value}"


def test_channel_names_of_the_c_requests_are_the_headers_channels():
    header = header_channels()
    assert {v: k for k, v in requests.CHANNEL_NAMES.items()} == header


def test_mfc_opcodes_agree():
    text = (ENGINE / "mfc" / "command.rs").read_text()
    rust = {
        f"MFC_{m[2][4:].upper()}_CMD": int(m[1], 16)
        for m in re.finditer(r"\(Opcode::\w+, (0x[0-9A-Fa-f]+), \"(mfc_\w+)\"\)", text)
    }
    assert len(rust) >= 20
    header = header_defines("spu_mfcio.h")
    for name, code in rust.items():
        assert header.get(name) == code, name
        if hasattr(spu, name):  # (cellsim.spu leaves out the quadword putqlluc)
            assert getattr(spu, name) == code, name
    assert {k: v for k, v in vars(spu).items() if re.fullmatch(r"MFC_\w+_CMD", k)}.items() <= rust.items()


def test_status_and_event_bits_agree():
    text = (ENGINE / "program.rs").read_text()
    rust = {
        m[1]: int(m[2], 0) for m in re.finditer(r"pub const (MFC_\w+): u32 = (0x[0-9A-Fa-f]+|\d+);", text)
    }
    assert {"MFC_PUTLLC_STATUS", "MFC_TAG_STATUS_UPDATE_EVENT"} <= rust.keys()
    header = header_defines("spu_mfcio.h")
    for name, bit in rust.items():
        assert header.get(name, bit) == bit, name
        assert getattr(spu, name, bit) == bit, name
    assert all(name in header or hasattr(spu, name) for name in rust)


def test_c_request_codes_agree():
    text = (INCLUDE / "cellsim_rt.h").read_text()
    c = {m[1]: int(m[2]) for m in re.finditer(r"CELLSIM_RQ_(\w+) = (\d+)", text)}
    assert len(c) >= 25
    assert {name: getattr(requests, name, None) for name in c} == c


def test_the_control_block_layout_agrees_with_the_c_header(tmp_path: Path) -> None:
    """The control block shared with each C program's process is ``cellsim_ctl`` in
    ``cellsim_proto.h`` and ``Ctl`` in ``cellsim.c.process``: the C compiler's offsets of every
    field, the size and the protocol's constants are the Python side's."""
    import ctypes
    import json
    import shutil
    import subprocess

    import pytest

    from cellsim.c import process

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    fields = [name for name, *_ in process.Ctl._fields_]
    prints = "\n".join(f'    printf("\\"{f}\\": %zu,", offsetof(cellsim_ctl, {f}));' for f in fields)
    src = tmp_path / "layout.c"
    src.write_text(
        '#include <stddef.h>\n#include <stdio.h>\n#include "cellsim_proto.h"\n'
        'int main(void) {\n    printf("{");\n' + prints + "\n"
        '    printf("\\"=sizeof\\": %zu, \\"=ctl_bytes\\": %d, \\"=protocol\\": %d, \\"=magic\\": %llu, '
        '\\"=ls_base\\": %llu, \\"=memory_base\\": %llu, \\"=cmds\\": [%d, %d, %d, %d], '
        '\\"=msgs\\": [%d, %d, %d, %d, %d]}", sizeof(cellsim_ctl), CELLSIM_CTL_BYTES, CELLSIM_PROTOCOL, '
        "(unsigned long long)CELLSIM_MAGIC, (unsigned long long)CELLSIM_LS_BASE, "
        "(unsigned long long)CELLSIM_MEMORY_BASE, CELLSIM_CMD_SETUP, CELLSIM_CMD_NEW_THREAD, "
        "CELLSIM_CMD_RESUME, CELLSIM_CMD_QUIT, CELLSIM_MSG_HELLO, CELLSIM_MSG_READY, "
        "CELLSIM_MSG_REQUEST, CELLSIM_MSG_CRASH, CELLSIM_MSG_ERROR);\n    return 0;\n}\n"
    )
    exe = tmp_path / "layout"
    header_dir = Path(process.__file__).parent
    subprocess.run([cc, "-I", str(header_dir), str(src), "-o", str(exe)], check=True)
    # constants under "=" names: a field of the block may share a constant's name (magic)
    c = json.loads(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout)
    assert {f: c[f] for f in fields} == {f: getattr(process.Ctl, f).offset for f in fields}
    assert c["=sizeof"] == ctypes.sizeof(process.Ctl)
    assert c["=ctl_bytes"] == process.CTL_BYTES and c["=magic"] == process.MAGIC
    assert c["=protocol"] == process.PROTOCOL
    assert (c["=ls_base"], c["=memory_base"]) == (process.LS_BASE, process.MEMORY_BASE)
    assert c["=cmds"] == [process.CMD_SETUP, process.CMD_NEW_THREAD, process.CMD_RESUME, process.CMD_QUIT]
    assert c["=msgs"] == [
        process.MSG_HELLO,
        process.MSG_READY,
        process.MSG_REQUEST,
        process.MSG_CRASH,
        process.MSG_ERROR,
    ]


def rust_requests() -> list[str]:
    """The variants of the engine's ``Request`` (one per kind of SDK call a program makes)."""
    text = (ENGINE / "program.rs").read_text()
    body = re.search(r"^pub enum Request \{\n(.*?)^\}", text, re.S | re.M)
    assert body, "program.rs has no enum Request"
    return re.findall(r"^    ([A-Z]\w*)\b", body[1], re.M)


def binding_requests() -> dict[str, set[str]]:
    """Each binding method of ``Engine`` and the ``Request`` variants it submits."""
    methods: dict[str, set[str]] = {}
    for path in sorted(BINDING.glob("*.rs")):
        text = path.read_text()
        for block in re.finditer(r"#\[pymethods\]\nimpl PyEngine \{\n(.*?)^\}", text, re.S | re.M):
            # a method runs from its `fn` to the next method's
            method = r"^    (?:pub )?fn (\w+)\((.*?)(?=^    (?:pub )?fn |\Z)"
            for m in re.finditer(method, block[1], re.S | re.M):
                built = set(re.findall(r"Request::([A-Z]\w*)", m[2]))
                if built:
                    methods[m[1]] = built
    return methods


def test_every_request_has_a_binding_method():
    """Every kind of request the engine takes is submitted by a method of the binding, and
    every method that submits one is typed in ``_engine.pyi`` (mypy's stubtest checks the
    signatures) and names a variant the engine has."""
    variants = rust_requests()
    assert len(variants) >= 20
    methods = binding_requests()
    submitted = set().union(*methods.values())
    assert submitted == set(variants), (set(variants) - submitted, submitted - set(variants))
    for name in methods:
        assert hasattr(_engine.Engine, name), f"the binding's {name} is not on Engine"


# SDK names the engine's ``Request::describe`` gives that are no Python function of that name:
# the generic channel-count intrinsic (cellsim.spu has one function per channel, spu_stat_*) and
# the PPE's register read behind spe_in_mbox_status and spe_out_mbox_status.
DESCRIBED_ONLY = {"spu_readchcnt", "spe_mbox_status"}


def test_sdk_names_of_the_engine_are_pythons():
    """The SDK names the engine gives requests in messages (``Request::describe``, each
    channel's ``sdk_name``) are the functions a Python program calls: ``spu_*``/``mfc_*`` in
    ``cellsim.spu``, ``spe_*`` in ``cellsim.ppe``."""
    text = (ENGINE / "program.rs").read_text()
    describe = text[text.index("pub fn describe") :]
    describe = describe[: describe.index("\n    }\n")]
    channel = text[text.index("pub fn sdk_name") :]
    channel = channel[: channel.index("\n    }\n")]
    names = set(re.findall(r'"((?:spu|mfc|spe)_\w+)[({]', describe))
    names |= set(re.findall(r'=> "((?:spu|mfc)_\w+)"', channel))
    assert len(names) >= 25
    for name in sorted(names - DESCRIBED_ONLY):
        module = ppe if name.startswith("spe_") else spu
        assert callable(getattr(module, name, None)), f"the engine names {name}: {module.__name__} has none"
    assert names >= DESCRIBED_ONLY, "a name listed as described only is no longer described"
