{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{%- set sm = mapdata.salt_master %}
{#- the master listens on this host's provisioning (boot) address only #}
{%- set boot_if = [] %}
{%- for nic in salt['pillar.get']('node:interfaces', {}).values() if nic.boot and nic.address %}
{%-   do boot_if.append(nic.address) %}
{%- endfor %}
{%- if not boot_if %}
{{- raise('provisioning: no boot interface with an address in pillar node:interfaces for ' ~ opts['id']) }}
{%- endif %}

provisioning-master-file-managed-conf:
  file.managed:
    - name: {{ sm.conf }}
    - source: salt://{{ tplroot }}/files/master.conf.jinja
    - template: jinja
    - makedirs: true
    - mode: '0644'
    - check_cmd: /usr/bin/python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))'
    - context:
        checkout: {{ mapdata.checkout | json }}
        secrets_root: {{ mapdata.secrets_root | json }}
        interface: {{ boot_if[0] | json }}
        # sized from the inventory's node count by the renderer (docs/salt.md, Sizing)
        sizing: {{ salt['pillar.get']('site:salt:sizing:master') | json }}

provisioning-master-file-directory-secrets:
  file.directory:
    - name: {{ mapdata.checkout }}/{{ mapdata.secrets_root }}
    - user: root
    - group: root
    - mode: '0700'
    - makedirs: true

# the configuration was YAML-checked by check_cmd before it was written; run through
# `salt '*'` the restart drops this job's return from head-01 (the states still apply)
provisioning-master-service-running:
  service.running:
    - name: {{ sm.service }}
    - enable: true
    - require:
      - file: provisioning-master-file-directory-secrets
    - watch:
      - file: provisioning-master-file-managed-conf
