"""The Salt sizing keys (fleet.render.saltsize): one definition, from the node count."""

from __future__ import annotations

from fleet.render.saltsize import salt_sizing


def test_site_size() -> None:
    s = salt_sizing(144)
    assert s["master"]["worker_threads"] == 7
    assert s["master"]["gather_job_timeout"] >= 30
    assert s["master"]["job_cache"] is True  # fleet apply reads the job cache
    assert s["minion"]["random_reauth_delay"] == 15
    assert s["minion"]["recon_randomize"] is True


def test_grows_with_the_fleet_and_never_below_the_floors() -> None:
    small, site, big = salt_sizing(1), salt_sizing(144), salt_sizing(10_000)
    assert small["master"]["worker_threads"] == 5  # Salt's default is the floor
    for side in ("master", "minion"):
        for key, value in site[side].items():
            if isinstance(value, bool):
                continue
            assert small[side][key] <= value <= big[side][key] or key == "keep_jobs_seconds"
    assert big["master"]["keep_jobs_seconds"] < site["master"]["keep_jobs_seconds"]
    assert big["master"]["zmq_backlog"] >= 2 * 10_000
