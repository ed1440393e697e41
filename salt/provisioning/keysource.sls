{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{#- The active Salt master's side of a standby (docs/salt.md, A standby master): root
    accepts the standby's sync key (site.salt.standby.sync_key) from the standby's address
    only, for a read-only rsync of the pki directory only (rrsync -ro; `restrict` takes
    away forwarding, a terminal and the user's rc). A master that was the standby before a
    failover stops pulling: its sync timer is stopped and disabled here. #}
{%- set s = mapdata.standby %}
{%- set sb = salt['pillar.get']('site:salt:standby', {}) %}
{%- if not sb.get('address') %}
{{- raise('provisioning.keysource: pillar site:salt:standby:address is missing (make render)') }}
{%- endif %}

provisioning-keysource-pkg-installed:
  pkg.installed:
    - pkgs: {{ s.packages | json }}

provisioning-keysource-service-dead-sync:
  service.dead:
    - name: fleet-standby-sync.timer
    - enable: false

{%- if sb.get('sync_key') %}
{%-   set enc, key = sb.sync_key.split(' ') %}

provisioning-keysource-ssh_auth-present:
  ssh_auth.present:
    - name: {{ key | json }}
    - user: root
    - enc: {{ enc | json }}
    - comment: fleet-standby-sync
    - options:
      - restrict
      - {{ ('from="' ~ sb.address ~ '"') | json }}
      - {{ ('command="' ~ s.rrsync ~ ' -ro ' ~ s.pki ~ '"') | json }}
    - require:
      - pkg: provisioning-keysource-pkg-installed
{%- endif %}
