{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import verify_unit %}
{#- The standby master (site.salt.standby.host; docs/salt.md, A standby master): a
    salt-master configured as the active one (provisioning.master), holding the active
    master's key and accepted minion keys, pulled by a timer over ssh with this host's own
    key. The key pair is made here and never leaves; its public half is recorded in the
    inventory (site.salt.standby.sync_key) for the active master to authorize. Until it
    is, the pull fails and says what to do. #}
{%- set s = mapdata.standby %}
{%- set sb = salt['pillar.get']('site:salt:standby', {}) %}
{%- if sb.get('host') != opts['id'] or not sb.get('master_address') %}
{{- raise('provisioning.standby: pillar site:salt:standby does not name ' ~ opts['id'] ~ ' (make render)') }}
{%- endif %}
include:
  - .master

provisioning-standby-pkg-installed:
  pkg.installed:
    - pkgs: {{ s.packages | json }}

provisioning-standby-file-directory-keys:
  file.directory:
    - name: {{ s.dir }}
    - user: root
    - group: root
    - mode: '0700'
    - makedirs: true

provisioning-standby-cmd-run-keygen:
  cmd.run:
    - name: ssh-keygen -q -t ed25519 -N '' -C fleet-standby-sync -f {{ s.dir }}/sync_ed25519
    - creates: {{ s.dir }}/sync_ed25519
    - require:
      - pkg: provisioning-standby-pkg-installed
      - file: provisioning-standby-file-directory-keys

provisioning-standby-file-managed-script:
  file.managed:
    - name: {{ s.script }}
    - source: salt://{{ tplroot }}/files/fleet-standby-sync.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0750'
    - check_cmd: /bin/sh -n
    - context:
        dir: {{ s.dir | json }}
        pki: {{ s.pki | json }}
        master: {{ sb.master_address | json }}
        sync_key: {{ sb.sync_key | json }}

provisioning-standby-file-managed-service:
  file.managed:
    - name: {{ s.unit_dir }}/fleet-standby-sync.service
    - source: salt://{{ tplroot }}/files/fleet-standby-sync.service.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - context:
        script: {{ s.script | json }}

provisioning-standby-file-managed-timer:
  file.managed:
    - name: {{ s.unit_dir }}/fleet-standby-sync.timer
    - source: salt://{{ tplroot }}/files/fleet-standby-sync.timer.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - context:
        interval_s: {{ sb.sync_interval_s | int }}

{{ verify_unit('provisioning-standby-cmd-run-verify-unit',
               s.unit_dir ~ '/fleet-standby-sync.service ' ~ s.unit_dir ~ '/fleet-standby-sync.timer',
               ['file: provisioning-standby-file-managed-script',
                'file: provisioning-standby-file-managed-service',
                'file: provisioning-standby-file-managed-timer']) }}

provisioning-standby-service-running-timer:
  service.running:
    - name: fleet-standby-sync.timer
    - enable: true
    - require:
      - cmd: provisioning-standby-cmd-run-verify-unit
      - cmd: provisioning-standby-cmd-run-keygen
    - watch:
      - file: provisioning-standby-file-managed-timer
