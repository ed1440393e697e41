{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}

include:
  - .apt

base-time-timezone-system:
  timezone.system:
    - name: {{ salt['pillar.get']('site:timezone', 'UTC') | json }}
    - utc: true

base-time-file-managed-chrony:
  file.managed:
    - name: {{ mapdata.chrony.conf }}
    - source: salt://{{ tplroot }}/files/chrony.conf.jinja
    - template: jinja
    - mode: '0644'
    # chronyd -p parses the whole configuration and exits non-zero on a syntax error
    - check_cmd: {{ mapdata.chrony.binary }} -p -f
    - context:
        servers: {{ salt['pillar.get']('site:ntp_servers', []) | json }}
    - require:
      - pkg: base-apt-pkg-installed

base-time-service-running-chrony:
  service.running:
    - name: {{ mapdata.chrony.service }}
    - enable: true
    - watch:
      - file: base-time-file-managed-chrony
