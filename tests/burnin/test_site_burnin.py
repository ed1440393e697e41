"""The site's burn-in as inventory.yaml sets it: every profile has checks (a profile with
none fails its nodes, fleet.burnin.verdict), no check writes a disk of a machine that has
data disks, and docs/discovery.md's example is an excerpt of it."""

from __future__ import annotations

import re

import yaml

from discover.sites import ROOT
from fleet.inventory.load import load_inventory

INV = load_inventory(ROOT / "inventory.yaml")


def test_every_profile_of_the_site_configures_burnin() -> None:
    assert {p: bool(prof.burnin) for p, prof in INV.raw.profiles.items()} == dict.fromkeys(
        INV.raw.profiles, True)


def test_no_write_test_on_a_machine_whose_disks_hold_data() -> None:
    for name, prof in INV.raw.profiles.items():
        if prof.data_disks:
            assert "disk-verify" not in prof.burnin, name


def test_the_docs_example_is_the_sites_own() -> None:
    text = (ROOT / "docs" / "discovery.md").read_text(encoding="utf-8")
    section = text[text.index("## 4. Burn-in"):]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block
    shown = yaml.safe_load(block.group(1))["profiles"]
    for profile, doc in shown.items():
        site = INV.raw.profiles[profile].burnin
        for check, test in doc["burnin"].items():
            assert site[check].model_dump(exclude_unset=True) == test, (profile, check)
