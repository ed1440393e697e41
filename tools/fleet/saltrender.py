"""Render the Salt highstate of fleet nodes in-process, without minions or a master.

One `Renderer` holds the Salt options and the parsed pillar files; `render(node, os)`
builds a `salt.state.HighState` for that minion id and those grains and returns its
lowstate plus every error found, each naming the node and the state or SLS:

- Salt's own render errors (Jinja/YAML, missing includes, undefined variables: Salt's
  Jinja is strict) and the structural checks of `state.show_lowstate`;
- requisites that point at no state (Salt only notices those when it applies);
- unknown or misspelt arguments (`requre:`), which Salt accepts silently;
- the config templates of `file.managed ... template: jinja`, rendered with the context
  the state would give them (Salt renders those only when it applies, too).

Pillar is assembled here from pillar/top.sls (which targets by exact minion id only) and
the SLS files it lists, each parsed once: far faster than Salt's pillar compiler per
node. `salt_pillar()` runs Salt's compiler for comparison (see the tests).
"""

from __future__ import annotations

import copy
import difflib
import inspect
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import salt.config  # type: ignore[import-untyped]
import salt.pillar  # type: ignore[import-untyped]
import salt.state  # type: ignore[import-untyped]
import salt.utils.dictupdate  # type: ignore[import-untyped]
import salt.utils.templates  # type: ignore[import-untyped]
import salt.utils.yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]

# Grains that the states read, for each OS the fleet supports.
OS_GRAINS: dict[str, dict[str, Any]] = {
    "ubuntu-24.04": {"os": "Ubuntu", "os_family": "Debian", "osfinger": "Ubuntu-24.04",
                     "osrelease": "24.04", "osmajorrelease": 24, "oscodename": "noble",
                     "kernelrelease": "6.8.0-45-generic"},
    "ubuntu-22.04": {"os": "Ubuntu", "os_family": "Debian", "osfinger": "Ubuntu-22.04",
                     "osrelease": "22.04", "osmajorrelease": 22, "oscodename": "jammy",
                     "kernelrelease": "5.15.0-119-generic"},
    "debian-12": {"os": "Debian", "os_family": "Debian", "osfinger": "Debian-12",
                  "osrelease": "12", "osmajorrelease": 12, "oscodename": "bookworm",
                  "kernelrelease": "6.1.0-25-amd64"},
}
COMMON_GRAINS: dict[str, Any] = {"kernel": "Linux", "cpuarch": "x86_64", "osarch": "amd64",
                                 "virtual": "physical", "init": "systemd", "num_cpus": 64,
                                 "ipv4": [], "ipv6": []}

REQUISITES = ("require", "watch", "onchanges", "onfail", "prereq", "listen", "use")
REQUISITE_KEYS = {f"{r}{s}" for r in REQUISITES for s in ("", "_any", "_in")}
GLOBAL_ARGS = salt.state.STATE_INTERNAL_KEYWORDS | REQUISITE_KEYS | {
    "__sls_included_from__", "check_cmd", "onlyif", "unless", "creates", "retry", "reload_modules",
    "parallel", "failhard", "order", "name", "names", "runas", "hide_output", "output_loglevel",
}


@dataclass
class Rendered:
    node: str
    os: str
    lowstate: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # state id -> rendered template
    errors: list[str] = field(default_factory=list)

    def managed(self, state_id: str) -> tuple[str, str]:
        """(path, text) that the file.managed state ``state_id`` writes: its rendered
        template, or its ``contents`` as Salt writes them (a newline added at the end
        unless ``contents_newline: false``)."""
        (chunk,) = [c for c in self.lowstate if c["__id__"] == state_id]
        assert (chunk["state"], chunk["fun"]) == ("file", "managed"), state_id
        if state_id in self.files:
            return chunk["name"], self.files[state_id]
        contents = chunk["contents"]
        text = "\n".join(contents) if isinstance(contents, list) else str(contents)
        if chunk.get("contents_newline", True) and not text.endswith("\n"):
            text += "\n"
        return chunk["name"], text


class Renderer:
    def __init__(self, file_root: Path, pillar_root: Path, secrets_root: Path, cachedir: Path):
        self.file_root = Path(file_root)
        self.pillar_roots = [Path(pillar_root), Path(secrets_root)]
        opts = salt.config.minion_config(None)
        # a plain dict: each HighState gets its own copy with its own id/grains/pillar
        self.opts: dict[str, Any] = dict(opts)
        self.opts.update({
            "file_client": "local", "local": True, "id": "render-check",
            "file_roots": {"base": [str(self.file_root)]},
            "pillar_roots": {"base": [str(p) for p in self.pillar_roots]},
            "cachedir": str(cachedir), "extension_modules": str(Path(cachedir) / "extmods"),
            "state_top": "salt://top.sls", "saltenv": None, "pillarenv": None,
            "log_level": "quiet", "grains_cache": False, "state_events": False,
        })
        self._sls_cache: dict[str, Any] = {}
        top = salt.utils.yaml.safe_load((Path(pillar_root) / "top.sls").read_text())
        self.pillar_top: dict[str, list[str]] = top["base"]

    # -- pillar -----------------------------------------------------------------------------
    def nodes(self) -> list[str]:
        return list(self.pillar_top)

    def _load_sls(self, sls: str) -> Any:
        if sls not in self._sls_cache:
            rel = sls.replace(".", "/")
            for root in self.pillar_roots:
                for cand in (root / f"{rel}.sls", root / rel / "init.sls"):
                    if cand.exists():
                        self._sls_cache[sls] = salt.utils.yaml.safe_load(cand.read_text()) or {}
                        break
                if sls in self._sls_cache:
                    break
            else:
                raise LookupError(f"pillar SLS {sls!r} not found in {self.pillar_roots}")
        return self._sls_cache[sls]

    def pillar(self, node: str) -> dict[str, Any]:
        """The pillar Salt would compile for `node` (pillar top targets exact ids only)."""
        out: dict[str, Any] = {}
        for sls in self.pillar_top[node]:
            out = salt.utils.dictupdate.merge(out, copy.deepcopy(self._load_sls(sls)),
                                              strategy="smart", merge_lists=False)
        return out

    def salt_pillar(self, node: str, os_name: str = "ubuntu-24.04") -> dict[str, Any]:
        """Salt's own pillar compiler, for comparison with `pillar()`."""
        opts = dict(self.opts, id=node, grains=self.grains(node, os_name))
        pillar = salt.pillar.get_pillar(opts, opts["grains"], node, saltenv="base")
        return dict(pillar.compile_pillar())

    @staticmethod
    def grains(node: str, os_name: str) -> dict[str, Any]:
        return {**COMMON_GRAINS, **OS_GRAINS[os_name], "id": node, "host": node,
                "nodename": node, "fqdn": node}

    # -- highstate ----------------------------------------------------------------------------
    def render(self, node: str, os_name: str = "ubuntu-24.04") -> Rendered:
        res = Rendered(node, os_name)
        opts = dict(self.opts, id=node, grains=self.grains(node, os_name))
        try:
            pillar = self.pillar(node)
        except LookupError as exc:
            res.errors.append(f"{node} [{os_name}]: pillar: {exc}")
            return res
        hs = salt.state.HighState(opts, initial_pillar=pillar)
        hs.push_active()
        try:
            self._compile(hs, res)
            if not res.errors:
                self._check_requisites(res)
                self._check_arguments(hs, res)
                self._render_templates(hs, res, pillar)
        except Exception as exc:  # a crash inside Salt is a failed render too
            res.errors.append(f"{node} [{os_name}]: {type(exc).__name__}: {exc}")
        finally:
            hs.pop_active()
            hs.destroy()
        return res

    def _compile(self, hs: salt.state.HighState, res: Rendered) -> None:
        where = f"{res.node} [{res.os}]"
        top = hs.get_top()
        errors = [f"{where}: top: {e}" for e in hs.verify_tops(top)]
        matches = hs.top_matches(top)
        if not matches:
            errors.append(f"{where}: top.sls matches no state for this node")
        high, errs = hs.render_highstate(matches)
        errors += [f"{where}: {e}" for e in errs]
        if errors:
            res.errors += errors
            return
        high, errs = hs.state.reconcile_extend(high)
        errs += hs.state.verify_high(high)
        high, req_errs = hs.state.requisite_in(high)
        errs += req_errs
        high = hs.state.apply_exclude(high)
        if not errs:
            chunks, errs = hs.state.compile_high_data(high)
            res.lowstate = chunks
            errs = [self._name_state(e, chunks) for e in errs]
        res.errors += [f"{where}: {e}" for e in errs]

    @staticmethod
    def _name_state(error: str, chunks: list[dict[str, Any]]) -> str:
        """Salt names a state by its `name` in requisite errors: add the state id."""
        m = re.search(r"in state \[(.+?)\] in SLS \[(.+?)\]", error)
        if m:
            ids = [c["__id__"] for c in chunks
                   if c.get("name") == m.group(1) and c["__sls__"] == m.group(2)]
            if ids:
                return f"state {', '.join(ids)} ({m.group(2)}): {error}"
        return error

    def _check_requisites(self, res: Rendered) -> None:
        ids = {(c["state"], c["__id__"]) for c in res.lowstate}
        names = {(c["state"], c.get("name")) for c in res.lowstate}
        any_id = {c["__id__"] for c in res.lowstate} | {c.get("name") for c in res.lowstate}
        slss = {c["__sls__"] for c in res.lowstate}
        for chunk in res.lowstate:
            for key in REQUISITE_KEYS:
                for req in chunk.get(key, []) or []:
                    if not isinstance(req, dict):
                        target = ("id", req)
                    else:
                        (target,) = req.items()
                    mod, ref = target
                    ok = (ref in slss if mod == "sls" else
                          ref in any_id if mod == "id" else
                          (mod, ref) in ids or (mod, ref) in names)
                    if not ok:
                        res.errors.append(
                            f"{res.node} [{res.os}]: state {chunk['__id__']} ({chunk['__sls__']}):"
                            f" {key} {mod}: {ref} matches no state")

    def _check_arguments(self, hs: salt.state.HighState, res: Rendered) -> None:
        close_to = sorted(REQUISITE_KEYS | {"check_cmd", "onlyif", "unless", "creates"})
        for chunk in res.lowstate:
            func = hs.state.states.get(f"{chunk['state']}.{chunk['fun']}")
            if func is None:
                res.errors.append(f"{res.node} [{res.os}]: state {chunk['__id__']} "
                                  f"({chunk['__sls__']}): no state function "
                                  f"{chunk['state']}.{chunk['fun']}")
                continue
            params = inspect.signature(func).parameters
            takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
            for key in chunk:
                if key.startswith("__") or key in GLOBAL_ARGS or key in params:
                    continue
                near = difflib.get_close_matches(key, close_to, n=1, cutoff=0.8)
                if not takes_kwargs or near:
                    hint = f" (did you mean {near[0]}?)" if near else ""
                    res.errors.append(f"{res.node} [{res.os}]: state {chunk['__id__']} "
                                      f"({chunk['__sls__']}): unknown argument {key!r}{hint}")

    def _render_templates(self, hs: salt.state.HighState, res: Rendered,
                          pillar: dict[str, Any]) -> None:
        for chunk in res.lowstate:
            if chunk["state"] != "file" or chunk.get("template") != "jinja":
                continue
            source = chunk.get("source", "")
            if not isinstance(source, str) or not source.startswith("salt://"):
                continue
            path = self.file_root / source[len("salt://"):]
            where = f"{res.node} [{res.os}]: state {chunk['__id__']} ({chunk['__sls__']})"
            if not path.is_file():
                res.errors.append(f"{where}: template {source} does not exist")
                continue
            context = dict(chunk.get("defaults") or {})
            context.update(chunk.get("context") or {})
            try:
                out = salt.utils.templates.TEMPLATE_REGISTRY["jinja"](
                    str(path), to_str=True, name=chunk["name"], source=source, saltenv="base",
                    context=context, salt=hs.state.functions, pillar=pillar,
                    grains=hs.opts["grains"], opts=hs.opts)
            except Exception as exc:
                res.errors.append(f"{where}: template {source}: {type(exc).__name__}: {exc}")
                continue
            if not out.get("result"):
                res.errors.append(f"{where}: template {source}: {out.get('data')}")
            else:
                res.files[chunk["__id__"]] = out["data"]


def enable_jinja_compile_cache() -> None:
    """Cache Jinja's source -> code compilation across Salt's per-render environments.

    Salt builds a new Jinja Environment for every SLS and template it renders, so the
    same files are parsed and compiled again for each of ~150 nodes (most of the time
    of this check). The generated code depends only on the source and the environment's
    syntax settings, which are the same for every render here; the code is still run
    in each render's own environment, with that node's pillar and grains.
    """
    import jinja2

    if getattr(jinja2.Environment.compile, "_fleet_cached", False):
        return
    original = jinja2.Environment.compile
    cache: dict[tuple[Any, ...], Any] = {}

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):  # type: ignore[no-untyped-def]
        if not isinstance(source, str):
            return original(self, source, name, filename, raw, defer_init)
        key = (source, name, filename, raw, defer_init, type(self), self.undefined,
               self.trim_blocks, self.lstrip_blocks, self.keep_trailing_newline,
               self.block_start_string, self.variable_start_string, self.comment_start_string,
               self.line_statement_prefix, self.autoescape, self.finalize is None,
               tuple(sorted(self.extensions)), tuple(sorted(self.filters)),
               tuple(sorted(self.tests)))
        if key not in cache:
            cache[key] = original(self, source, name, filename, raw, defer_init)
        return cache[key]

    compile._fleet_cached = True  # type: ignore[attr-defined]
    jinja2.Environment.compile = compile  # type: ignore[method-assign]


def quiet_salt_logging() -> None:
    """Keep Salt's log records in the logging tree (pytest's caplog), off stderr."""
    import salt._logging.impl  # type: ignore[import-untyped]

    salt._logging.impl.shutdown_temp_handler()
    logging.getLogger("salt").setLevel(logging.CRITICAL)


def render_many(renderer: Renderer, jobs: list[tuple[str, str]],
                workers: int | None = None) -> list[Rendered]:
    """Render (node, os) jobs, in `workers` forked processes (default: CPU count)."""
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    if workers <= 1 or len(jobs) < 8:
        return [renderer.render(n, o) for n, o in jobs]
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    global _WORKER_RENDERER
    _WORKER_RENDERER = renderer
    # One render in the parent first: Salt creates its cache directories (cache/roots...)
    # with os.makedirs and no exist_ok, so two fresh workers racing to create them fail.
    first = renderer.render(*jobs[0])
    rest = jobs[1:]
    chunks = [rest[i::workers] for i in range(workers)]
    with ctx.Pool(workers) as pool:
        parts = [[first], *pool.map(_render_chunk, chunks)]
    by_key = {(r.node, r.os): r for part in parts for r in part}
    return [by_key[j] for j in jobs]


_WORKER_RENDERER: Renderer | None = None


def _render_chunk(jobs: list[tuple[str, str]]) -> list[Rendered]:
    assert _WORKER_RENDERER is not None
    return [_WORKER_RENDERER.render(n, o) for n, o in jobs]
