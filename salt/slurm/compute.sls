{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from tplroot ~ '/version.jinja' import version with context %}
{%- from 'lib/macros.jinja' import assert_version, verify_unit %}
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
      - sls: slurm

# the installed daemon is the pinned Slurm (lib/macros.jinja)
{{ assert_version('slurm-compute-cmd-run-version', mapdata.compute_service, version, 'slurm:version',
                  ['pkg: slurm-compute-pkg-installed']) }}

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
{%- if not mapdata.container %}
        # cgroup v2: slurmd's subtree is Slurm's to write (its job, step and task
        # cgroups; miniray's worker job adds its task cgroups there: docs/operations.md,
        # cgroup delegation). Not in a container: no delegation into it (lab.sls).
        [Service]
        Delegate=yes
{%- endif %}

slurm-compute-file-directory-spool:
  file.directory:
    - name: {{ mapdata.slurmd_spool }}
    - user: root
    - group: root
    - mode: '0755'

# the unit with its drop-in verifies before the service starts (lib/macros.jinja)
{{ verify_unit('slurm-compute-cmd-run-verify-unit', mapdata.compute_service ~ '.service',
               ['pkg: slurm-compute-pkg-installed', 'file: slurm-compute-file-managed-dropin']) }}

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
      - sls: slurm
    - watch:
      - file: slurm-compute-file-managed-defaults
      - file: slurm-compute-file-managed-dropin
      # an ID other files may name (docs/salt.md): a new munge key restarts munge, then this
      - service: slurm-munge-service-running
