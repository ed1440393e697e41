{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from tplroot ~ '/version.jinja' import version with context %}
# slurm (common to controller and compute): munge, the pinned and held Slurm version,
# the config check script. Included by slurm.controller and slurm.compute.
include:
  - .munge

slurm-init-file-managed-pin:
  file.managed:
    - name: {{ mapdata.pin_file }}
    - mode: '0644'
    - contents: |
        # Managed by Salt (slurm) from pillar slurm:version. Do not edit.
        Package: {{ mapdata.pin_packages }}
        Pin: version {{ version }}.*
        Pin-Priority: 1001

slurm-init-pkg-installed:
  pkg.installed:
    - pkgs: {{ mapdata.common_packages | json }}
    - hold: true
    - require:
      - file: slurm-init-file-managed-pin
      - service: slurm-munge-service-running

slurm-init-file-managed-check-script:
  file.managed:
    - name: {{ mapdata.check_script }}
    - source: salt://{{ tplroot }}/files/fleet-slurm-conf-check.py
    - mode: '0755'

slurm-init-file-directory-log:
  file.directory:
    - name: {{ mapdata.log_dir }}
    - user: slurm
    - group: slurm
    - mode: '0750'
    - require:
      - pkg: slurm-init-pkg-installed
