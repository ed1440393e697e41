{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}

base-tuning-file-managed-sysctl:
  file.managed:
    - name: {{ mapdata.sysctl_file }}
    - source: salt://{{ tplroot }}/files/sysctl.conf.jinja
    - template: jinja
    - mode: '0644'
    - context:
        sysctl: {{ mapdata.sysctl | json }}

{%- if not mapdata.container %}

# (not in a container: most of these keys are global to the host's kernel)
base-tuning-cmd-run-sysctl:
  cmd.run:
    - name: sysctl -q -p {{ mapdata.sysctl_file }}
    - onchanges:
      - file: base-tuning-file-managed-sysctl
{%- endif %}

base-tuning-file-managed-limits:
  file.managed:
    - name: {{ mapdata.limits_file }}
    - source: salt://{{ tplroot }}/files/limits.conf.jinja
    - template: jinja
    - mode: '0644'
    - context:
        limits: {{ mapdata.limits | json }}
