{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from tplroot ~ '/version.jinja' import version with context %}
{%- from 'lib/macros.jinja' import assert_version %}
{%- set slurm = salt['pillar.get']('slurm', {}) %}
{%- set conf = mapdata.conf_dir %}
# slurm.controller: slurmctld with slurm.conf, gres.conf, cgroup.conf and topology.conf
# rendered from pillar slurm. Compute nodes run configless and fetch them from here.
include:
  - slurm

slurm-controller-pkg-installed:
  pkg.installed:
    - pkgs: {{ mapdata.controller_packages | json }}
    - hold: true
    - require:
      - sls: slurm

# the installed daemon is the pinned Slurm (lib/macros.jinja)
{{ assert_version('slurm-controller-cmd-run-version', mapdata.controller_service, version, 'slurm:version',
                  ['pkg: slurm-controller-pkg-installed']) }}

slurm-controller-file-directory-state:
  file.directory:
    - name: {{ mapdata.state_save }}
    - user: slurm
    - group: slurm
    - mode: '0700'
    - require:
      - pkg: slurm-controller-pkg-installed

{%- for name in ['slurm.conf', 'gres.conf', 'cgroup.conf', 'topology.conf'] %}

slurm-controller-file-managed-{{ name.split('.')[0] }}:
  file.managed:
    - name: {{ conf }}/{{ name }}
    - source: salt://{{ tplroot }}/files/{{ name }}.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ mapdata.check_script }} {{ name }}
    - context:
        slurm: {{ slurm | json }}
        params: {{ mapdata | json }}
    - require:
      - pkg: slurm-controller-pkg-installed
      - sls: slurm
{%- endfor %}

# the whole set is checked together before any restart: a bad set fails the highstate,
# loudly, and the running slurmctld keeps the old one
slurm-controller-cmd-run-check:
  cmd.run:
    - name: {{ mapdata.check_script }} --dir {{ conf }}
    - require:
      - sls: slurm
    - onchanges:
      - file: slurm-controller-file-managed-slurm
      - file: slurm-controller-file-managed-gres
      - file: slurm-controller-file-managed-cgroup
      - file: slurm-controller-file-managed-topology

slurm-controller-service-running:
  service.running:
    - name: {{ mapdata.controller_service }}
    - enable: true
    - require:
      - cmd: slurm-controller-cmd-run-version
      - cmd: slurm-controller-cmd-run-check
      - file: slurm-controller-file-directory-state
      - sls: slurm
    - watch:
      - file: slurm-controller-file-managed-slurm
      - file: slurm-controller-file-managed-gres
      - file: slurm-controller-file-managed-cgroup
      - file: slurm-controller-file-managed-topology
      # an ID other files may name (docs/salt.md): a new munge key restarts munge, then this
      - service: slurm-munge-service-running

# The inventory's lifecycle in Slurm: nodes in maintenance drained with their reason
# ("fleet-inventory: ..."), and nodes back to active resumed when (and only when) that
# prefix drained them. The script changes nothing when Slurm already agrees.
slurm-controller-file-managed-drains-script:
  file.managed:
    - name: {{ mapdata.drains_script }}
    - source: salt://{{ tplroot }}/files/fleet-slurm-drains.py
    - mode: '0755'

slurm-controller-file-serialize-drains:
  file.serialize:
    - name: {{ mapdata.drains_file }}
    - dataset: {{ slurm.get('drains', {'prefix': 'fleet-inventory: ', 'drain': {}, 'resume': []}) | json }}
    - serializer: json
    - user: root
    - group: root
    - mode: '0644'
    - require:
      - pkg: slurm-controller-pkg-installed

slurm-controller-cmd-run-drains:
  cmd.run:
    - name: {{ mapdata.drains_script }} {{ mapdata.drains_file }}
    - stateful: true
    - require:
      - service: slurm-controller-service-running
      - file: slurm-controller-file-managed-drains-script
      - file: slurm-controller-file-serialize-drains
