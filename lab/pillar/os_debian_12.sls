# The Debian 12 lab's role parameters (lab/pillar/top.sls matches the minion's osfinger).
base:
  lookup:
    # a container never boots its own kernel, and builds no modules: no headers (DKMS)
    kernel_packages: [linux-image-amd64]
nvidia:
  lookup:
    # the Debian 12 set without nvidia-kernel-dkms: no module build in a container
    packages: [nvidia-smi, nvidia-persistenced, libcuda1, firmware-nvidia-gsp]
