{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}

base-journald-file-managed-dropin:
  file.managed:
    - name: {{ mapdata.journald.dropin }}
    - makedirs: true
    - mode: '0644'
    - contents: |
        # Managed by Salt (base.journald). Do not edit.
        [Journal]
        Storage={{ mapdata.journald.storage }}
        SystemMaxUse={{ mapdata.journald.system_max_use }}

# journald has no configuration checker; the drop-in is built only from defaults.yaml
# values (no free text). This proves journald's own configuration lookup reads it (the
# drop-in is where journald looks, and readable): a read-only assertion that changes
# nothing, and fails the highstate, before any restart, when it does not hold.
base-journald-cmd-run-check:
  cmd.run:
    - name: >-
        systemd-analyze cat-config systemd/journald.conf
        | grep -qxF 'Storage={{ mapdata.journald.storage }}'
        && echo "changed=no comment='journald reads {{ mapdata.journald.dropin }}'"
        || { echo "journald's configuration does not include {{ mapdata.journald.dropin }}" >&2; exit 1; }
    - stateful: true
    - require:
      - file: base-journald-file-managed-dropin

base-journald-service-running:
  service.running:
    - name: systemd-journald
    - require:
      - cmd: base-journald-cmd-run-check
    - watch:
      - file: base-journald-file-managed-dropin
