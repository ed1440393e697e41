{#- The site's Python package cache (fleet.pycache, docs/operations.md): its root on this
    host, which provisioning.pxe's nginx serves at pillar provisioning:python_cache:path
    (/pypi/). `python -m fleet.pycache add LOCK` fills it from uv.lock files, each wheel
    checked against the lock's sha256; this state keeps the directory, never its files
    (none: no compute section, no cache). #}
{%- set pycache = salt['pillar.get']('provisioning:python_cache') or {} %}
{%- if pycache %}
{%-   if not pycache.get('dir', '') | regex_match('^/[A-Za-z0-9._/-]+$') %}
{{- raise('provisioning: pillar provisioning:python_cache:dir is not an absolute path for ' ~ opts['id']) }}
{%-   endif %}

provisioning-pycache-file-directory-root:
  file.directory:
    - name: {{ pycache.dir }}
    - user: root
    - group: root
    - mode: '0755'
    - makedirs: true
{%- endif %}
