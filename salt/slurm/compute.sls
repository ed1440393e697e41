{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from tplroot ~ '/version.jinja' import version with context %}
{%- set controller = salt['pillar.get']('slurm:controller:host') %}
# slurm.compute: slurmd, configless (--conf-server): the controller's rendered
# configuration is the only copy, so no node can run with a stale slurm.conf.
include:
  - slurm

slurm-compute-pkg-installed:
  pkg.installed:
    - pkgs: {{ mapdata.compute_packages | json }}
    - hold: true
    - require:
      - pkg: slurm-init-pkg-installed

# The installed daemon is the pinned Slurm: an apt pin that matches nothing is ignored
# (apt installs and holds the OS's own Slurm), so this fails the highstate, naming both.
slurm-compute-cmd-run-version:
  cmd.run:
    - name: >-
        v=$({{ mapdata.compute_service }} -V | awk '{print $NF}');
        case "$v" in {{ version }}|{{ version }}.*)
        echo "changed=no comment='{{ mapdata.compute_service }} $v is slurm:version {{ version }}'";;
        *) echo "{{ mapdata.compute_service }} ${v:-(none)} is installed, but pillar slurm:version is {{ version }}" >&2;
        exit 1;; esac
    - stateful: true
    - require:
      - pkg: slurm-compute-pkg-installed

# a local slurm.conf would silently take precedence over the controller's
slurm-compute-file-absent-local-conf:
  file.absent:
    - name: {{ mapdata.conf_dir }}/slurm.conf

slurm-compute-file-managed-defaults:
  file.managed:
    - name: {{ mapdata.slurmd_defaults }}
    - mode: '0644'
    - contents: |
        # Managed by Salt (slurm.compute). Do not edit.
        SLURMD_OPTIONS="--conf-server {{ controller }}:{{ mapdata.ctld_port }}"

# the packaged unit refuses to start without a local slurm.conf
slurm-compute-file-managed-dropin:
  file.managed:
    - name: {{ mapdata.slurmd_dropin }}
    - makedirs: true
    - mode: '0644'
    - contents: |
        # Managed by Salt (slurm.compute). Do not edit.
        [Unit]
        ConditionPathExists=

slurm-compute-file-directory-spool:
  file.directory:
    - name: {{ mapdata.slurmd_spool }}
    - user: root
    - group: root
    - mode: '0755'

# A unit that does not verify fails here, loudly (an `onlyif` on the service would skip
# it and report success). --man=no: its Documentation= man pages need not be installed.
slurm-compute-cmd-run-verify-unit:
  cmd.run:
    - name: systemd-analyze verify --man=no {{ mapdata.compute_service }}.service
    - unless: systemd-analyze verify --man=no {{ mapdata.compute_service }}.service
    - require:
      - pkg: slurm-compute-pkg-installed
      - file: slurm-compute-file-managed-dropin

slurm-compute-service-running:
  service.running:
    - name: {{ mapdata.compute_service }}
    - enable: true
    - require:
      - cmd: slurm-compute-cmd-run-version
      - cmd: slurm-compute-cmd-run-verify-unit
      - pkg: slurm-compute-pkg-installed
      - file: slurm-compute-file-absent-local-conf
      - file: slurm-compute-file-directory-spool
      - file: slurm-init-file-directory-log
    - watch:
      - file: slurm-compute-file-managed-defaults
      - file: slurm-compute-file-managed-dropin
      - service: slurm-munge-service-running
