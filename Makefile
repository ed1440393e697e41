# fleet: `make render` renders pillar/, pxe/ and pictures/ from inventory.yaml; `make test` runs
# every check CI runs. Both set up what they need (host packages, .venv) on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
INVENTORY ?= inventory.yaml

.PHONY: help deps render validate diff check check-packages docs test lint unit bench-render bench-lab clean \
	lab lab-images lab-down lab-clean lab-deps test-lab unit-beside-images test-pxe test-storage test-machines qemu-deps test-reinstall-vm test-vm \
	test-swarm bench-fanout bench-monitoring bench-status bench-bmc-facts bench-validation-cache bench-startup bench-codesync bench-uv bench-gpu-burnin page-screenshot commission-image

help:
	@echo "make render        validate $(INVENTORY) and render pillar/, pxe/ and pictures/"
	@echo "make validate      only validate the inventory"
	@echo "make diff          show what a render would change"
	@echo "make docs          regenerate docs/inventory-reference.md from the schema"
	@echo "make test          lint, render check, unit, lab, PXE and VM tests (what CI runs)"
	@echo "make check-packages  the packages the states name are real on each OS (archives, scratch apt)"
	@echo "make bench-render  render benchmarks -> docs/benchmarks.md"
	@echo "make bench-lab     lab benchmarks (cold image, 3 bring-ups) -> docs/benchmarks.md"
	@echo "make bench-fanout  one master, one real minion per node (144 at once, then more) -> docs/benchmarks.md"
	@echo "make bench-monitoring  a real Prometheus scraping the site's node targets with fleet's rules -> docs/benchmarks.md"
	@echo "make bench-bmc-facts one node's hardware facts over Redfish from a fake BMC: time and requests per read -> docs/benchmarks.md"
	@echo "make bench-validation-cache  where a one-node edit's validation goes at 10,000 nodes, and what a per-node cache would cost (prints)"
	@echo "make bench-status  fleet status of the site's 144 nodes: from the collector's cache; live and collected with real minions, fake BMCs -> docs/benchmarks.md"
	@echo "make bench-codesync the code sync of a 50,000-file tree with one change, export on XFS, and on btrfs snapshots -> docs/benchmarks.md"
	@echo "make bench-startup fleet --help, validate, render: old commit against new, one run -> docs/benchmarks.md"
	@echo "make bench-uv      uv sync --frozen --offline of a 50-package lock from the site's Python cache -> docs/benchmarks.md"
	@echo "make test-swarm    40 real minions against the master as rendered (tests/swarm)"
	@echo "make lab           the containerized lab: master + nodes, converged (docs/lab.md);"
	@echo "                   LAB_OS=ubuntu-24.04 (default) or LAB_OS=debian-12"
	@echo "make lab-down      remove the lab (containers, network, master, .lab state); keep the image"
	@echo "make lab-images    the lab's image and every node's image, nothing started (make test: beside unit)"
	@echo "make lab-clean     lab-down, and remove the cached image and wheelhouse too"
	@echo "make test-lab      the lab integration tests (bring the lab up themselves)"
	@echo "make test-pxe      PXE end to end: BIOS/UEFI QEMU guests boot from pxe/ (docs/pxe.md)"
	@echo "make test-reinstall-vm  only the reinstall VM test of test-pxe: fleet reinstall drives a QEMU guest behind a fake BMC"
	@echo "make test-vm        fleet reinstall of a QEMU guest end to end: PXE, install, key, callback, disk boot, converge (docs/pxe.md)"
	@echo "                   and two Ubuntu 24.04 guests: the NFS code export and a Slurm job killed by its cgroup v2 memory limit"
	@echo "make page-screenshot  docs/fleet-page.png: the fleet page (fixture status) in headless Chromium"
	@echo "make commission-image  the commissioning environment (kernel + initramfs, build/commission; docs/discovery.md)"
	@echo "make clean         remove .venv and caches"

$(STAMP): requirements.txt pyproject.toml tools/install-host-deps.sh
	bash tools/install-host-deps.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

deps: $(STAMP)

render: $(STAMP)
	$(BIN)/fleet render -i $(INVENTORY)

validate: $(STAMP)
	$(BIN)/fleet validate -i $(INVENTORY)

diff: $(STAMP)
	$(BIN)/fleet diff -i $(INVENTORY) || test $$? -eq 3

lint: $(STAMP)
	$(BIN)/ruff check tools tests benchmarks
	$(BIN)/python tools/funclimits.py
	$(BIN)/mypy
	$(BIN)/mypy --strict tools/funclimits.py
	sh tests/salt/lint.sh $(BIN)

check: $(STAMP)
	$(BIN)/fleet render --check -i $(INVENTORY)
	$(BIN)/python -m fleet.inventory.reference --check docs/inventory-reference.md

docs: $(STAMP)
	$(BIN)/python -m fleet.inventory.reference --write docs/inventory-reference.md

# on every core (pytest-xdist)
UNIT_JOBS ?= auto
unit: $(STAMP)
	$(BIN)/pytest -n $(UNIT_JOBS) --ignore=tests/lab --ignore=tests/pxe --ignore=tests/swarm

# every name, pin and hold of the rendered states against the real archive indexes of
# Ubuntu 24.04, 22.04 and Debian 12 (scratch apt state in .cache/packages; docs/salt.md)
check-packages: $(STAMP)
	$(BIN)/python -m fleet.packages

# Every `make test` meets the lab and the VM tier as a new machine does: its own podman
# storage and VM cache under the checkout (tools/test-storage.sh), emptied first and removed
# at the end, so no image of an earlier run hides a build that fails today (`make lab` and
# `make test-vm` alone keep the machine's, cached)
TEST_PODMAN := $(CURDIR)/.test-podman
test: export CONTAINERS_STORAGE_CONF := $(TEST_PODMAN)/storage.conf
# the VM tier's mirror cache and installed-system image too (tests/vm/vmbed.py)
test: export FLEET_VM_CACHE := $(TEST_PODMAN)/vm-cache
test: test-storage lint check unit-beside-images test-machines
	bash tools/test-storage.sh clean $(TEST_PODMAN)

# the lab's images (about 6 min cold) and the commissioning image (test-pxe's), mostly the
# archive's downloads and dpkg, are built beside the unit tier and check-packages, so that
# the two machine tiers, each about 50 min and together the critical path of make test,
# start from them (tools/beside.sh; the lab's host packages come first)
unit-beside-images: lab-deps
	bash tools/beside.sh $(TEST_PODMAN)/images.log \
	  '$(MAKE) --no-print-directory lab-images $(COMMISSION_IMAGE)/initrd.img' \
	  $(MAKE) --no-print-directory unit check-packages

lab-images: lab-deps
	$(BIN)/fleet lab images -v

test-storage:
	bash tools/test-storage.sh fresh $(TEST_PODMAN)

# the lab tier in the foreground and the QEMU tiers (PXE, then VM) and the swarm beside it:
# under TCG the QEMU tiers keep about one core busy while the lab waits on its containers, and
# the swarm is host processes on their own ports and directories (tools/beside.sh; the host
# packages of all three machine tiers are installed first, one apt at a time)
test-machines: lab-deps qemu-deps
	bash tools/beside.sh $(TEST_PODMAN)/qemu-tiers.log \
	  '$(MAKE) --no-print-directory test-pxe test-vm test-swarm' $(MAKE) --no-print-directory test-lab

bench-render: $(STAMP)
	$(BIN)/python benchmarks/bench_render.py --runs 7 --write docs/benchmarks.md

# a swarm of real salt-minion processes on this host against one salt-master configured
# as provisioning.master renders it (tests/swarm; a few minutes on 2 cores)
test-swarm: $(STAMP)
	FLEET_SWARM=1 $(BIN)/pytest tests/swarm -v --durations=5

bench-fanout: $(STAMP)
	$(BIN)/python benchmarks/bench_fanout.py --runs 3 --sizes 0.25,1,2,4 --write docs/benchmarks.md

bench-monitoring: $(STAMP)
	$(BIN)/python benchmarks/bench_monitoring.py --runs 3 --write docs/benchmarks.md

# where a one-node edit's validation goes, and what a per-node cache of it would cost
# (issue 37's measurement; prints, writes nothing)
bench-validation-cache: $(STAMP)
	mkdir -p build
	$(BIN)/python benchmarks/gen_inventory.py --nodes 10000 -o build/inv10k.yaml
	$(BIN)/python benchmarks/probe_validation_cache.py build/inv10k.yaml --runs 5

bench-bmc-facts: $(STAMP)
	$(BIN)/python benchmarks/bench_bmc_facts.py --runs 20 --write docs/benchmarks.md

bench-status: $(STAMP)
	$(BIN)/python benchmarks/bench_status.py --read-only --runs 7 --write docs/benchmarks.md
	$(BIN)/python benchmarks/bench_status.py --runs 3 --sizes 12,144 --write docs/benchmarks.md

bench-startup: $(STAMP)
	$(BIN)/python benchmarks/bench_startup.py --runs 7 --write docs/benchmarks.md

bench-uv: $(STAMP)
	$(BIN)/python benchmarks/bench_uv_sync.py --runs 5 --write docs/benchmarks.md

# on a machine with NVIDIA GPUs only (the burn-in's GPU checks; no venv needed there)
bench-gpu-burnin:
	python3 benchmarks/gpu_burnin.py --seconds 60

# the README's screenshot of the fleet page: the real inventory, the tests' fixture status
page-screenshot: $(STAMP)
	$(BIN)/python tests/page/screenshot.py docs/fleet-page.png

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis

# --- the lab (docs/lab.md) ------------------------------------------------------------
LAB_STAMP := .lab/.deps
# the lab minions' OS: ubuntu-24.04 (the site's) or debian-12
LAB_OS ?= ubuntu-24.04
export LAB_OS

$(LAB_STAMP): tools/install-lab-deps.sh
	bash tools/install-lab-deps.sh
	mkdir -p .lab && touch $@

# the commissioning environment's kernel and initramfs (fleet discover; docs/discovery.md);
# debootstrap needs root: run as root, or with sudo where it is installed
COMMISSION_IMAGE := build/commission
commission-image:
	$(if $(filter 0,$(shell id -u)),,sudo) bash commission/build-image.sh $(COMMISSION_IMAGE)

# the image test-pxe boots (tests/pxe/test_discover_pxe.py): built again only when its
# sources change (a fresh clone builds it: no image of an earlier checkout is used)
$(COMMISSION_IMAGE)/initrd.img: commission/build-image.sh commission/init commission/fleet-commission
	bash tools/install-pxe-deps.sh
	$(if $(filter 0,$(shell id -u)),,sudo) bash commission/build-image.sh $(COMMISSION_IMAGE)

lab-deps: $(STAMP) $(LAB_STAMP)

lab: lab-deps
	$(BIN)/fleet lab up -v

lab-down: $(STAMP)
	$(BIN)/fleet lab down -v

lab-clean: $(STAMP)
	$(BIN)/fleet lab down -v --all

test-lab: lab-deps
	FLEET_LAB=1 $(BIN)/pytest tests/lab -v --durations=10

bench-lab: lab-deps
	$(BIN)/python benchmarks/bench_lab.py --runs 3 --cold --write docs/benchmarks.md

# a lab that is up is reused (one it brings up goes down after)
# xfsprogs: the export on a loop-mounted XFS, as the site's compute.codesync.fs;
# btrfs-progs: job_copy snapshot's export on a loop-mounted btrfs, measured in the same run
# with CODESYNC_WHERE=local (the default: on this host, no lab; lab: the lab's containers,
# without the snapshot case) (benchmarks/bench_codesync.py)
CODESYNC_WHERE ?= local
bench-codesync: lab-deps
	bash tools/install-host-deps.sh xfsprogs btrfs-progs
	$(BIN)/python benchmarks/bench_codesync.py --runs 7 --where $(CODESYNC_WHERE) --write docs/benchmarks.md


# --- PXE end to end (docs/pxe.md) ------------------------------------------------------
qemu-deps: $(STAMP)
	bash tools/install-pxe-deps.sh
	bash tools/install-vm-deps.sh

test-pxe: $(STAMP) $(COMMISSION_IMAGE)/initrd.img
	bash tools/install-pxe-deps.sh
	FLEET_PXE=1 FLEET_COMMISSION_IMAGE=$(COMMISSION_IMAGE) $(BIN)/pytest tests/pxe -v --durations=5

# fleet reinstall against a QEMU guest behind a fake Redfish BMC, on its own
# (test-pxe runs it too). Its one CI failure (2026-11-30: no exit within 60 s of SIGINT)
# was a SIGINT inherited as ignored; fleet reinstall now handles SIGINT/SIGTERM itself.
test-reinstall-vm: $(STAMP)
	bash tools/install-pxe-deps.sh
	FLEET_PXE=1 $(BIN)/pytest tests/pxe/test_reinstall_vm.py -v --durations=5

# the whole reinstall of a QEMU guest (docs/pxe.md): PXE, the Debian installer
# with a caching proxy of deb.debian.org as its mirror (an installer stand-in in the guest
# does the part that needs .udeb files, which that proxy cannot serve), key, callback,
# reboot from disk, minion with the rotated key, converge, health (chrony against the
# bed's NTP server). Part of `make test`.
test-vm: $(STAMP)
	bash tools/install-pxe-deps.sh
	bash tools/install-vm-deps.sh
	FLEET_VM=1 $(BIN)/pytest tests/vm -v -s --durations=5
