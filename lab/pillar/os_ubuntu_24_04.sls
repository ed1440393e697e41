# The Ubuntu 24.04 lab's role parameters (lab/pillar/top.sls matches the minion's
# osfinger). The nvidia role installs the site's real set: precompiled modules, no DKMS.
base:
  lookup:
    # a container never boots its own kernel: no headers
    kernel_packages: [linux-image-generic]
