# The Ubuntu 24.04 lab's role parameters (lab/pillar/top.sls matches the minion's
# osfinger).
base:
  lookup:
    # a container never boots its own kernel: no headers
    kernel_packages: [linux-image-generic]
nvidia:
  lookup:
    # the site's set without linux-modules-nvidia-580-server-open-generic: a container
    # never loads the kernel's modules, and this network's Ubuntu archive lists the
    # precompiled module packages but answers 404 for their files (pool/restricted/l/)
    packages:
      - nvidia-headless-no-dkms-{branch}-server-open
      - nvidia-utils-{branch}-server
      - libnvidia-compute-{branch}-server
      - nvidia-compute-utils-{branch}-server
