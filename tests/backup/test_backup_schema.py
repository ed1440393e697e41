"""site.backup reaches restic's repository argument (a root-run command) and the backup
timer: every value has a strict type, refused at its own line with the field's path."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.inventory.load import parse
from fleet.inventory.schema.backup import repository
from support.inventory_edits import edit, expect, problems_of

SITE_END = "  provisioning_host: head-01\n"


def with_backup(text: str, dest: str, mark: str) -> tuple[str, tuple[int, int]]:
    return edit(text, SITE_END, f"{SITE_END}  backup:\n    destination: {dest}\n", mark=mark)


@pytest.mark.parametrize("path", ["srv/backup", "\"/srv/$(reboot)\"", "\"/srv/a b\"", "/"])
def test_a_path_destination_is_a_plain_absolute_directory(small_text: str, path: str) -> None:
    text, at = with_backup(small_text, f"{{type: path, path: {path}}}", path)
    expect(text, "value_error", "site.backup.destination.path", at)


@pytest.mark.parametrize("host", ["\"st or;reboot\"", "\"-oProxyCommand=x\""])
def test_an_sftp_host_is_a_host_name(small_text: str, host: str) -> None:
    text, at = with_backup(small_text, f"{{type: sftp, host: {host}, user: fleet, "
                                       "path: /srv/backup}", host)
    expect(text, "value_error", "site.backup.destination.host", at)


def test_a_rest_url_carries_no_credentials(small_text: str) -> None:
    url = "https://fleet:pw@backup-01:8000/fleet"
    text, at = with_backup(small_text, f"{{type: rest, url: \"{url}\"}}", f'"{url}"')
    expect(text, "value_error", "site.backup.destination.url", at)


def test_an_unknown_destination_type_is_refused(small_text: str) -> None:
    text, at = with_backup(small_text, "{type: s3, path: /srv/b}", "s3")
    expect(text, "literal_error", "site.backup.destination.type", at)


@pytest.mark.parametrize(("dest", "says"), [
    ("{type: sftp, path: /srv/b}", "missing: host, user"),
    ("{type: path, path: /srv/b, url: \"https://b:1/x\"}", "not for path: url")])
def test_each_type_has_its_fields_and_no_other(small_text: str, dest: str, says: str) -> None:
    text, _ = with_backup(small_text, dest, dest)
    (problem,) = problems_of(text)
    assert problem.path == "site.backup.destination" and says in problem.message


@pytest.mark.parametrize(("dest", "repo"), [
    ("{type: path, path: /srv/backup/fleet}", "/srv/backup/fleet"),
    ("{type: sftp, host: stor-1, user: fleet, path: /srv/backup}",
     "sftp:fleet@stor-1:/srv/backup"),
    ("{type: rest, url: \"https://backup-01:8000/fleet\"}", "rest:https://backup-01:8000/fleet"),
])
def test_each_destination_is_its_restic_repository(small_text: str, dest: str,
                                                   repo: str) -> None:
    text, _ = with_backup(small_text, dest, dest)
    site = parse(text, "inventory.yaml").raw.site
    assert site.backup is not None and repository(site.backup.destination) == repo


@pytest.mark.parametrize(("host", "code", "says"), [
    ("stor-9", "unknown_ref", "unknown node 'stor-9'"),
    ("head-01", "mismatch", "is the Salt master"),
    ("gpu-01", "mismatch", "is the standby master")])
def test_an_sftp_host_is_a_node_that_is_no_master(small_text: str, host: str, code: str,
                                                  says: str) -> None:
    """A backup kept on the master (or on the standby that holds its keys) is lost with
    it; the host's login is made by the backup.target state, on a node of the inventory."""
    text = small_text.replace("  salt: {master: head-01}",
                              "  salt: {master: head-01, standby: {host: gpu-01}}")
    text, at = with_backup(text, f"{{type: sftp, host: {host}, user: fleet-backup, "
                                 "path: /srv/backup/fleet}", f"{host}, user")
    assert expect(text, code, "site.backup.destination.host", at, says).hint


@pytest.mark.parametrize("path", ["/var/lib/fleet/backup", "/srv/fleet/checkout/b", "/etc/backup"])
def test_a_path_destination_is_not_a_directory_of_the_masters_own(
        small_text: str, path: str) -> None:
    text, at = with_backup(small_text, f"{{type: path, path: {path}}}", path)
    expect(text, "mismatch", "site.backup.destination.path", at)


def test_the_master_states_defaults_are_fleets() -> None:
    """salt/provisioning/defaults.yaml names the key, the backup's state and the audit
    log's directory where fleet looks for them by default."""
    import yaml

    from fleet.audit.log import WHERE
    from fleet.backup import options, paths
    from support.cli import ROOT

    values = yaml.safe_load((ROOT / "salt" / "provisioning" / "defaults.yaml").read_text())
    b = values["values"]["backup"]
    assert b["key"] == options.KEY_DEFAULT
    assert b["state_dir"] == paths.STATE.default
    assert values["values"]["audit"]["dir"] == str(Path(WHERE.default).parent)
