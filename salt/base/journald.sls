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
# values (no free text), and systemd-analyze cat-config at least proves it is readable.
base-journald-service-running:
  service.running:
    - name: systemd-journald
    - onlyif: systemd-analyze cat-config systemd/journald.conf
    - watch:
      - file: base-journald-file-managed-dropin
