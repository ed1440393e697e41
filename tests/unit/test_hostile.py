"""Hostile strings in every free-text and typed string field of the
inventory. Each inventory either fails validation with a position at the edited field, or
renders files that their own parsers accept (dnsmasq --test, nginx -t, grub-script-check,
debconf-set-selections --checkonly, sh -n, systemd-analyze verify), with each value intact
and no added directive or command, in the rendered tree and in every node's highstate.

A parser that is missing fails the test (tools/install-host-deps.sh installs them): it is
never skipped. Only files that differ from the unedited render are parsed again (the
unedited ones are parsed once, by test_the_unedited_render_parses).
"""

from __future__ import annotations

import base64
import copy
import functools
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fleet.inventory.lifecycle import DRAIN_PREFIX
from fleet.inventory.load import parse
from fleet.problems import InventoryError, dotted
from fleet.render import render_all
from fleet.yamlsrc import load

pytestmark = pytest.mark.slow

FILE = "inventory.yaml"
ROOT = Path(__file__).resolve().parents[2]
SMALL = (ROOT / "tests" / "fixtures" / "small.yaml").read_text()
PY = sys.executable
COMPUTE = ROOT / "tests" / "fixtures" / "compute.yaml"


def _base() -> dict[str, Any]:
    """The small inventory with every field the test edits present: a Debian image on
    part-b (preseed, kernel arguments), a boot-disk match there, a purpose, a comment."""
    data: dict[str, Any] = load(SMALL, FILE).data
    data["site"]["images"] = {"deb": {
        "type": "debian-preseed", "kernel": "images/debian/linux",
        "initrd": "images/debian/initrd.gz", "mirror": "http://deb.example/debian",
        "args": ["netcfg/dhcp_timeout=90"]}}
    data["site"]["timezone"] = "Europe/Zurich"
    data["site"]["pxe_root"] = "/srv/fleet/pxe"
    data["site"]["apt"]["repo"] = "/srv/fleet/repo"  # the site package repository
    data["site"]["salt"]["repo"] = "https://packages.example/saltproject-deb"
    data["slurm"]["partitions"]["tbox1"]["max_time"] = "1-00:00:00"
    data["site"]["salt"]["master_finger"] = ":".join(["ab"] * 32)
    data["node_groups"]["part-b"]["image"] = "deb"
    data["compute"] = yaml.safe_load(COMPUTE.read_text())["compute"]  # its fields too
    data["compute"]["queue"] = "remote_v3"
    data["compute"]["codesync"]["export"] = "/srv/code"
    data["compute"]["codesync"]["fs"] = "xfs"  # the device reaches mkfs and the mount
    data["compute"]["codesync"]["device"] = "/dev/disk/by-id/nvme-code"
    data["nodes"]["gpu-03"]["boot_disk"] = {"serial": "SN-GPU3", "model": "Samsung 980"}
    data["nodes"]["stor-1"]["comment"] = "racked 2026-11"
    data["mkv"]["arrays"]["data"]["purpose"] = "training data"
    data["switches"]["ib1"]["location"] = "row1"
    # a node in maintenance: its reason is Slurm's drain reason (pillar slurm:drains)
    data["nodes"]["gpu-02"]["state"] = "maintenance"
    data["nodes"]["gpu-02"]["reason"] = "PSU swapped"
    data["site"]["monitoring"] = {"storage_path": "/var/lib/prometheus/metrics2"}
    # the backup's destination reaches restic's argv (fleet backup), never a rendered file
    data["site"]["backup"] = {"destination": {"type": "sftp", "host": "stor-1",
                                              "user": "backup", "path": "/srv/backup"}}
    return data


BASE = _base()

# Where each field lands: "pillar" (a pillar SLS leaf), "user-data" (an autoinstall leaf),
# "preseed" (shell-quoted in the preseed's partman/early_command), "kernel" (a word of
# the kernel lines), "drain" (Slurm's drain reason in pillar/slurm.sls), "svg" (a
# tooltip of pictures/racks.svg), or None (validated, never
# rendered: the BMC user, the comment).
FIELDS: dict[tuple[Any, ...], str | None] = {
    ("profiles", "storage", "vendor"): "pillar",
    ("profiles", "storage", "model"): "pillar",
    ("profiles", "head", "cpu", "model"): "pillar",
    ("profiles", "storage", "bmc", "kind"): "pillar",
    ("profiles", "storage", "bmc", "user"): None,
    ("nodes", "stor-1", "serial"): "pillar",
    ("nodes", "stor-2", "boot_disk", "serial"): "user-data",
    ("nodes", "gpu-03", "boot_disk", "serial"): "preseed",
    ("mkv", "arrays", "data", "purpose"): "pillar",
    ("nodes", "stor-1", "comment"): None,
    ("switches", "ib1", "location"): None,
    ("switches", "sw1", "model"): "svg",
    ("site", "timezone"): "pillar",
    ("site", "ntp_servers", 0): "pillar",
    ("site", "domain"): "pillar",
    ("site", "apt", "mirror"): "pillar",
    ("site", "install", "kernel"): "pillar",
    ("site", "install", "iso_url"): "pillar",
    ("site", "install", "iso_source"): "pillar",
    ("site", "salt", "repo"): "user-data",
    ("site", "salt", "master_finger"): "pillar",
    ("site", "images", "deb", "args", 0): "kernel",
    ("site", "images", "deb", "mirror"): None,
    ("site", "pxe_root"): "pillar",
    ("site", "apt", "repo"): "pillar",
    ("slurm", "version"): "pillar",
    ("slurm", "partitions", "tbox1", "max_time"): "pillar",
    ("mkv", "arrays", "data", "index_path"): "pillar",
    ("nodes", "gpu-02", "reason"): "drain",
    ("site", "monitoring", "storage_path"): "pillar",
    ("site", "backup", "destination", "host"): None,
    ("site", "backup", "destination", "user"): None,
    ("site", "backup", "destination", "path"): None,
    ("compute", "valkey", "artifact", "source"): "pillar",
    ("compute", "uv", "source"): "pillar",
    ("compute", "codesync", "export"): "pillar",
    ("compute", "codesync", "device"): "pillar",
    ("compute", "queue"): "pillar",
}
FREE_TEXT = [f for f in FIELDS if f[0] in ("profiles", "nodes", "switches")
             or f[-1] == "purpose"]

PIECES = ["\n", "\r\n", "'", '"', ";", "$(reboot)", "`reboot`", "{{ 7*7 }}", "{% raw %}",
          "#", "\x00", "..", "../", " ", "\t", "\\", "%n", "${net0/ip}", "}", "{", "&&",
          "|", "<x>", "\u2028", "\u00e9", "\x1b[2J", "=", ":", ",", "[", "]", "*", "?"]
_PLAIN = st.text(st.sampled_from("abcxyz019-./:_"), min_size=1, max_size=8)
HOSTILE = st.one_of(
    st.lists(st.one_of(st.sampled_from(PIECES), _PLAIN), min_size=1, max_size=6)
    .map("".join),
    st.integers(150, 4000).map(lambda n: "y" * n),  # very long
)


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    _get(data, path[:-1])[path[-1]] = value


# hostile text alone, or appended to (or inserted into) the field's valid value
EDIT = st.tuples(st.sampled_from(sorted(FIELDS, key=repr)), HOSTILE,
                 st.sampled_from(["replace", "append", "prepend"]))


def _apply(data: dict[str, Any], edits: list[tuple[tuple[Any, ...], str, str]]
           ) -> dict[tuple[Any, ...], str]:
    done: dict[tuple[Any, ...], str] = {}
    for path, text, how in edits:
        old = str(_get(BASE, path))
        value = {"replace": text, "append": old + text, "prepend": text + old}[how]
        _set(data, path, value)
        done[path] = value
    return done


class _Dumper(yaml.SafeDumper):
    pass


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=False, width=100)


# --- the parsers -------------------------------------------------------------------------


@functools.cache
def tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")
    if path is None:
        pytest.fail(f"{name} is not installed: this test needs it (tools/install-host-deps.sh "
                    "installs it as root); refusing to pass without the check")
    return path


def _run(args: list[str], text: str | None = None) -> None:
    r = subprocess.run(args, input=text, capture_output=True, text=True, check=False,
                       timeout=60)
    assert r.returncode == 0, f"{' '.join(args)}: rc {r.returncode}\n{r.stdout}{r.stderr}"


def _check_dnsmasq(tmp: Path, conf: str) -> None:
    (tmp / "dnsmasq.conf").write_text(conf)
    _run([tool("dnsmasq"), "--test", f"--conf-file={tmp / 'dnsmasq.conf'}"])


def _check_nginx(tmp: Path, tokens: str) -> None:
    (tmp / "tokens.conf").write_text(tokens)
    (tmp / "nginx.conf").write_text(
        f"error_log stderr;\npid {tmp}/nginx.pid;\nevents {{}}\n"
        f"http {{ access_log off; client_body_temp_path {tmp}; proxy_temp_path {tmp}; "
        f"fastcgi_temp_path {tmp}; uwsgi_temp_path {tmp}; scgi_temp_path {tmp}; "
        f"server {{ listen 127.0.0.1:1; include {tmp}/tokens.conf; }} }}\n")
    _run([tool("nginx"), "-t", "-q", "-c", str(tmp / "nginx.conf"), "-p", str(tmp)])


def _check_grub(tmp: Path, script: str) -> None:
    (tmp / "grub.cfg").write_text(script)
    _run([tool("grub-script-check"), str(tmp / "grub.cfg")])


def _check_sh(script: str) -> None:
    _run([tool("sh"), "-n", "-c", script])


def _check_debconf(tmp: Path, preseed: str) -> None:
    (tmp / "preseed.cfg").write_text(preseed)
    _run([tool("debconf-set-selections"), "--checkonly", str(tmp / "preseed.cfg")])


def _check_unit(tmp: Path, unit: str) -> None:
    # the unit's binary is not installed here; the same unit with an existing one
    text = re.sub(r"^ExecStart=\S+", "ExecStart=/bin/true", unit, flags=re.M)
    (tmp / "fleet-check.service").write_text(text)
    r = subprocess.run([tool("systemd-analyze"), "verify", "--man=no",
                        str(tmp / "fleet-check.service")], capture_output=True, text=True,
                       check=False, timeout=60)
    # systemd-analyze also reports its own environment (no running manager in a
    # container); the unit's syntax is what counts: no line of it may be refused
    bad = [ln for ln in (r.stdout + r.stderr).splitlines() if "fleet-check.service:" in ln]
    assert not bad, "\n".join(bad)


def _preseed_values(text: str) -> dict[str, str]:
    out = {}
    for ln in text.splitlines():
        if ln and not ln.startswith("#"):
            _owner, question, _type, *rest = ln.split(" ", 3)
            out[question] = rest[0] if rest else ""
    return out


def check_file(tmp: Path, path: str, text: str) -> None:
    """Run the file's own parser on it."""
    name = path.rsplit("/", 1)[-1]
    if path == "pxe/dnsmasq/dnsmasq.conf":
        _check_dnsmasq(tmp, text)
    elif path == "pxe/nginx/tokens.conf":
        _check_nginx(tmp, text)
    elif name.endswith(".cfg") and "grub" in name:
        _check_grub(tmp, text)
    elif name == "preseed.cfg":
        _check_debconf(tmp, text)
        values = _preseed_values(text)
        for question in ("partman/early_command", "preseed/late_command"):
            _check_sh(values[question])
    elif name == "user-data":
        data = yaml.safe_load(text)
        for cmd in data["autoinstall"]["late-commands"]:
            _check_sh(cmd)
    elif path.endswith((".sls", "meta-data")):
        yaml.safe_load(text)
    elif name.endswith(".svg"):
        ET.fromstring(text.encode("utf-8"))  # expat: refuses XML that is not well-formed


# --- structure: nothing added --------------------------------------------------------------


def _shape(path: str, text: str) -> Any:
    """What an edit of a value must not change: the keys of a YAML file; the number of
    lines and the directive (first word) of each line of the others."""
    if path.endswith((".sls", "user-data", "meta-data")):
        return _keys(yaml.safe_load(text))
    if path.endswith("preseed.cfg"):
        return [tuple(ln.split(" ", 3)[:3]) for ln in text.splitlines()]
    return [ln.split(" ", 1)[0].split("=", 1)[0] for ln in text.splitlines()]


def _keys(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(data, dict):
        out = [prefix]
        for k, v in data.items():
            out += _keys(v, (*prefix, k))
        return out
    if isinstance(data, list):
        out = [(*prefix, "#", len(data))]
        for i, v in enumerate(data):
            out += _keys(v, (*prefix, i))
        return out
    return [prefix]


def _leaves(data: Any) -> Iterator[Any]:
    if isinstance(data, dict):
        for v in data.values():
            yield from _leaves(v)
    elif isinstance(data, list):
        for v in data:
            yield from _leaves(v)
    else:
        yield data


@functools.cache
def baseline() -> dict[str, str]:
    return render_all(parse(_dump(BASE), FILE))


def _intact(files: dict[str, str], sink: str | None, value: str) -> None:
    if sink == "pillar":
        leaves = {x for p, t in files.items() if p.startswith("pillar/")
                  for x in _leaves(yaml.safe_load(t))}
        assert value in leaves, f"{value!r} is not in the rendered pillar"
    elif sink == "drain":  # Slurm's drain reason: the inventory's, after fleet's prefix
        drains = yaml.safe_load(files["pillar/slurm.sls"])["slurm"]["drains"]["drain"]
        assert DRAIN_PREFIX + value.strip() in drains.values(), \
            f"{value!r} is not the drain reason"
    elif sink == "user-data":
        texts = [t for p, t in files.items() if p.endswith("/user-data")]
        leaves = {x for t in texts for x in _leaves(yaml.safe_load(t))}
        words = {w for x in leaves if isinstance(x, str) for w in _words(x)}
        assert value in leaves or value in words, f"{value!r} is not in the user-data"
    elif sink == "preseed":
        early = _preseed_values(files["pxe/http/hosts/gpu-03/preseed.cfg"])[
            "partman/early_command"]
        assert shlex.quote(value) in early, f"{value!r} is not quoted in {early!r}"
    elif sink == "svg":
        root = ET.fromstring(files["pictures/racks.svg"].encode("utf-8"))
        titles = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
        assert any(value in t for t in titles), f"{value!r} is not in a tooltip of racks.svg"
    elif sink == "kernel":
        line = next(ln for ln in files["pxe/http/hosts/gpu-03/install.ipxe"].splitlines()
                    if ln.startswith("kernel "))
        assert value in line.split(" "), f"{value!r} is not a word of {line!r}"


def _words(text: str) -> list[str]:
    """The words of a shell command, and what printf/base64 late-commands write."""
    try:
        words = shlex.split(text)
    except ValueError:
        return []
    out = list(words)
    for w in words:
        out += [x.partition(": ")[2] for x in [w]] + w.split(": ")
    for m in re.finditer(r"echo ([A-Za-z0-9+/=]+) \| base64 -d", text):
        out += base64.b64decode(m.group(1)).decode().splitlines()
    return out


def check_inventory(tmp: Path, data: dict[str, Any], edited: dict[tuple[Any, ...], str]
                    ) -> dict[str, str] | None:
    """The property; the rendered files when the inventory validates."""
    text = _dump(data)
    try:
        inv = parse(text, FILE)
    except InventoryError as exc:
        last = len(text.splitlines()) + 1
        names = {dotted(p) for p in edited}
        for p in exc.problems:
            assert p.pos.file == FILE and 1 <= p.pos.line <= last and p.pos.col >= 1, str(p)
            assert str(p).startswith(f"{FILE}:{p.pos.line}:{p.pos.col}: "), str(p)
            elsewhere = p.code in ("overlap", "duplicate_serial")  # reported at the other
            assert p.path in names or elsewhere, f"{p} (edited: {sorted(names)})"
            assert len(str(p)) < 1200, "a huge value was not shortened"
        return None
    files = render_all(inv)
    base = baseline()
    assert set(files) == set(base)
    for path, body in files.items():
        if body == base[path]:
            continue
        assert _shape(path, body) == _shape(path, base[path]), f"{path}: structure changed"
        check_file(tmp, path, body)
    for field, value in edited.items():
        _intact(files, FIELDS[field], value)
    return files


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def test_the_unedited_render_parses(tmp_path: Path) -> None:
    for path, body in baseline().items():
        check_file(tmp_path, path, body)


@SETTINGS
@given(edits=st.lists(EDIT, min_size=1, max_size=3, unique_by=lambda e: e[0]))
def test_hostile_values_are_refused_or_rendered_harmless(tmp_path: Path,
                                                         edits: list[Any]) -> None:
    data = copy.deepcopy(BASE)
    files = check_inventory(tmp_path, data, _apply(data, edits))
    event("rendered" if files is not None else "refused")


@pytest.mark.parametrize("path", sorted(FIELDS, key=repr), ids=dotted)
def test_each_field_refuses_a_line_break_at_its_position(path: tuple[Any, ...]) -> None:
    data = copy.deepcopy(BASE)
    _set(data, path, str(_get(BASE, path)) + "\nx: 1")
    text = _dump(data)
    with pytest.raises(InventoryError) as info:
        parse(text, FILE)
    (p,) = info.value.problems
    assert p.path == dotted(path), str(p)
    src = load(text, FILE)
    assert (p.pos.line, p.pos.col) == (src.values[path].line, src.values[path].col), str(p)


# --- every node's highstate ----------------------------------------------------------------


@functools.cache
def _salt() -> Any:
    from fleet import saltrender
    from support import harness

    saltrender.quiet_salt_logging()
    saltrender.enable_jinja_compile_cache()
    return harness, saltrender


def highstates(tmp: Path, files: dict[str, str]) -> dict[str, Any]:
    harness, saltrender = _salt()
    root = tmp / f"hs{len(list(tmp.iterdir()))}"
    for path, body in files.items():
        if path.startswith("pillar/"):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(body)
    harness.write_secrets_root(root / "secrets")
    renderer = saltrender.Renderer(ROOT / "salt", root / "pillar", root / "secrets",
                                   tmp / "salt-cache")
    return {n: renderer.render(n) for n in renderer.nodes()}


@functools.cache
def _baseline_highstates(tmp: Path) -> dict[str, Any]:
    return highstates(tmp, baseline())


def _state_shape(res: Any) -> Any:
    return sorted((c["state"], c["__id__"], c.get("fun")) for c in res.lowstate)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.sampled_from(sorted(FREE_TEXT, key=repr)), HOSTILE,
                                st.sampled_from(["replace", "append"])),
                      min_size=2, max_size=4, unique_by=lambda e: e[0]))
def test_hostile_free_text_leaves_every_highstate_intact(tmp_path_factory: pytest.TempPathFactory,
                                                         edits: list[Any]) -> None:
    tmp = tmp_path_factory.getbasetemp() / "hostile-highstate"
    tmp.mkdir(exist_ok=True)
    data = copy.deepcopy(BASE)
    edited = _apply(data, edits)
    files = check_inventory(tmp, data, edited)
    if files is None:
        return
    base = _baseline_highstates(tmp)
    got = highstates(tmp, files)
    assert set(got) == set(base)
    purpose = edited.get(("mkv", "arrays", "data", "purpose"))
    for node, res in got.items():
        assert not res.errors, res.errors
        assert _state_shape(res) == _state_shape(base[node]), f"{node}: states changed"
        for sid, body in res.files.items():
            before = base[node].files[sid]
            if body == before:
                continue
            assert _shape(sid, body) == _shape(sid, before), f"{node} {sid}: lines added"
            if sid.startswith("mkv-master-file-managed-unit"):
                _check_unit(tmp, body)
                assert purpose is not None
                assert f"# {purpose.rstrip(chr(92))}\n" in body, body[:300]


def test_the_highstate_check_sees_a_changed_purpose(tmp_path: Path) -> None:
    """The highstate property is not vacuous: a purpose reaches the mkv unit."""
    data = copy.deepcopy(BASE)
    edited = _apply(data, [(("mkv", "arrays", "data", "purpose"), "a;b $(c) {{d}} 'e\"",
                            "replace")])
    files = check_inventory(tmp_path, data, edited)
    assert files is not None
    got = highstates(tmp_path, files)["head-01"]
    assert not got.errors, got.errors
    unit = got.files["mkv-master-file-managed-unit-data"]
    assert "# a;b $(c) {{d}} 'e\"\n" in unit
    _check_unit(tmp_path, unit)


SHELL_AND_TEMPLATE = "a;b $(reboot) `id` {{ 7*7 }} {% x %} 'q\" ../.. #c & | \\"


@pytest.mark.parametrize("path", sorted(FREE_TEXT, key=repr), ids=dotted)
def test_free_text_with_shell_and_template_syntax_is_rendered_intact(
        tmp_path: Path, path: tuple[Any, ...]) -> None:
    """Not vacuous: free text is accepted (it has no control character), rendered, parsed
    and found intact, in every file that holds it."""
    data = copy.deepcopy(BASE)
    value = SHELL_AND_TEMPLATE if path[-1] != "serial" else SHELL_AND_TEMPLATE[:60]
    assert check_inventory(tmp_path, data, _apply(data, [(path, value, "replace")]))
