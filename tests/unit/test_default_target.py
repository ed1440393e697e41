"""The lifecycle's default targets (one function for apply, health, rollout), TARGET items
naming a retired node, and the minions' sizing by capacity, not by node count."""

from __future__ import annotations

from fleet.inventory.lifecycle import default_target, drains, left_out_text
from fleet.inventory.load import load_inventory
from fleet.inventory.target import TargetError, resolve
from fleet.render.saltsize import minion_capacity, site_sizing
from support.cli import FIXTURES, ROOT, SMALL, run_fleet

LIFECYCLE = FIXTURES / "lifecycle-overlay.yaml"


def _inv():  # type: ignore[no-untyped-def]
    return load_inventory(SMALL, LIFECYCLE)


def test_default_targets_leave_out_planned_and_retired_and_maintenance_for_health() -> None:
    inv = _inv()
    apply, left = default_target(inv, "apply")
    assert "gpu-02" not in apply and "gpu-01" not in apply and "gpu-03" in apply
    assert left == {"planned": ["gpu-02"], "retired": ["gpu-01"]}
    for verb in ("health", "rollout"):
        names, left = default_target(inv, verb)
        assert names == ["head-01", "gpu-04", "stor-1", "stor-2"]
        assert left == {"planned": ["gpu-02"], "maintenance": ["gpu-03"],
                        "retired": ["gpu-01"]}
    assert left_out_text({"planned": ["gpu-02"], "retired": ["gpu-01"]}) == (
        "left out of the default target: 1 planned (gpu-02), 1 retired (gpu-01) "
        "(name planned nodes in TARGET to include them)")


def test_every_day_two_verb_says_what_its_default_target_leaves_out(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for verb in ("apply", "health"):
        r = run_fleet(verb, "-i", str(SMALL), "--overlay", str(LIFECYCLE),
                      "--salt-config", str(tmp_path / "none"))
        assert f"fleet {verb}: left out of the default target: 1 planned (gpu-02)" \
            in r.stderr, r.stderr
    r = run_fleet("health", "-i", str(SMALL), "--overlay", str(LIFECYCLE),
                  "--salt-config", str(tmp_path / "none"))
    assert "1 maintenance (gpu-03)" in r.stderr


def test_a_target_naming_a_retired_node_says_it_is_retired() -> None:
    inv = _inv()
    for target in ("gpu-01", "gpu-[01-02]"):
        try:
            resolve(target, inv.nodes, retired=inv.retired)
        except TargetError as exc:
            assert "retired" in str(exc) and "gpu-01" in str(exc)
        else:
            raise AssertionError(f"{target}: no error")
    # a planned node, named, is targeted; a glob takes what is rendered
    assert resolve("gpu-02", inv.nodes, retired=inv.retired) == ["gpu-02"]
    assert resolve("gpu-*", inv.nodes, retired=inv.retired) == ["gpu-02", "gpu-03", "gpu-04"]


def test_drains_pillar_names_maintenance_with_the_prefix_and_active_nodes_to_resume() -> None:
    d = drains(_inv())
    assert d["drain"] == {"gpu-03": "fleet-inventory: fan replaced; RMA #4711 'urgent'"}
    assert d["resume"] == ["gpu-04"]  # planned gpu-02 is not in slurmctld's view yet


def test_minion_sizing_follows_the_switch_ports_not_the_node_count() -> None:
    site = load_inventory(ROOT / "inventory.yaml")
    assert minion_capacity(site) == 3 * 64  # sw1-sw3 carry the provisioning NICs
    small, fewer = load_inventory(SMALL), _inv()
    assert len(fewer.nodes) < len(small.nodes)
    assert site_sizing(small)["minion"] == site_sizing(fewer)["minion"]
    assert site_sizing(site)["minion"]["recon_max"] == 100 * 192
