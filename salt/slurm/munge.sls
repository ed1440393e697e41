{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set munge = mapdata.munge %}

slurm-munge-pkg-installed:
  pkg.installed:
    - name: {{ munge.package }}

# The key comes from the secrets pillar root, which pillar/top.sls targets at Slurm
# nodes only. It never appears in a diff, a job return or the state tree.
slurm-munge-file-managed-key:
  file.managed:
    - name: {{ munge.key }}
    - contents_pillar: {{ munge.pillar_key }}
    - user: munge
    - group: munge
    - mode: '0400'
    - show_changes: false
    # munge needs at least 32 bytes of key (check_cmd gets the new file as $0)
    - check_cmd: sh -c 'test "$(wc -c < "$0")" -ge 32'
    - require:
      - pkg: slurm-munge-pkg-installed

# the key state (at least 32 bytes, from the pillar) must succeed first: without a key
# this fails with it, loudly, rather than skip munge and report success
slurm-munge-service-running:
  service.running:
    - name: {{ munge.service }}
    - enable: true
    - watch:
      - file: slurm-munge-file-managed-key
