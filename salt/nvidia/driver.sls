{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from tplroot ~ '/names.jinja' import expand, branch with context %}
{%- set packages = expand(mapdata.packages) | load_json %}
{%- set drivers = expand(mapdata.driver_packages) | load_json %}

# the driver is held together with the kernel that base.apt holds
include:
  - base.apt

nvidia-driver-file-managed-blacklist-nouveau:
  file.managed:
    - name: {{ mapdata.modprobe_blacklist }}
    - mode: '0644'
    - contents: |
        # Managed by Salt (nvidia.driver). Do not edit.
        blacklist nouveau
        options nouveau modeset=0

nvidia-driver-cmd-run-initramfs:
  cmd.run:
    - name: {{ mapdata.initramfs_cmd }}
    - onchanges:
      - file: nvidia-driver-file-managed-blacklist-nouveau
    # update-initramfs comes with the (held) kernel
    - require:
      - sls: base.apt

{%- if not mapdata.p2p.enabled %}

# Held: the kernel (base) and the driver move together, deliberately, never by upgrade.
nvidia-driver-pkg-installed:
  pkg.installed:
    - pkgs: {{ packages | json }}
    - hold: true
    - require:
      - file: nvidia-driver-file-managed-blacklist-nouveau
      - sls: base.apt
{%- endif %}

nvidia-driver-file-managed-check-script:
  file.managed:
    - name: {{ mapdata.check_script }}
    - source: salt://{{ tplroot }}/files/fleet-nvidia-driver-check.py
    - mode: '0755'

# The held packages are the pinned branch's real driver: none transitional or empty,
# the installed driver of the branch (fails naming the package otherwise).
nvidia-driver-cmd-run-check:
  cmd.run:
    - name: >-
        {{ mapdata.check_script }} --branch {{ branch }}
        --held {{ (packages if not mapdata.p2p.enabled else expand(mapdata.p2p.userspace) | load_json) | join(' ') }}
        --driver {{ drivers | join(' ') }}
        {%- if mapdata.allow_stand_ins %} --allow-stand-ins{% endif %}
    - stateful: true
    - require:
      - file: nvidia-driver-file-managed-check-script
{%- if not mapdata.p2p.enabled %}
      - pkg: nvidia-driver-pkg-installed
{%- else %}
      - pkg: nvidia-p2p-pkg-installed-userspace
{%- endif %}

{%- if mapdata.forbidden %}

nvidia-driver-pkg-removed-fabricmanager:
  pkg.removed:
    - pkgs: {{ expand(mapdata.forbidden) }}
{%- endif %}

nvidia-driver-service-enabled-persistenced:
  service.enabled:
    - name: {{ mapdata.persistenced_service }}
{%- if not mapdata.p2p.enabled %}
    - require:
      - pkg: nvidia-driver-pkg-installed
{%- endif %}
{%- if mapdata.hardware %}
{%- set gpus = salt['pillar.get']('node:hardware:gpu:count', 1) %}

# Hardware only: load the module, start persistenced, and prove the GPUs answer.
nvidia-driver-kmod-present:
  kmod.present:
    - name: nvidia
    - persist: false
    - require:
      - service: nvidia-driver-service-enabled-persistenced

nvidia-driver-service-running-persistenced:
  service.running:
    - name: {{ mapdata.persistenced_service }}
    - require:
      - kmod: nvidia-driver-kmod-present

nvidia-driver-cmd-run-smi:
  cmd.run:
    - name: >-
        n=$(nvidia-smi -L | grep -c '^GPU ');
        if [ "$n" -ge {{ gpus }} ]; then echo "changed=no comment='$n GPUs visible'";
        else echo "$n of {{ gpus }} GPUs visible" >&2; exit 1; fi
    - stateful: true
    - require:
      - service: nvidia-driver-service-running-persistenced
{%- endif %}
