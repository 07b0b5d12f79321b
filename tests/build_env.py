"""What the tests that build the engine from scratch (the README's command, the release wheel)
set in cargo's environment: an unoptimised engine builds in a fraction of the release build's
time, and the command, its tags and what it installs stay the same."""

from __future__ import annotations

UNOPTIMISED_ENGINE = {
    "CARGO_PROFILE_RELEASE_OPT_LEVEL": "0",
    "CARGO_PROFILE_RELEASE_LTO": "false",
    "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "16",
}
