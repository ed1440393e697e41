# Role parameters that differ in a container (docs/lab.md). Every key says why.
fleet:
  # no GPUs, no HCA, no data disks: steps that need hardware are not rendered
  hardware: false
  # steps that need the host's kernel (global sysctls, netplan apply, setting the clock)
  # are not rendered
  container: true
slurm:
  lookup:
    # no cgroup delegation into the containers (docs/salt.md)
    proctrack: proctrack/linuxproc
    task_plugin: task/none
    # tests/lab/test_compute_slurm.py requeues a worker job twice: each requeue waits
    # this long before the job may start again (Slurm's default 120 s), and the backfill
    # scheduler that starts it runs this often (default 30 s)
    requeue_delay_s: 10
    backfill_interval_s: 5
provisioning:
  lookup:
    # no live-server ISO in the lab (2.6 GB, from outside): tests/lab/test_install_media.py
    # applies provisioning.media with a stand-in ISO and this set to true
    media:
      enabled: false
    # the lab's master runs on the host, and with it `fleet status`: the head node's
    # collector unit is written but not started (its checkout has no fleet)
    status:
      enabled: false
base:
  lookup:
    apt:
      salt_repo:
        # the lab's minions come from a wheelhouse; Salt's repository is not reachable
        enabled: false
nvidia:
  lookup:
    # the archive may list the pinned driver and not serve it (Ubuntu's NVIDIA 580, seen
    # 2026-12-04): the lab's site repository then holds named stand-ins (docs/repo.md),
    # which the driver check reports by name instead of failing
    allow_stand_ins: true
monitoring:
  lookup:
    collectors:
      # no GPUs: the GPU collector runs a stand-in nvidia-smi that
      # tests/lab/test_monitoring.py writes (until then it fails: 0 GPUs, GpuMissing)
      nvidia_smi: /usr/local/sbin/fleet-stand-in-nvidia-smi
