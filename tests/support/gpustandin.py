"""A STAND-IN nvidia-smi for the burn-in's gpu-present check where no GPU exists (the lab's
containers, the swarm's minions): the answer of a TinyBox with one of its 8 GPUs gone from
the bus and another (GPU 2) trained at PCIe x8 of its x16, in the real tool's CSV of
fleet.burnin.runner.GPU_QUERY."""

from __future__ import annotations

SEVEN_GPUS = "#!/bin/sh\n" + "".join(
    f"echo '{i}, 00000000:{0x41 + i:02X}:00.0, {8 if i == 2 else 16}, 16, 4, 4, 24564, [N/A]'\n"
    for i in range(7))
# what gpu-present says of it (the node's profile has 8 GPUs at x16)
SEVEN_GPUS_REASON = "7 GPUs of 8; GPU 2 (00000000:43:00.0) PCIe x8 of x16"
