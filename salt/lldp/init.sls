{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set lldp = salt['pillar.get']('node:lldp', {}) %}
{%- if not lldp.get('interfaces') or not lldp.get('system_name') %}
{{- raise('lldp: pillar node:lldp:interfaces or node:lldp:system_name is missing for ' ~ opts['id']) }}
{%- endif %}
{#- every line the file may hold (lldpcli's commands; values are inventory names) #}
{%- set word = '[a-z][a-z0-9-]*' %}
{%- set grammar = '^(|# .*|configure system hostname ' ~ word
                  ~ '|configure system interface pattern ' ~ word ~ '(,' ~ word ~ ')*)$' %}
# lldp (every node, derived by fleet.cabling.role): the OS's lldpd, on the node's Ethernet
# NICs only, announcing its hostname; `fleet cabling` reads what each NIC hears.

lldp-pkg-installed:
  pkg.installed:
    - name: {{ mapdata.package }}

# lldpcli accepts an unknown command with a warning and exit 0, and needs the running
# daemon: the check is the grammar of the two lines this file may hold, so a file that
# would configure something else never reaches the restart
lldp-file-managed-conf:
  file.managed:
    - name: {{ mapdata.conf }}
    - source: salt://{{ tplroot }}/files/fleet.conf.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: >-
        /bin/sh -c '! grep -Evq -e "$0" -- "$1"'
        '{{ grammar }}'
    - context:
        system_name: {{ lldp.system_name | json }}
        interfaces: {{ lldp.interfaces | json }}
    - require:
      - pkg: lldp-pkg-installed

lldp-service-running:
  service.running:
    - name: {{ mapdata.service }}
    - enable: true
    - watch:
      - file: lldp-file-managed-conf
