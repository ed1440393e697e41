{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import flags_check %}
{%- set prom = mapdata.prometheus %}
{%- set am = mapdata.alertmanager %}
{%- set bb = mapdata.blackbox %}
{%- set site = salt['pillar.get']('site:monitoring', {}) %}
{%- set mon = salt['pillar.get']('monitoring', {}) %}
{%- if not site.get('address') or not mon.get('targets') or not mon.get('rules') %}
{{- raise('monitoring.server: pillar site:monitoring:address, monitoring:targets or monitoring:rules is missing for ' ~ opts['id']) }}
{%- endif %}
{%- set address = site.address %}
{%- set ports = site.ports %}
{%- set prom_args = ['--config.file=' ~ prom.conf,
                     '--web.listen-address=' ~ address ~ ':' ~ ports.prometheus,
                     '--storage.tsdb.path=' ~ mon.storage_path,
                     '--storage.tsdb.retention.time=' ~ mon.retention_days ~ 'd'] %}
{%- set am_args = ['--config.file=' ~ am.conf,
                   '--web.listen-address=' ~ address ~ ':' ~ ports.alertmanager,
                   '--cluster.listen-address=',
                   '--storage.path=' ~ am.storage] %}
{%- set bb_args = ['--config.file=' ~ bb.conf,
                   '--web.listen-address=' ~ address ~ ':' ~ ports.blackbox] %}
# monitoring.server (site.monitoring.host): Prometheus, Alertmanager and the blackbox
# prober from the OS's packages, each bound to this host's management address only.
# Targets (file_sd) and alert rules come from the pillar (fleet.render.monitoring); every
# configuration is checked by its own tool before it is written, so a bad one fails this
# state and the running daemon keeps the old one.
include:
  - .node

monitoring-server-pkg-installed:
  pkg.installed:
    - pkgs:
      - {{ prom.package }}
      - {{ am.package }}
      - {{ bb.package }}

monitoring-server-file-directory-fleet:
  file.directory:
    - name: {{ prom.fleet_dir }}
    - user: root
    - group: root
    - mode: '0755'
    - require:
      - pkg: monitoring-server-pkg-installed

monitoring-server-file-directory-storage:
  file.directory:
    - name: {{ mon.storage_path }}
    - user: {{ prom.user }}
    - group: {{ prom.user }}
    - mode: '0750'
    - makedirs: true
    - require:
      - pkg: monitoring-server-pkg-installed

# scrape targets: Prometheus rereads these files by itself (no restart; on a change, and
# every scrape interval: prometheus.yml.jinja says why)
{%- for job in mon.targets %}

monitoring-server-file-serialize-targets-{{ job }}:
  file.serialize:
    - name: {{ prom.fleet_dir }}/{{ job }}.json
    - dataset_pillar: monitoring:targets:{{ job }}
    - serializer: json
    - user: root
    - group: root
    - mode: '0644'
    - require:
      - file: monitoring-server-file-directory-fleet
{%- endfor %}

monitoring-server-file-managed-rules:
  file.managed:
    - name: {{ prom.fleet_dir }}/rules.yml
    - source: salt://{{ tplroot }}/files/rules.yml.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ prom.promtool }} check rules
    - context:
        rules: {{ mon.rules | json }}
    - require:
      - file: monitoring-server-file-directory-fleet

monitoring-server-file-managed-prometheus:
  file.managed:
    - name: {{ prom.conf }}
    - source: salt://{{ tplroot }}/files/prometheus.yml.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ prom.promtool }} check config
    - context:
        interval_s: {{ site.interval_s }}
        address: {{ address | json }}
        ports: {{ ports | json }}
        fleet_dir: {{ prom.fleet_dir | json }}
        jobs: {{ mon.targets | list | json }}
    - require:
      - file: monitoring-server-file-managed-rules
{%- for job in mon.targets %}
      - file: monitoring-server-file-serialize-targets-{{ job }}
{%- endfor %}

monitoring-server-file-managed-prometheus-defaults:
  file.managed:
    - name: {{ prom.defaults }}
    - source: salt://{{ tplroot }}/files/exporter.default.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ flags_check('fleet-prometheus-check', prom.binary) }}
    - context:
        what: monitoring.server
        args: {{ prom_args | json }}
    - require:
      - pkg: monitoring-server-pkg-installed

monitoring-server-service-running-prometheus:
  service.running:
    - name: {{ prom.service }}
    - enable: true
    - require:
      - file: monitoring-server-file-directory-storage
{%- for job in mon.targets %}
      - file: monitoring-server-file-serialize-targets-{{ job }}
{%- endfor %}
    - watch:
      - file: monitoring-server-file-managed-rules
      - file: monitoring-server-file-managed-prometheus
      - file: monitoring-server-file-managed-prometheus-defaults

monitoring-server-file-managed-alertmanager:
  file.managed:
    - name: {{ am.conf }}
    - source: salt://{{ tplroot }}/files/alertmanager.yml.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ am.amtool }} check-config
    - context:
        receivers: {{ am.receivers | json }}
    - require:
      - pkg: monitoring-server-pkg-installed

# --cluster.listen-address= (empty): one Alertmanager, no gossip port on 0.0.0.0:9094
monitoring-server-file-managed-alertmanager-defaults:
  file.managed:
    - name: {{ am.defaults }}
    - source: salt://{{ tplroot }}/files/exporter.default.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ flags_check('fleet-alertmanager-check', am.binary) }}
    - context:
        what: monitoring.server
        args: {{ am_args | json }}
    - require:
      - pkg: monitoring-server-pkg-installed

monitoring-server-service-running-alertmanager:
  service.running:
    - name: {{ am.service }}
    - enable: true
    - watch:
      - file: monitoring-server-file-managed-alertmanager
      - file: monitoring-server-file-managed-alertmanager-defaults

monitoring-server-file-managed-blackbox:
  file.managed:
    - name: {{ bb.conf }}
    - source: salt://{{ tplroot }}/files/blackbox.yml
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ bb.binary }} --config.check --config.file
    - require:
      - pkg: monitoring-server-pkg-installed

monitoring-server-file-managed-blackbox-defaults:
  file.managed:
    - name: {{ bb.defaults }}
    - source: salt://{{ tplroot }}/files/exporter.default.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ flags_check('fleet-blackbox-check', bb.binary) }}
    - context:
        what: monitoring.server
        args: {{ bb_args | json }}
    - require:
      - pkg: monitoring-server-pkg-installed

monitoring-server-service-running-blackbox:
  service.running:
    - name: {{ bb.service }}
    - enable: true
    - watch:
      - file: monitoring-server-file-managed-blackbox
      - file: monitoring-server-file-managed-blackbox-defaults
