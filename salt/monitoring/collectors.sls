{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set c = mapdata.collectors %}
# monitoring.collectors (included by monitoring.gpu and monitoring.slurm): the directory
# of fleet's collectors and their shared textfile writer (atomic: temporary file, rename).
include:
  - .node

monitoring-collectors-file-directory-lib:
  file.directory:
    - name: {{ c.dir }}
    - user: root
    - group: root
    - mode: '0755'

monitoring-collectors-file-managed-textfile:
  file.managed:
    - name: {{ c.dir }}/fleet_textfile.py
    - source: salt://{{ tplroot }}/files/fleet_textfile.py
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ c.python }} -c 'import ast, sys; ast.parse(open(sys.argv[1], "rb").read())'
    - require:
      - file: monitoring-collectors-file-directory-lib
