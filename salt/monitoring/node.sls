{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import flags_check %}
{%- set ne = mapdata.node_exporter %}
{#- the node's management address (fleet.render.monitoring: its provisioning address;
    the inventory has no management network) and the exporter's fixed port #}
{%- set address = salt['pillar.get']('node:monitoring:address', '') %}
{%- set port = salt['pillar.get']('site:monitoring:ports:node_exporter', '') %}
{%- if not address or not port %}
{{- raise('monitoring.node: pillar node:monitoring:address or site:monitoring:ports:node_exporter is missing for ' ~ opts['id']) }}
{%- endif %}
{%- set args = ['--web.listen-address=' ~ address ~ ':' ~ port,
                '--collector.textfile.directory=' ~ ne.textfile_dir] %}
{%- for collector in ne.collectors %}
{%- do args.append('--collector.' ~ collector) %}
{%- endfor %}
# monitoring.node (every node): the OS's prometheus-node-exporter, answering on the
# node's management address only, with its InfiniBand collector and the textfile
# directory fleet's collectors (monitoring.gpu, monitoring.slurm) write to.

monitoring-node-pkg-installed:
  pkg.installed:
    - name: {{ ne.package }}

monitoring-node-file-directory-textfile:
  file.directory:
    - name: {{ ne.textfile_dir }}
    - user: root
    - group: root
    - mode: '0755'
    - makedirs: true
    - require:
      - pkg: monitoring-node-pkg-installed

# the exporter's flags; this exporter parses them (an unknown one fails this state, and
# the running exporter keeps its old ones) before --version exits
monitoring-node-file-managed-defaults:
  file.managed:
    - name: {{ ne.defaults }}
    - source: salt://{{ tplroot }}/files/exporter.default.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ flags_check('fleet-exporter-check', ne.binary) }}
    - context:
        what: monitoring.node
        args: {{ args | json }}
    - require:
      - pkg: monitoring-node-pkg-installed

monitoring-node-service-running:
  service.running:
    - name: {{ ne.service }}
    - enable: true
    - require:
      - file: monitoring-node-file-directory-textfile
    - watch:
      - file: monitoring-node-file-managed-defaults
