"""Every inventory value that reaches a root-run config or command has a
strict type, checked by `fleet validate` at the value's own line:column.

Each test makes one hostile or mistaken edit to the small inventory that validated before
(and reached a Salt state, slurm.conf, a unit, chrony, iPXE, GRUB, a preseed, dnsmasq or
nginx) and checks where and how it is reported now.
"""

from __future__ import annotations

import pytest

from fleet.inventory.load import parse
from support.inventory_edits import edit, expect, find, problems_of

SITE_END = "  provisioning_host: head-01\n"


def with_site(text: str, line: str) -> tuple[str, tuple[int, int]]:
    """Add ``line`` (``key: value``) to the site section; the position of its value."""
    _, _, value = line.partition(": ")
    return edit(text, SITE_END, f"{SITE_END}  {line}\n", mark=value)


# --- deployment directories ----------------------------------------------------------------


@pytest.mark.parametrize("field", ["pxe_root", "pxe_state", "checkout"])
def test_root_is_never_a_deployment_directory(small_text: str, field: str) -> None:
    text, at = with_site(small_text, f"{field}: /")
    expect(text, "value_error", f"site.{field}", at, "'/'", "root")


@pytest.mark.parametrize("path", ["/etc", "/usr", "/bin", "/var", "/boot", "/root", "/home",
                                  "/srv", "/var/lib", "/usr/local"])
def test_a_system_directory_is_never_a_deployment_directory(small_text: str, path: str) -> None:
    text, at = with_site(small_text, f"pxe_root: {path}")
    expect(text, "value_error", "site.pxe_root", at, path, "system directory")


@pytest.mark.parametrize("path", ["srv/fleet/pxe", "/srv/fleet/../../etc", "/srv//fleet",
                                  "/srv/fleet/pxe/", "/srv/fleet/./pxe", '"/srv/fleet pxe"',
                                  "\"/srv/fleet\\npxe\"", "\"/srv/$(reboot)\"",
                                  "\"/srv/a'b\""])
def test_deployment_directories_are_absolute_normalized_and_plain(small_text: str,
                                                                  path: str) -> None:
    text, at = with_site(small_text, f"pxe_root: {path}")
    expect(text, "value_error", "site.pxe_root", at)


@pytest.mark.parametrize("path", ["srv/fleet/repo", "/srv/fleet/../../etc", '"/srv/fleet repo"',
                                  "\"/srv/fleet\\nrepo\"", "\"/srv/$(reboot)\"", "\"/srv/a'b\"",
                                  "/", "/etc"])
def test_the_site_repository_is_a_plain_deployment_directory(small_text: str,
                                                             path: str) -> None:
    """site.apt.repo reaches nginx's alias, a deb822 file: URI and the lab builder's shell."""
    text, at = edit(small_text, "  apt: {mirror: ", f"  apt: {{repo: {path}, mirror: ", mark=path)
    expect(text, "value_error", "site.apt.repo", at)


@pytest.mark.parametrize(("lines", "field", "what"), [
    (["pxe_root: /srv/fleet/pxe", "pxe_state: /srv/fleet/pxe/state"], "pxe_state",
     "pxe_root"),
    (["checkout: /srv/fleet/pxe", "pxe_root: /srv/fleet/pxe"], "pxe_root", "checkout"),
    (["checkout: /srv/fleet", "pxe_root: /srv/fleet/pxe"], "pxe_root", "checkout"),
    (["pxe_root: /srv/fleet/images/pxe"], "pxe_root", "images"),
    (["pxe_state: /srv/fleet/st", "pxe_root: /srv/fleet/st-tokens/x"], "pxe_root", "tokens"),
])
def test_deployment_directories_never_overlap(small_text: str, lines: list[str], field: str,
                                              what: str) -> None:
    text = small_text
    for line in lines:
        text, _ = with_site(text, line)
    value = next(ln.split(": ")[1] for ln in lines if ln.startswith(field))
    at = find(text, f"{field}: {value}")
    expect(text, "overlap", f"site.{field}", (at[0], at[1] + len(field) + 2), what)


def test_an_mkv_index_never_overlaps_the_checkout(small_text: str) -> None:
    text, _ = with_site(small_text, "checkout: /srv/fleet/checkout")
    text, at = edit(text, "index_path: /var/lib/mkv/data",
                    "index_path: /srv/fleet/checkout/pillar", mark="/srv")
    expect(text, "overlap", "mkv.arrays.data.index_path", at, "checkout")


# --- paths under the boot HTTP root ---------------------------------------------------------


@pytest.mark.parametrize("value", ["../../etc/shadow", "/images/vmlinuz", '"images/a b"',
                                   "\"images/vmlinuz\\ninitrd /x\"", "\"images/${x}\"",
                                   "images//vmlinuz"])
def test_installer_paths_are_plain_relative_paths(small_text: str, value: str) -> None:
    text, at = edit(small_text, "kernel: images/ubuntu-24.04/vmlinuz", f"kernel: {value}",
                    mark=value)
    expect(text, "value_error", "site.install.kernel", at)


# --- URLs -------------------------------------------------------------------------------------


ISO = "iso_url: http://10.1.0.10/images/ubuntu-24.04.1-live-server-amd64.iso"


@pytest.mark.parametrize(("value", "says"), [
    ('"http://10.1.0.10/x.iso\\nboot"', "control character"),
    ('"http://10.1.0.10/x.iso autoinstall"', "white space"),
    ("ftp://10.1.0.10/x.iso", "scheme"),
    ("http:///x.iso", "no host"),
    ("\"http://10.1.0.10/x'.iso\"", "not allowed"),
    ('"http://10.1.0.10/$(reboot).iso"', "not allowed"),
    ('"http://10.1.0.10/x;reboot"', "not allowed"),
    ("http://user:pw@10.1.0.10/x.iso", "credentials"),
    ("http://10.1.0.999/x.iso", "IPv4"),
    ("http://-bad-.example/x.iso", "domain"),
    ("''", "empty URL"),  # the property test found it: a crash, not a problem, before
])
def test_urls_are_parsed(small_text: str, value: str, says: str) -> None:
    text, at = edit(small_text, ISO, f"iso_url: {value}", mark=value)
    expect(text, "value_error", "site.install.iso_url", at, says)


def test_apt_mirror_is_a_url(small_text: str) -> None:
    old = "apt: {mirror: http://10.1.0.10:3142/archive.ubuntu.com/ubuntu}"
    text, at = edit(small_text, old, 'apt: {mirror: "http://x/ubuntu\\nTypes: deb"}',
                    mark='"http')
    expect(text, "value_error", "site.apt.mirror", at, "control character")


# --- versions, time limits, fingerprints, time zones, NTP servers -----------------------------


@pytest.mark.parametrize("value", ['"22.05\\nPin-Priority: -1"', '"22.05*"', '"22.05 x"',
                                   "latest"])
def test_slurm_version_is_digits_and_dots(small_text: str, value: str) -> None:
    text, at = edit(small_text, 'version: "22.05"', f"version: {value}", mark=value)
    expect(text, "string_pattern_mismatch", "slurm.version", at, "digits and dots")


@pytest.mark.parametrize("value", ['"INFINITE\\nNodeName=x"', '"1-00:00:00 State=DOWN"',
                                   "forever", '"1:2:3:4"'])
def test_partition_time_limit_is_a_slurm_time(small_text: str, value: str) -> None:
    text, at = edit(small_text, "tbox2: {ib_switch: ib2}",
                    f"tbox2: {{ib_switch: ib2, max_time: {value}}}", mark=value)
    expect(text, "string_pattern_mismatch", "slurm.partitions.tbox2.max_time", at,
           "Slurm time limit")


@pytest.mark.parametrize("value", ["INFINITE", "UNLIMITED", "60", '"1-00:00:00"',
                                   '"12:00:00"', '"2-12"'])
def test_slurm_time_limits_that_are_valid(small_text: str, value: str) -> None:
    text, _ = edit(small_text, "tbox2: {ib_switch: ib2}",
                   f"tbox2: {{ib_switch: ib2, max_time: {value}}}")
    if value == "60":  # a YAML int is no time limit text
        assert problems_of(text)
        return
    parse(text, "inventory.yaml")


def test_master_finger_is_a_fingerprint(small_text: str) -> None:
    value = "\"ab:cd'\\nmaster: 10.6.6.6\""
    text, at = edit(small_text, "salt: {master: head-01}",
                    f"salt: {{master: head-01, master_finger: {value}}}", mark=value)
    expect(text, "string_pattern_mismatch", "site.salt.master_finger", at, "salt-key -F")


def test_timezone_is_a_zone_name(small_text: str) -> None:
    text, at = with_site(small_text, 'timezone: "UTC\\nd-i passwd/root-login boolean true"')
    expect(text, "string_pattern_mismatch", "site.timezone", at, "time zone")


@pytest.mark.parametrize("value", ['"ntp.lab.test iburst\\nallow all"', '"ntp.lab.test x"',
                                   '"10.1.0.300"', '"-ntp.lab.test"'])
def test_ntp_servers_are_host_names_or_addresses(small_text: str, value: str) -> None:
    text, at = edit(small_text, "ntp_servers: [ntp.lab.test]", f"ntp_servers: [{value}]",
                    mark=value)
    expect(text, "value_error", "site.ntp_servers[0]", at)


def test_ssh_key_with_a_second_line_is_refused(small_text: str) -> None:
    old = 'ops@lab"]'
    text, _ = edit(small_text, old, 'ops@lab\\nssh-ed25519 AAAA evil"]')
    (p,) = problems_of(text)
    assert p.path == "site.admins[0].ssh_keys" and "control character" in p.message, str(p)


# --- host and domain names --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["and", "or", "not"])
def test_a_host_is_never_a_word_of_salts_compound_matcher(small_text: str, name: str) -> None:
    text, _ = edit(small_text, "hosts: stor-[1-2]", f"hosts: {name}")
    text, at = edit(text, "  stor-1: {serial", f"  {name}: {{serial", mark=name)
    expect(text, "value_error", f"nodes.{name}", at, "compound matcher")


@pytest.mark.parametrize("value", ["lab..test", "-lab.test", "lab-.test", "lab.test-"])
def test_domain_labels_follow_rfc_1123(small_text: str, value: str) -> None:
    text, at = edit(small_text, "domain: lab.test", f"domain: {value}", mark=value)
    expect(text, "value_error", "site.domain", at, "RFC 1123")


# --- free text ---------------------------------------------------------------------------------


def test_mkv_purpose_has_no_control_characters(small_text: str) -> None:
    old = "index_path: /var/lib/mkv/data}"
    value = '"data\\n[Service]\\nExecStartPre=/bin/sh -c reboot"'
    text, at = edit(small_text, old, f"index_path: /var/lib/mkv/data, purpose: {value}}}",
                    mark=value)
    expect(text, "value_error", "mkv.arrays.data.purpose", at, "U+000A")


def test_free_text_is_bounded(small_text: str) -> None:
    value = "x" * 5000
    text, at = edit(small_text, "model: Dell Z9264F-ON", f"model: {value}", mark=value)
    p = expect(text, "string_too_long", "switches.sw1.model", at, "longer than 200")
    assert len(str(p)) < 300, str(p)


def test_image_kernel_arguments_are_single_words(small_text: str) -> None:
    image = ("  images:\n    deb:\n      type: debian-preseed\n"
             "      kernel: images/debian/linux\n      initrd: images/debian/initrd.gz\n"
             "      mirror: http://deb.debian.org/debian\n"
             "      args: [\"quiet; reboot\"]\n")
    text, at = edit(small_text, SITE_END, SITE_END + image, mark='"quiet')
    expect(text, "string_pattern_mismatch", "site.images.deb.args[0]", at, "one word")
