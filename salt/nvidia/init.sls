# nvidia: pinned driver branch, held; nvidia-persistenced; nouveau blacklisted;
# optional TinyBox P2P module build. No Fabric Manager (no NVSwitch).
include:
  - .driver
  - .p2p
