{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{%- set acng = mapdata.apt_cache %}
{#- the port and the upstreams come from the inventory's apt URLs (fleet.inventory.aptcache:
    those naming this host go through the cache, on their port); the address is this
    host's provisioning address, which those URLs name #}
{%- set cache = salt['pillar.get']('provisioning:apt_cache', {}) %}
{%- set address = salt['pillar.get']('site:provisioning:address', '') %}
{%- if not cache.get('port') or not address %}
{{- raise('provisioning: pillar provisioning:apt_cache:port or site:provisioning:address is missing for ' ~ opts['id']) }}
{%- endif %}
{#- the maintenance pages (acng-report.html: expiry, imports, statistics) need this login;
    from the secrets store (`fleet secrets init`: secrets/pillar/secrets/aptcache.sls) #}
{#- (checked here, never written into a state: the file below reads it at apply time) #}
{%- if not salt['pillar.get']('secrets:apt_cache_auth', '') | regex_match('^AdminAuth: ([A-Za-z0-9_-]+:[A-Za-z0-9_-]{16,})$') %}
{%- set why = 'missing or not "AdminAuth: USER:PASSWORD" (letters, digits, _ and -; 16 or more in the password)' %}
{{- raise('provisioning: pillar secrets:apt_cache_auth is ' ~ why ~ ' for ' ~ opts['id'] ~ ': run `fleet secrets init` on the master') }}
{%- endif %}

provisioning-aptcache-pkg-installed:
  pkg.installed:
    - name: {{ acng.package }}

# acng's own parser reads the whole configuration directory with the new file in it
# (acngtool cfgdump fails on an unknown directive) before it is written: a bad one fails
# this state and the running cache keeps its old configuration (no restart: the watch
# below is skipped). check_cmd appends the new file's temporary path ($4).
{%- macro acng_check(file) -%}
{{ ('/bin/sh -c \'d=$(mktemp -d) || exit 1; cp -a "$1"/. "$d"/ && cp "$4" "$d/$2" && '
    ~ '"$3" cfgdump -c "$d" >/dev/null; r=$?; rm -rf "$d"; exit $r\' '
    ~ 'fleet-acng-check ' ~ acng.conf_dir ~ ' ' ~ file ~ ' ' ~ acng.acngtool) | json }}
{%- endmacro %}
{%- for part in ['remaps', 'conf'] %}

provisioning-aptcache-file-managed-{{ part }}:
  file.managed:
    - name: {{ acng.conf_dir }}/{{ acng[part] }}
    - source: salt://{{ tplroot }}/files/apt-cacher-ng.conf.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - check_cmd: {{ acng_check(acng[part]) }}
    - context:
        part: {{ part }}
        address: {{ address | json }}
        port: {{ cache.port | json }}
        remaps: {{ cache.get('remaps', []) | json }}
    - require:
      - pkg: provisioning-aptcache-pkg-installed
{%- endfor %}

# AdminAuth in a file of its own, readable by apt-cacher-ng only (as the package's
# security.conf); checked with the rest of the directory like the files above. Read from
# the pillar at apply time (contents_pillar, as the munge key), hidden from diffs.
provisioning-aptcache-file-managed-admin:
  file.managed:
    - name: {{ acng.conf_dir }}/{{ acng.admin }}
    - contents_pillar: secrets:apt_cache_auth
    - user: {{ acng.user }}
    - group: {{ acng.user }}
    - mode: '0600'
    - show_changes: false
    - check_cmd: {{ acng_check(acng.admin) }}
    - require:
      - pkg: provisioning-aptcache-pkg-installed

provisioning-aptcache-service-running:
  service.running:
    - name: {{ acng.service }}
    - enable: true
    - require:
      - pkg: provisioning-aptcache-pkg-installed
    - watch:
      - file: provisioning-aptcache-file-managed-remaps
      - file: provisioning-aptcache-file-managed-conf
      - file: provisioning-aptcache-file-managed-admin
