# nvidia: pinned driver branch, held; nvidia-persistenced; nouveau blacklisted;
# optional TinyBox P2P module build; the burn-in's GPU tools from their pinned sources.
# No Fabric Manager (no NVSwitch).
include:
  - .driver
  - .p2p
  - .burnin
