"""The reinstall steps, in order. Each is ``step(ctx) -> detail``; it raises
StepFailedError (or a BMC/command error) to fail and SkipStepError when it does not apply.
Each step is safe to run again after an interruption (``--resume`` repeats the step that
did not end)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable

from fleet.health.checks import OK, WARNING, NodeReport
from fleet.health.run import check
from fleet.inventory.compute import preemptible_partition
from fleet.inventory.head import head_reasons
from fleet.master import slurm
from fleet.master.highstate import NodeResult, Status, describe, judge
from fleet.master.runner import CommandError
from fleet.master.salt import MasterError, NoJobError
from fleet.reinstall.bootguard import BootGuard
from fleet.reinstall.context import Context, SkipStepError, StepFailedError

Step = Callable[[Context], str]


def preflight(ctx: Context) -> str:
    site, node = ctx.inventory.raw.site, ctx.node
    if head_reasons(ctx.inventory, node):  # they run the reinstall itself
        raise StepFailedError(f"{ctx.name} is the provisioning host / Salt master (roles "
                              f"{', '.join(node.roles)}): it cannot reinstall itself")
    recorded = site.salt.master_finger
    actual = ctx.keys.master_finger()
    if recorded and actual and recorded != actual:
        raise StepFailedError(f"site.salt.master_finger ({recorded}) is not this master's key "
                              f"({actual}): the installed minion would refuse this master; "
                              "record it with `fleet keys finger`")
    bmc = ctx.bmc()
    power = bmc.power_state()
    details = [f"{bmc.name} answers (power {power})"]
    if node.mkv_array is not None and ctx.inventory.raw.mkv is not None:
        array = ctx.inventory.raw.mkv.arrays[node.mkv_array]
        if array.replicas == 1:
            warning = (f"{ctx.name} holds the only replica of its part of mkv array "
                       f"'{node.mkv_array}' (replicas: 1): the install leaves the data disks "
                       "alone, but that data is unavailable until the node is back")
            ctx.warnings.append(warning)
            ctx.say(f"WARNING: {warning}")
            details.append(f"warned: array {node.mkv_array} has replicas 1")
    return "; ".join(details)


def drain(ctx: Context) -> str:
    if not ctx.is_slurm_node():
        raise SkipStepError("not a Slurm compute node")
    # the node is powered off only once Slurm has no job on it (power_off checks again)
    try:
        done = slurm.drain_and_wait(
            ctx.runner, ctx.name, f"{ctx.options.reason} ({ctx.run_id})",
            preemptible=preemptible_partition(ctx.inventory.raw, ctx.node),
            force=ctx.options.force, timeout=ctx.options.drain_timeout,
            poll=ctx.options.poll, say=lambda msg: ctx.say(f"  {msg}"))
    except slurm.DrainWaitError as exc:
        on = f"; job(s) {', '.join(exc.left)} still on it" if exc.left else ""
        raise StepFailedError(f"still {exc.state} after {ctx.options.drain_timeout:g}s{on}: "
                              "jobs are running; wait, or rerun with --force (which "
                              "cancels them)") from None
    said = [f"requeued preemptible job(s) {', '.join(done.requeued)}"] if done.requeued else []
    said += [f"--force cancelled job(s) {', '.join(done.cancelled)}"] if done.cancelled else []
    return "; ".join([*said, f"state {done.drained.state}"])


def _sinfo(ctx: Context) -> str:
    try:
        return slurm.state(ctx.runner, ctx.name)
    except Exception as exc:
        return f"unknown ({exc})"


def rotate_key(ctx: Context) -> str:
    ctx.keys.delete(ctx.name)
    _pem, public = ctx.keys.generate(ctx.name, ctx.node_dir)
    accepted = ctx.keys.accept_in_advance(ctx.name, public)
    # the public half stays here too: the install-finished callback must be signed with
    # the private half (fleet.reinstall.server)
    pub = ctx.public_key_file
    pub.write_bytes(public)
    pub.chmod(0o600)
    token = ctx.tokens.issue(ctx.options.token_ttl)
    fd = os.open(ctx.token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    finger = hashlib.sha256(public).hexdigest()[:16]
    return (f"old key deleted; new key accepted in advance ({accepted}, sha256 {finger}...); "
            f"one-time token issued, valid {ctx.options.token_ttl:g}s")


def power_off(ctx: Context) -> str:
    """Nothing is armed while the node's old OS can run: the node is powered off through
    its BMC and confirmed off (``power_state`` polled, at most ``power_timeout``) before
    the token is published; a token already issued counts for nothing until the next
    power-on. A Slurm node with jobs on it is never powered off."""
    if ctx.is_slurm_node():
        ids = slurm.jobs(ctx.runner, ctx.name)
        if ids:
            raise StepFailedError(f"job(s) {', '.join(ids)} on {ctx.name}: not powering it "
                                  "off under them (--force cancels them at the drain)")
    if ctx.tokens.status() is not None:
        ctx.tokens.power_on(None)
    bmc = ctx.bmc()
    t0 = time.monotonic()
    sent = "already off"
    if bmc.power_state() != "off":
        sent = f"power {bmc.power_off()}"
    deadline = t0 + ctx.options.power_timeout
    while (state := bmc.power_state()) != "off":
        if time.monotonic() >= deadline:
            raise StepFailedError(f"{bmc.name}: still {state} {ctx.options.power_timeout:g}s "
                                  f"after the power-off ({sent}): the install is not armed "
                                  "while the old OS may run")
        time.sleep(min(ctx.options.poll, 1.0))
    return f"{bmc.name}: {sent}; confirmed off after {time.monotonic() - t0:.0f}s"


def arm_install(ctx: Context) -> str:
    try:
        token = ctx.token_file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise StepFailedError("no install token to publish (rotate_key did not run or "
                              "its token is spent): use --abort, then start again") from None
    ctx.boot.set_mode(ctx.name, "install", token=token)
    return "boot mode install; token published for the installer (no use of it counts " \
        "before the power-on)"


def power_on(ctx: Context) -> str:
    """Still off (else someone powered it on meanwhile: its old OS may run with the
    token published), then PXE once and power on, nothing between (IPMI boot flags
    expire), and the power-on time recorded with the token: from then on the endpoint
    serves the key and the callback."""
    bmc = ctx.bmc()
    state = bmc.power_state()
    if state != "off":
        raise StepFailedError(f"{bmc.name}: the node is {state} again since its power-off: "
                              "not powering on an armed install; --resume powers it off "
                              "again")
    bmc.set_pxe_once()
    action = bmc.power_on()
    ctx.tokens.power_on(time.time())
    return f"{bmc.name}: next boot PXE (UEFI, once); power {action}; power-on recorded"


def wait_install(ctx: Context) -> str:
    deadline = time.monotonic() + ctx.options.install_timeout
    t0 = time.monotonic()
    key_seen = False
    while True:
        status = ctx.tokens.status() or {}
        early = before_power_on(status)
        if early:
            raise StepFailedError(early)
        if status.get("key_fetched") and not key_seen:
            key_seen = True
            ctx.say(f"  installer fetched its key after {time.monotonic() - t0:.0f}s")
        if status.get("done"):
            ctx.token_file.unlink(missing_ok=True)
            return (f"installer called back after {time.monotonic() - t0:.0f}s; boot mode "
                    "local" + ("" if key_seen else "; WARNING: it never fetched its key"))
        if status.get("error"):
            raise StepFailedError(claim_failure(status))
        if status.get("revoked"):
            raise StepFailedError("the install token was revoked (--abort?)")
        if time.monotonic() >= deadline:
            ctx.tokens.revoke()
            raise StepFailedError(
                f"no install callback within {ctx.options.install_timeout:g}s"
                + (" (the key was fetched)" if key_seen else " (the key was never fetched)")
                + "; token revoked")
        time.sleep(min(ctx.options.poll, 1.0))


def before_power_on(status: dict[str, object]) -> str | None:
    """Why a key fetch or callback recorded with the token cannot be the installer's:
    it came before the node was powered on for its install (None when none did)."""
    on = status.get("powered_on")
    for use, what in (("key_fetched", "the key was fetched"),
                      ("done", "the install called back")):
        at = status.get(use)
        if isinstance(at, (int, float)) and not (isinstance(on, (int, float)) and at >= on):
            return (f"{what} before the node was powered on for its install: not its "
                    "installer (its old OS, or someone at its address); the key is "
                    "withdrawn")
    return None


def claim_failure(status: dict[str, object]) -> str:
    """Why the run stops after the installer reported an error, naming the claimant."""
    error = status.get("error")
    reason = error.get("reason") if isinstance(error, dict) else error
    peer = error.get("peer") if isinstance(error, dict) else None
    claimant = status.get("key_peer")
    msg = f"the installer ({peer}) reported: {reason}"
    if status.get("key_fetched") and claimant:
        msg += f"; the node's key had been fetched by {claimant}"
    return msg + "; the key is revoked on the master"


def check_claim(ctx: Context) -> None:
    """Fail when the node's installer reported after the callback that its token or key
    had been used by someone else (the callback came from an impostor)."""
    status = ctx.tokens.status() or {}
    if status.get("error"):
        raise StepFailedError(claim_failure(status))


def converge(ctx: Context) -> str:
    """The minion's first answer (a node silent after the boot grace is power-cycled once:
    fleet.reinstall.bootguard), then the highstate; the detail names what the guard did."""
    started = time.monotonic()
    deadline = started + ctx.options.converge_timeout
    guard = BootGuard(ctx, started)
    try:
        return _converge(ctx, deadline, guard) + guard.summary()
    except StepFailedError as exc:
        raise StepFailedError(f"{exc}{guard.summary()}") from None


def _converge(ctx: Context, deadline: float, guard: BootGuard) -> str:
    check_claim(ctx)
    while (why := _answers(ctx)) is not None:
        check_claim(ctx)
        if time.monotonic() >= deadline:
            raise StepFailedError(f"the minion did not answer within "
                                  f"{ctx.options.converge_timeout:g}s (key accepted in "
                                  f"advance; is salt-minion running with the new key?); "
                                  f"last: {why}")
        guard.check()
        time.sleep(ctx.options.poll)
    # the master accepts no other key for this id: the minion holds the new one (a run
    # that fails from here on keeps it; before, the failure withdraws it)
    ctx.journal.append("note", run=ctx.run_id, what="minion-answered")
    check_claim(ctx)  # the pillar (the munge key) goes only to the node's own installer
    res = _highstate(ctx, deadline)
    if res.status is Status.LOST:
        # a minion restarting (base.minion restarts it after a config change, in the
        # background after a run) drops a job published meanwhile: a highstate is safe
        # to apply again
        ctx.say(f"  {res.why}; publishing the highstate again")
        while _answers(ctx) is not None and time.monotonic() < deadline:
            time.sleep(ctx.options.poll)
        res = _highstate(ctx, deadline)
    if res.status is Status.NO_RETURN:
        raise StepFailedError(f"highstate (job {res.jid}) did not return within "
                              f"{ctx.options.converge_timeout:g}s")
    if res.status.bad:
        raise StepFailedError(f"highstate failed: {describe(res)}")
    return f"highstate ok: {res.states} states, {res.changed} changed"


def _answers(ctx: Context) -> str | None:
    return ctx.salt.ping(ctx.name)


def _highstate(ctx: Context, deadline: float) -> NodeResult:
    try:
        got = ctx.salt.highstate([ctx.name], deadline)
    except NoJobError as exc:
        raise StepFailedError(str(exc)) from None
    return judge(ctx.name, got.returns.get(ctx.name), jid=got.jid)


def health(ctx: Context) -> str:
    """The health gate of fleet health and fleet rollout (fleet.health.run.check), asked
    until it passes or ``health_timeout`` is spent (a node that has just converged may
    still be registering slurmd or restarting its minion); on a problem the node is
    drained with the problems as the reason and the step fails once."""
    deadline = time.monotonic() + ctx.options.health_timeout
    while True:
        problems, report = _health_once(ctx)
        if not problems or time.monotonic() >= deadline:
            break
        ctx.say(f"  health: {'; '.join(problems)}; checking again")
        time.sleep(ctx.options.poll)
    for f in [] if report is None else report.findings:
        if f.status == WARNING:
            ctx.warnings.append(f.detail)
            ctx.say(f"WARNING: {f.detail}")
    if problems:
        summary = "; ".join(problems)
        message = "health check failed: " + summary
        if ctx.is_slurm_node():
            try:
                slurm.drain(ctx.runner, ctx.name,
                            f"{ctx.options.reason}: health check failed: {summary}")
            except CommandError as exc:
                message += f" (and draining it failed: {exc})"
        raise StepFailedError(message)
    assert report is not None
    return "; ".join(f.detail if f.status == OK else f"{f.status}: {f.detail}"
                     for f in report.findings) or "nothing to check"


def _health_once(ctx: Context) -> tuple[list[str], NodeReport | None]:
    """The node's problems and its report; the master not answering at all is one."""
    try:
        report = check(ctx.inventory, [ctx.name], ctx.runner, lambda _m: None)[0]
    except MasterError as exc:
        return [f"not checked: {exc}"], None
    return report.problems, report


def resume(ctx: Context) -> str:
    if not ctx.is_slurm_node():
        raise SkipStepError("not a Slurm compute node")
    slurm.resume(ctx.runner, ctx.name)
    # slurmctld may flag the node not responding ("idle*") until its next ping of slurmd
    deadline = time.monotonic() + ctx.options.health_timeout
    while True:
        state = _sinfo(ctx)
        if not state.endswith("*") or time.monotonic() >= deadline:
            break
        time.sleep(ctx.options.poll)
    if state.endswith("*"):
        raise StepFailedError(f"resumed, but slurmctld reports it not responding: {state}")
    return f"resumed; state {state}"


STEPS: list[tuple[str, Step]] = [
    ("preflight", preflight),
    ("drain", drain),
    ("rotate_key", rotate_key),
    ("power_off", power_off),
    ("arm_install", arm_install),
    ("power_on", power_on),
    ("wait_install", wait_install),
    ("converge", converge),
    ("health", health),
    ("resume", resume),
]
STEP_NAMES = [name for name, _ in STEPS]
