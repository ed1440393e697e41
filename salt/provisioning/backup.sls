{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import verify_unit %}
{#- The master's own safety (docs/operations.md): the audit log's directory (fleet.audit;
    fleet verbs append to it, nothing else writes it), restic, and a daily timer running
    `fleet backup` from the checkout. The backup key is the operator's: this state never
    makes it; the service is skipped, not failed, until it is there (ConditionPathExists). #}
{%- set b = mapdata.backup %}
{%- set fleet = mapdata.checkout ~ '/' ~ b.fleet %}
{%- set command = [fleet, 'backup', 'create', '-q', '-i', mapdata.checkout ~ '/inventory.yaml',
                   '--password-file', b.key] %}

provisioning-backup-file-directory-audit:
  file.directory:
    - name: {{ mapdata.audit.dir }}
    - user: root
    - group: adm
    - mode: '0750'
    - makedirs: true

provisioning-backup-file-directory-state:
  file.directory:
    - name: {{ b.state_dir }}
    - user: root
    - group: root
    - mode: '0700'
    - makedirs: true

provisioning-backup-pkg-installed:
  pkg.installed:
    - name: {{ b.package }}

provisioning-backup-file-managed-service:
  file.managed:
    - name: {{ b.unit_dir }}/fleet-backup.service
    - source: salt://{{ tplroot }}/files/fleet-backup.service.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - context:
        command: {{ command | json }}
        fleet: {{ fleet | json }}
        key: {{ b.key | json }}
        checkout: {{ mapdata.checkout | json }}
        timeout_s: {{ b.timeout_s }}

provisioning-backup-file-managed-timer:
  file.managed:
    - name: {{ b.unit_dir }}/fleet-backup.timer
    - source: salt://{{ tplroot }}/files/fleet-backup.timer.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - context:
        on_calendar: {{ b.on_calendar | json }}
        delay_s: {{ b.delay_s }}

{#- the timer only: systemd-analyze refuses a service whose ExecStart is not there yet, and
    the checkout's fleet may not be (make deps; the service's ConditionPathExists skips it) #}
{{ verify_unit('provisioning-backup-cmd-run-verify-unit',
               b.unit_dir ~ '/fleet-backup.timer',
               ['file: provisioning-backup-file-managed-service',
                'file: provisioning-backup-file-managed-timer']) }}

provisioning-backup-service-running-timer:
  service.running:
    - name: fleet-backup.timer
    - enable: true
    - require:
      - cmd: provisioning-backup-cmd-run-verify-unit
      - pkg: provisioning-backup-pkg-installed
      - file: provisioning-backup-file-directory-state
      - file: provisioning-backup-file-directory-audit
    - watch:
      - file: provisioning-backup-file-managed-timer
